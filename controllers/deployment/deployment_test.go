package deployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

func TestNewDeploymentCreatesReplicaSet(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "create", corev1.LastAppliedConfigAnnotation: "{}"}
	f := newFixture(t, d)
	f.mustSync()

	rss := f.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("%d replica sets, want 1", len(rss))
	}
	rs := rss[0]
	hash := controllerutil.ComputeHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash {
		t.Errorf("name %q, want web-%s", rs.Name, hash)
	}
	if *rs.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *rs.Spec.Replicas)
	}
	if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("pod-template-hash missing: labels %v template %v selector %v", rs.Labels, rs.Spec.Template.Labels, rs.Spec.Selector)
	}
	want := map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4", "kubernetes.io/change-cause": "create"}
	for k, v := range want {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if _, ok := rs.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("last-applied-configuration copied to the replica set")
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" {
		t.Errorf("controller %+v", ref)
	}
	got := f.deployment()
	if got.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision %q, want 1", got.Annotations[RevisionAnnotation])
	}
	c := getCondition(got.Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != NewReplicaSetReason || c.Status != corev1.ConditionTrue || c.Message != fmt.Sprintf("Created new replica set %q", rs.Name) {
		t.Errorf("Progressing = %+v", c)
	}
	if ev := f.events(); len(ev) != 1 || ev[0] != "Normal ScalingReplicaSet Scaled up replica set "+rs.Name+" from 0 to 3" {
		t.Errorf("events %q", ev)
	}

	// The ReplicaSet's pods come up: the rollout completes.
	f.setRSStatus(rs.Name, 3, 3)
	f.mustSync()
	st := f.deployment().Status
	if st.Replicas != 3 || st.UpdatedReplicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.UnavailableReplicas != 0 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	if c := getCondition(st, appsv1.DeploymentProgressing); c == nil || c.Reason != NewRSAvailableReason || c.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name) {
		t.Errorf("Progressing = %+v", c)
	}
	if c := getCondition(st, appsv1.DeploymentAvailable); c == nil || c.Reason != MinimumReplicasAvailable || c.Status != corev1.ConditionTrue {
		t.Errorf("Available = %+v", c)
	}
	// And a further sync writes nothing.
	f.mustSync()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("steady state wrote %v", w)
	}
}

// TestRollingUpdate rolls a template change over with several maxSurge and
// maxUnavailable settings, playing the ReplicaSet controller: a pod counted
// in a ReplicaSet's status at one step is available at the next. At every
// step the ReplicaSets together stay within spec.replicas + maxSurge and
// the available pods within spec.replicas - maxUnavailable.
func TestRollingUpdate(t *testing.T) {
	tests := []struct {
		replicas           int32
		surge, unavailable intstr.IntOrString
		wantSurge, wantMax int32 // resolved maxSurge and maxUnavailable
	}{
		{replicas: 3, surge: intstr.FromInt32(1), unavailable: intstr.FromInt32(0), wantSurge: 1, wantMax: 0},
		{replicas: 3, surge: intstr.FromInt32(0), unavailable: intstr.FromInt32(1), wantSurge: 0, wantMax: 1},
		{replicas: 4, surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"), wantSurge: 1, wantMax: 1},
		{replicas: 10, surge: intstr.FromInt32(3), unavailable: intstr.FromInt32(2), wantSurge: 3, wantMax: 2},
		{replicas: 5, surge: intstr.FromString("100%"), unavailable: intstr.FromInt32(0), wantSurge: 5, wantMax: 0},
		// Both round to 0: one may be unavailable.
		{replicas: 2, surge: intstr.FromString("1%"), unavailable: intstr.FromString("1%"), wantSurge: 1, wantMax: 0},
		{replicas: 2, surge: intstr.FromInt32(0), unavailable: intstr.FromString("1%"), wantSurge: 0, wantMax: 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d replicas surge %s unavailable %s", tc.replicas, tc.surge.String(), tc.unavailable.String()), func(t *testing.T) {
			d := rolling(tc.surge, tc.unavailable)(newDeployment(tc.replicas, "nginx:1"))
			if s, u := maxSurge(d), maxUnavailable(d); s != tc.wantSurge || u != tc.wantMax {
				t.Fatalf("maxSurge %d maxUnavailable %d, want %d and %d", s, u, tc.wantSurge, tc.wantMax)
			}
			old := ownedRS(d, "1", tc.replicas, tc.replicas, t0.Add(-time.Hour))
			d.Annotations = map[string]string{RevisionAnnotation: "1"}
			f := newFixture(t, d, old)
			f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })

			for step := 0; ; step++ {
				if step > 50 {
					t.Fatalf("rollout did not finish: %s", sizes(f.replicaSets()))
				}
				f.clock.Step(time.Second)
				f.mustSync()
				rss := f.replicaSets()
				var total, available int32
				for _, rs := range rss {
					total += *rs.Spec.Replicas
					// Pods that already existed are available now;
					// removed ones are gone.
					available += min(*rs.Spec.Replicas, rs.Status.Replicas)
				}
				if total > tc.replicas+tc.wantSurge {
					t.Fatalf("step %d: %d replicas (%s), more than %d+%d", step, total, sizes(rss), tc.replicas, tc.wantSurge)
				}
				if available < tc.replicas-tc.wantMax {
					t.Fatalf("step %d: %d available (%s), fewer than %d-%d", step, available, sizes(rss), tc.replicas, tc.wantMax)
				}
				for _, rs := range rss {
					n := *rs.Spec.Replicas
					f.setRSStatus(rs.Name, n, min(n, rs.Status.Replicas))
				}
				if c := getCondition(f.deployment().Status, appsv1.DeploymentProgressing); c != nil && c.Reason == NewRSAvailableReason {
					break
				}
			}
			rss := f.replicaSets()
			if len(rss) != 2 || *rss[0].Spec.Replicas != 0 || *rss[1].Spec.Replicas != tc.replicas {
				t.Fatalf("final replica sets %s", sizes(rss))
			}
			got := f.deployment()
			if got.Annotations[RevisionAnnotation] != "2" || rss[1].Annotations[RevisionAnnotation] != "2" {
				t.Errorf("revisions: deployment %q new rs %q", got.Annotations[RevisionAnnotation], rss[1].Annotations[RevisionAnnotation])
			}
			st := got.Status
			if st.Replicas != tc.replicas || st.UpdatedReplicas != tc.replicas || st.AvailableReplicas != tc.replicas || st.ObservedGeneration != got.Generation {
				t.Errorf("final status %+v", st)
			}
		})
	}
}

func TestRollingUpdateFirstStep(t *testing.T) {
	// 10 replicas, maxSurge 3, maxUnavailable 2: the new ReplicaSet starts
	// at 3 and the old one gives up the 2 it may lack at once; unavailable
	// new pods count against maxUnavailable until they are available.
	d := rolling(intstr.FromInt32(3), intstr.FromInt32(2))(newDeployment(10, "nginx:1"))
	old := ownedRS(d, "1", 10, 10, t0.Add(-time.Hour))
	f := newFixture(t, d, old)
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	f.mustSync()
	rss := f.replicaSets()
	if got := sizes(rss); got != "1=8,2=3" {
		t.Fatalf("after the first sync: %s, want 1=8,2=3", got)
	}
	f.setRSStatus(rss[0].Name, 8, 8)
	f.setRSStatus(rss[1].Name, 3, 0)
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=8,2=5" {
		t.Fatalf("surge room used: %s, want 1=8,2=5", got)
	}
	f.setRSStatus(rss[1].Name, 5, 0)
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=8,2=5" {
		t.Fatalf("with the new pods unavailable: %s, want 1=8,2=5", got)
	}
	f.setRSStatus(rss[1].Name, 5, 5)
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=3,2=5" {
		t.Fatalf("with the new pods available: %s, want 1=3,2=5", got)
	}
}

func TestRecreate(t *testing.T) {
	d := recreate(newDeployment(3, "nginx:1"))
	old := ownedRS(d, "1", 3, 3, t0.Add(-time.Hour))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old-pod", UID: "old-pod",
			Labels:          old.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(old, rsKind)}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	f := newFixture(t, d, old, pod)
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })

	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=0" {
		t.Fatalf("first the old ReplicaSet goes to 0 and no new one: %s", got)
	}
	// Its status still counts pods: wait.
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=0" {
		t.Fatalf("while old pods are counted: %s", got)
	}
	// Counted 0, but a pod is still running: wait.
	f.setRSStatus(old.Name, 0, 0)
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=0" {
		t.Fatalf("while an old pod runs: %s", got)
	}
	// The pod has failed: the new ReplicaSet comes, at full size.
	pod.Status.Phase = corev1.PodFailed
	if _, err := f.client.CoreV1().Pods("ns").UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=0,2=3" {
		t.Fatalf("after the old pods: %s", got)
	}
	if a := f.rs(f.replicaSets()[1].Name).Annotations; a[MaxReplicasAnnotation] != "3" {
		t.Errorf("Recreate max-replicas %q, want 3 (no surge)", a[MaxReplicasAnnotation])
	}
}

func TestPaused(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	d.Annotations = map[string]string{RevisionAnnotation: "1"}
	old := ownedRS(d, "1", 3, 3, t0.Add(-time.Hour))
	f := newFixture(t, d, old)
	f.updateDeployment(func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	})
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=3" {
		t.Fatalf("paused deployment rolled out: %s", got)
	}
	c := getCondition(f.deployment().Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != PausedDeployReason || c.Status != corev1.ConditionUnknown || c.Message != "Deployment is paused" {
		t.Errorf("Progressing = %+v", c)
	}
	// Scaling works while paused.
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	f.mustSync()
	rss := f.replicaSets()
	if got := sizes(rss); got != "1=5" {
		t.Fatalf("scaling a paused deployment: %s, want 1=5", got)
	}
	if rss[0].Annotations[DesiredReplicasAnnotation] != "5" || rss[0].Annotations[MaxReplicasAnnotation] != "7" {
		t.Errorf("annotations %v", rss[0].Annotations)
	}
	// Resumed: Unknown DeploymentResumed, then the rollout.
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	f.mustSync()
	if c := getCondition(f.deployment().Status, appsv1.DeploymentProgressing); c == nil || c.Reason != NewReplicaSetReason {
		t.Errorf("after resume Progressing = %+v", c)
	}
	// maxSurge 2 and maxUnavailable 1 of 5.
	if got := sizes(f.replicaSets()); got != "1=4,2=2" {
		t.Fatalf("after resume: %s, want 1=4,2=2", got)
	}
}

// progressingReasons records the reasons of the Progressing conditions
// written through the status subresource, in order.
func (f *fixture) progressingReasons() *[]string {
	var reasons []string
	f.client.PrependReactor("update", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			d := a.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment)
			if c := getCondition(d.Status, appsv1.DeploymentProgressing); c != nil {
				reasons = append(reasons, c.Reason)
			}
		}
		return false, nil, nil
	})
	return &reasons
}

func TestResumeRecordsResumed(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: PausedDeployReason}}
	rs := ownedRS(d, "1", 3, 3, t0.Add(-time.Hour))
	f := newFixture(t, d, rs)
	reasons := f.progressingReasons()
	f.mustSync()
	if len(*reasons) == 0 || (*reasons)[0] != ResumedDeployReason {
		t.Fatalf("Progressing reasons written %v, want DeploymentResumed first", *reasons)
	}
}

func TestProportionalScaling(t *testing.T) {
	// Mid-rollout (3 replicas, maxSurge 25% = 1): old 3, new 1. Scaling to
	// 8 (maxSurge 2, 10 allowed) spreads 6 more by size: old 3*10/4 ≈ 8,
	// new gets the remaining 1.
	d := newDeployment(3, "nginx:1")
	old := ownedRS(d, "1", 3, 3, t0.Add(-time.Hour))
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	d.Annotations = map[string]string{RevisionAnnotation: "2"}
	cur := ownedRS(d, "2", 1, 0, t0.Add(-time.Minute))
	f := newFixture(t, d, old, cur)
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](8) })
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=8,2=2" {
		t.Fatalf("scaled to %s, want 1=8,2=2", got)
	}
	for _, rs := range f.replicaSets() {
		if rs.Annotations[DesiredReplicasAnnotation] != "8" || rs.Annotations[MaxReplicasAnnotation] != "10" {
			t.Errorf("%s annotations %v", rs.Name, rs.Annotations)
		}
	}
	// And down to 0: everything goes.
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) })
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=0,2=0" {
		t.Fatalf("scaled to %s, want 1=0,2=0", got)
	}
}

func TestScaleWithOneActiveReplicaSet(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	rs := ownedRS(d, "1", 3, 3, t0.Add(-time.Hour))
	f := newFixture(t, d, rs)
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=5" {
		t.Fatalf("scaled to %s, want 1=5", got)
	}
	if ev := f.events(); len(ev) != 1 || ev[0] != "Normal ScalingReplicaSet Scaled up replica set "+rs.Name+" from 3 to 5" {
		t.Errorf("events %q", ev)
	}
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) })
	f.mustSync()
	if got := sizes(f.replicaSets()); got != "1=0" {
		t.Fatalf("scaled to %s, want 1=0", got)
	}
}

func TestRevisionHistoryCleanup(t *testing.T) {
	d := newDeployment(2, "v4")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	var objs []runtime.Object
	var names []string
	for i, img := range []string{"v1", "v2", "v3"} {
		old := d.DeepCopy()
		old.Spec.Template.Spec.Containers[0].Image = img
		rs := ownedRS(old, fmt.Sprint(i+1), 0, 0, t0.Add(time.Duration(i-10)*time.Minute))
		objs = append(objs, rs)
		names = append(names, rs.Name)
	}
	// Revision 1's controller has not seen its last change: it is kept.
	objs[0].(*appsv1.ReplicaSet).Generation = 2
	cur := ownedRS(d, "4", 2, 2, t0.Add(-time.Minute))
	d.Annotations = map[string]string{RevisionAnnotation: "4"}
	f := newFixture(t, append(objs, d, cur)...)
	// Cleanup waits for a status that says the rollout is complete.
	f.mustSync()
	if n := len(f.replicaSets()); n != 4 {
		t.Fatalf("cleaned up before the status was complete: %d replica sets", n)
	}
	f.mustSync()
	var left []string
	for _, rs := range f.replicaSets() {
		left = append(left, rs.Annotations[RevisionAnnotation])
	}
	if strings.Join(left, ",") != "1,3,4" {
		t.Fatalf("revisions left %v, want 1,3,4 (2 deleted; 1 not synced yet)", left)
	}
}

// TestRollbackAdoptsOldReplicaSet is kubectl rollout undo: the template of
// revision 1 is patched back; its ReplicaSet becomes the new one again with
// revision 3 and history "1", and takes the pods back.
func TestRollbackAdoptsOldReplicaSet(t *testing.T) {
	d := rolling(intstr.FromInt32(1), intstr.FromInt32(0))(newDeployment(3, "nginx:1"))
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "v1"}
	v1 := ownedRS(d, "1", 0, 0, t0.Add(-time.Hour))
	v1.Annotations["kubernetes.io/change-cause"] = "v1"
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	d.Annotations = map[string]string{RevisionAnnotation: "2", "kubernetes.io/change-cause": "v2"}
	v2 := ownedRS(d, "2", 3, 3, t0.Add(-time.Minute))
	f := newFixture(t, d, v1, v2)

	// What kubectl does: template and annotations of revision 1.
	f.updateDeployment(func(d *appsv1.Deployment) {
		d.Spec.Template = *v1.Spec.Template.DeepCopy()
		delete(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		d.Annotations["kubernetes.io/change-cause"] = "v1"
	})
	for range 10 {
		f.mustSync()
		for _, rs := range f.replicaSets() {
			n := *rs.Spec.Replicas
			f.setRSStatus(rs.Name, n, min(n, rs.Status.Replicas))
		}
	}
	rss := f.replicaSets()
	if len(rss) != 2 {
		t.Fatalf("%d replica sets, want the two old ones", len(rss))
	}
	back := f.rs(v1.Name)
	if back.Annotations[RevisionAnnotation] != "3" || back.Annotations[RevisionHistoryAnnotation] != "1" || *back.Spec.Replicas != 3 {
		t.Errorf("rolled-back replica set: replicas %d annotations %v", *back.Spec.Replicas, back.Annotations)
	}
	if n := *f.rs(v2.Name).Spec.Replicas; n != 0 {
		t.Errorf("revision 2 still has %d replicas", n)
	}
	got := f.deployment()
	if got.Annotations[RevisionAnnotation] != "3" || got.Annotations["kubernetes.io/change-cause"] != "v1" {
		t.Errorf("deployment annotations %v", got.Annotations)
	}
	if c := getCondition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != NewRSAvailableReason {
		t.Errorf("Progressing = %+v", c)
	}
}

func TestDeprecatedRollbackTo(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	v1 := ownedRS(d, "1", 0, 0, t0.Add(-time.Hour))
	v1.Annotations["kubernetes.io/change-cause"] = "first"
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	d.Annotations = map[string]string{RevisionAnnotation: "2", appsv1.DeprecatedRollbackTo: "0"}
	v2 := ownedRS(d, "2", 3, 3, t0.Add(-time.Minute))
	f := newFixture(t, d, v1, v2)
	f.mustSync()
	got := f.deployment()
	if got.Spec.Template.Spec.Containers[0].Image != "nginx:1" {
		t.Errorf("template image %q, want nginx:1", got.Spec.Template.Spec.Containers[0].Image)
	}
	if _, ok := got.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Error("pod-template-hash copied into the deployment template")
	}
	if _, ok := got.Annotations[appsv1.DeprecatedRollbackTo]; ok || got.Annotations["kubernetes.io/change-cause"] != "first" || got.Annotations[RevisionAnnotation] != "2" {
		t.Errorf("annotations %v", got.Annotations)
	}
	found := false
	for _, e := range f.events() {
		if e == `Normal DeploymentRollback Rolled back deployment "web" to revision 1` {
			found = true
		}
	}
	if !found {
		t.Error("no DeploymentRollback event")
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	rs := ownedRS(d, "1", 3, 1, t0.Add(-time.Hour))
	d.Annotations = map[string]string{RevisionAnnotation: "1"}
	last := metav1.NewTime(t0.Add(-9 * time.Minute))
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 2,
		TerminatingReplicas: ptr.To[int32](0),
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: MinimumReplicasUnavailable, Message: "Deployment does not have minimum availability.", LastUpdateTime: last, LastTransitionTime: last},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: ReplicaSetUpdatedReason, Message: "x", LastUpdateTime: last, LastTransitionTime: last},
		},
	}
	f := newFixture(t, d, rs)
	// No progress, a minute before the deadline: nothing written, a check
	// is queued for the deadline.
	f.mustSync()
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("wrote %v before the deadline", w)
	}
	f.clock.Step(time.Minute + time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for f.c.queue.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if f.c.queue.Len() != 1 {
		t.Fatal("no progress check queued at the deadline")
	}
	f.clock.Step(time.Second)
	f.mustSync()
	c := getCondition(f.deployment().Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != TimedOutReason || c.Status != corev1.ConditionFalse || c.Message != fmt.Sprintf("ReplicaSet %q has timed out progressing.", rs.Name) {
		t.Fatalf("Progressing = %+v", c)
	}
	if a := getCondition(f.deployment().Status, appsv1.DeploymentAvailable); a == nil || a.Reason != MinimumReplicasUnavailable {
		t.Errorf("Available = %+v", a)
	}
	// Progress after the timeout makes it progress again.
	f.setRSStatus(rs.Name, 3, 2)
	f.mustSync()
	if c := getCondition(f.deployment().Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReplicaSetUpdatedReason || c.Status != corev1.ConditionTrue {
		t.Fatalf("after progress Progressing = %+v", c)
	}
}

func TestFoundNewReplicaSet(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	rs := ownedRS(d, "1", 3, 0, t0.Add(-time.Hour))
	f := newFixture(t, d, rs)
	reasons := f.progressingReasons()
	f.mustSync()
	// Found first; the status pass then sees the pods as progress.
	if got := strings.Join(*reasons, ","); got != FoundNewRSReason+","+ReplicaSetUpdatedReason {
		t.Fatalf("Progressing reasons written %s", got)
	}
	if f.deployment().Annotations[RevisionAnnotation] != "1" {
		t.Errorf("revision %q", f.deployment().Annotations[RevisionAnnotation])
	}
}

func TestReplicaFailureCopied(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	d.Annotations = map[string]string{RevisionAnnotation: "1"}
	rs := ownedRS(d, "1", 3, 0, t0.Add(-time.Hour))
	rs.Status.Replicas = 0
	rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}
	f := newFixture(t, d, rs)
	f.mustSync()
	c := getCondition(f.deployment().Status, appsv1.DeploymentReplicaFailure)
	if c == nil || c.Reason != "FailedCreate" || c.Message != "quota" {
		t.Fatalf("ReplicaFailure = %+v", c)
	}
}

func TestAdoptsAndReleasesReplicaSets(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	orphan := ownedRS(d, "1", 3, 3, t0.Add(-time.Hour))
	orphan.OwnerReferences = nil
	stray := ownedRS(d, "", 0, 0, t0.Add(-2*time.Hour))
	stray.Name, stray.UID = "stray", "stray-uid"
	stray.Labels = map[string]string{"app": "other"}
	f := newFixture(t, d, orphan, stray)
	f.mustSync()
	if ref := metav1.GetControllerOf(f.rs(orphan.Name)); ref == nil || ref.UID != d.UID {
		t.Errorf("orphan not adopted: %+v", f.rs(orphan.Name).OwnerReferences)
	}
	if refs := f.rs("stray").OwnerReferences; len(refs) != 0 {
		t.Errorf("mismatched replica set not released: %+v", refs)
	}
	if len(f.replicaSets()) != 2 {
		t.Errorf("a new replica set was created beside the adopted one")
	}
}

func TestHashCollision(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	hash := controllerutil.ComputeHash(&d.Spec.Template, nil)
	squatter := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + hash, UID: "squatter", Labels: map[string]string{"other": "x"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"other": "x"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"other": "x"}}}},
	}
	f := newFixture(t, d, squatter)
	if err := f.sync(); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("sync error %v, want AlreadyExists", err)
	}
	if cc := f.deployment().Status.CollisionCount; cc == nil || *cc != 1 {
		t.Fatalf("collisionCount %v, want 1", cc)
	}
	f.mustSync()
	want := "web-" + controllerutil.ComputeHash(&d.Spec.Template, ptr.To[int32](1))
	if _, err := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), want, metav1.GetOptions{}); err != nil {
		t.Fatalf("replica set %s after the collision: %v", want, err)
	}
}

func TestCreateFailureSetsCondition(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	f := newFixture(t, d)
	f.client.PrependReactor("create", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "", errors.New("quota"))
	})
	if err := f.sync(); err == nil {
		t.Fatal("no error")
	}
	c := getCondition(f.deployment().Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != FailedRSCreateReason || c.Status != corev1.ConditionFalse {
		t.Fatalf("Progressing = %+v", c)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ReplicaSetCreateError Failed to create new replica set") {
		t.Errorf("events %q", ev)
	}
}

func TestSelectingAll(t *testing.T) {
	d := newDeployment(3, "nginx:1")
	d.Spec.Selector = &metav1.LabelSelector{}
	d.Generation = 2
	f := newFixture(t, d)
	f.mustSync()
	if f.deployment().Status.ObservedGeneration != 2 {
		t.Error("observedGeneration not updated")
	}
	if len(f.replicaSets()) != 0 {
		t.Error("replica set created for an empty selector")
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning SelectingAll") {
		t.Errorf("events %q", ev)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{}
	c.SetDefaults()
	if c.ConcurrentSyncs != DefaultConcurrentSyncs || c.Validate() != nil {
		t.Errorf("defaults %+v invalid", c)
	}
	c.ConcurrentSyncs = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--concurrent-deployment-syncs") {
		t.Errorf("Validate = %v", err)
	}
}
