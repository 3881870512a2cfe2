package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	c        *Controller
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	factory  informers.SharedInformerFactory
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	rec := record.NewFakeRecorder(100)
	c, err := New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *appsv1.ReplicaSet:
			err = factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Pod names from generateName, as the apiserver would.
	var n atomic.Int32
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, n.Add(1))
		}
		return false, nil, nil
	})
	return &fixture{t: t, client: client, c: c, clock: clk, recorder: rec, factory: factory}
}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1},
	}
}

type podOpt func(*corev1.Pod)

func newPod(name string, rs *appsv1.ReplicaSet, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name), ResourceVersion: "1",
			Labels:            map[string]string{"app": rs.Name, "tier": "web"},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*controllerutil.NewControllerRef(rs, controllerKind)},
		},
		Spec:   corev1.PodSpec{NodeName: "node1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func orphan(p *corev1.Pod)     { p.OwnerReferences = nil }
func unassigned(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status.Phase = corev1.PodPending }
func onNode(n string) podOpt   { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func readyAt(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)}}
	}
}
func ready(p *corev1.Pod) { readyAt(t0.Add(-time.Hour))(p) }
func withLabels(l map[string]string) podOpt {
	return func(p *corev1.Pod) { p.Labels = l }
}
func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

// actions returns "verb resource[/subresource] [name]" for each write.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		switch a := a.(type) {
		case clienttesting.DeleteAction:
			s += " " + a.GetName()
		case clienttesting.PatchAction:
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (f *fixture) statusUpdate() *appsv1.ReplicaSet {
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			return a.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		}
	}
	return nil
}

func TestSync(t *testing.T) {
	type want struct {
		writes    []string
		err       bool
		satisfied bool
		status    *appsv1.ReplicaSetStatus // compared without conditions
		condition string                   // reason of ReplicaFailure, "" for none
	}
	rs3 := newRS("web", 3)
	tests := []struct {
		name    string
		rs      *appsv1.ReplicaSet
		pods    []*corev1.Pod
		prepare func(f *fixture)
		want    want
	}{
		{
			name: "scale up from zero",
			rs:   rs3,
			// terminatingReplicas goes from unset to 0.
			want: want{writes: []string{"create pods", "create pods", "create pods", "update replicasets/status"}},
		},
		{
			name: "steady state writes nothing",
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("web", 2)
				rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)}
				return rs
			}(),
			pods: []*corev1.Pod{newPod("a", rs3, ready), newPod("b", rs3, ready)},
			want: want{satisfied: true},
		},
		{
			name: "status counts labels, readiness and terminating pods",
			rs:   newRS("web", 3),
			pods: []*corev1.Pod{
				newPod("a", rs3, ready),
				newPod("b", rs3, withLabels(map[string]string{"app": "web"})),
				newPod("c", rs3, ready),
				newPod("gone", rs3, deleting),
				newPod("done", rs3, phase(corev1.PodSucceeded)),
			},
			want: want{
				writes:    []string{"update replicasets/status"},
				satisfied: true,
				status:    &appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](1)},
			},
		},
		{
			name: "scale down deletes by rank",
			rs:   newRS("web", 2),
			pods: []*corev1.Pod{
				newPod("running-ready", rs3, ready),
				newPod("pending", rs3, unassigned),
				newPod("running", rs3),
				newPod("running-ready-2", rs3, ready),
			},
			want: want{
				writes: []string{"delete pods pending", "delete pods running", "update replicasets/status"},
				status: &appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 4, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
			},
		},
		{
			name: "scale down prefers doubled-up nodes, then deletion cost",
			rs:   newRS("web", 2),
			pods: []*corev1.Pod{
				newPod("alone", rs3, ready, onNode("n1")),
				newPod("shared-1", rs3, ready, onNode("n2")),
				newPod("shared-2", rs3, ready, onNode("n2"), func(p *corev1.Pod) {
					p.Annotations = map[string]string{controllerutil.PodDeletionCostAnnotation: "10"}
				}),
				newPod("cheap", rs3, ready, onNode("n3"), func(p *corev1.Pod) {
					p.Annotations = map[string]string{controllerutil.PodDeletionCostAnnotation: "-1"}
				}),
			},
			want: want{writes: []string{"delete pods cheap", "delete pods shared-1", "update replicasets/status"}},
		},
		{
			name: "adopts matching orphans, releases mismatched pods",
			rs:   newRS("web", 2),
			pods: []*corev1.Pod{
				newPod("orphan", rs3, orphan),
				newPod("owned", rs3),
				newPod("relabelled", rs3, withLabels(map[string]string{"app": "other"})),
				newPod("foreign", rs3, func(p *corev1.Pod) { p.OwnerReferences[0].UID = "other-uid" }),
			},
			want: want{
				writes:    []string{"patch pods orphan", "patch pods relabelled", "update replicasets/status"},
				satisfied: true,
				status:    &appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
			},
		},
		{
			name: "being deleted: no creations and no adoption",
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("web", 3)
				rs.DeletionTimestamp = &metav1.Time{Time: t0}
				return rs
			}(),
			pods: []*corev1.Pod{newPod("orphan", rs3, orphan)},
			want: want{
				writes:    []string{"update replicasets/status"},
				satisfied: true,
			},
		},
		{
			name:    "unmet expectations: no action",
			rs:      newRS("web", 3),
			prepare: func(f *fixture) { f.c.expectations.ExpectCreations("ns/web", 1) },
			want:    want{writes: []string{"update replicasets/status"}},
		},
		{
			name: "expired expectations: action",
			rs:   newRS("web", 1),
			prepare: func(f *fixture) {
				f.c.expectations.ExpectCreations("ns/web", 1)
				f.clock.Step(controllerutil.ExpectationsTimeout + time.Second)
			},
			want: want{writes: []string{"create pods", "update replicasets/status"}},
		},
		{
			name: "slow start stops at the first failed batch",
			rs:   newRS("web", 10),
			prepare: func(f *fixture) {
				var n atomic.Int32
				f.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					if n.Add(1) > 3 {
						return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
					}
					return false, nil, nil
				})
			},
			// Batches 1, 2 and 4: seven attempts, three created.
			want: want{
				writes:    []string{"create pods", "create pods", "create pods", "create pods", "create pods", "create pods", "create pods", "update replicasets/status"},
				err:       true,
				condition: "FailedCreate",
			},
		},
		{
			name: "namespace terminating: no error",
			rs:   newRS("web", 2),
			prepare: func(f *fixture) {
				f.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
						Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}}}}
				})
			},
			want: want{writes: []string{"create pods", "create pods", "update replicasets/status"}},
		},
		{
			name: "failed delete sets ReplicaFailure",
			rs:   newRS("web", 0),
			pods: []*corev1.Pod{newPod("a", rs3)},
			prepare: func(f *fixture) {
				f.client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
				})
			},
			want: want{writes: []string{"delete pods a", "update replicasets/status"}, err: true, satisfied: true, condition: "FailedDelete"},
		},
		{
			name: "clean sync removes ReplicaFailure",
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("web", 1)
				rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0),
					Conditions: []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}}
				return rs
			}(),
			pods: []*corev1.Pod{newPod("a", rs3)},
			want: want{writes: []string{"update replicasets/status"}, satisfied: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.rs}
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			if tc.prepare != nil {
				tc.prepare(f)
			}
			err := f.c.sync(context.Background(), "ns/web")
			if (err != nil) != tc.want.err {
				t.Fatalf("sync error = %v, want error %v", err, tc.want.err)
			}
			if got := f.writes(); strings.Join(got, ",") != strings.Join(tc.want.writes, ",") {
				t.Errorf("writes:\n got %q\nwant %q", got, tc.want.writes)
			}
			if got := f.c.expectations.SatisfiedExpectations("ns/web"); got != tc.want.satisfied {
				t.Errorf("expectations satisfied = %v, want %v", got, tc.want.satisfied)
			}
			up := f.statusUpdate()
			if tc.want.status != nil {
				if up == nil {
					t.Fatal("no status update")
				}
				got := up.Status
				got.Conditions = nil
				if !equalStatus(got, *tc.want.status) {
					t.Errorf("status = %+v, want %+v", got, *tc.want.status)
				}
			}
			if up != nil {
				c := GetCondition(up.Status, appsv1.ReplicaSetReplicaFailure)
				switch {
				case tc.want.condition == "" && c != nil:
					t.Errorf("unexpected ReplicaFailure %+v", c)
				case tc.want.condition != "" && (c == nil || c.Reason != tc.want.condition || c.Status != corev1.ConditionTrue):
					t.Errorf("ReplicaFailure = %+v, want reason %s", c, tc.want.condition)
				}
			}
		})
	}
}

func equalStatus(a, b appsv1.ReplicaSetStatus) bool {
	return a.Replicas == b.Replicas && a.FullyLabeledReplicas == b.FullyLabeledReplicas && a.ReadyReplicas == b.ReadyReplicas &&
		a.AvailableReplicas == b.AvailableReplicas && a.ObservedGeneration == b.ObservedGeneration && ptr.Equal(a.TerminatingReplicas, b.TerminatingReplicas)
}

func TestCreatedPods(t *testing.T) {
	rs := newRS("web", 1)
	f := newFixture(t, rs)
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	pods, _ := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods", len(pods.Items))
	}
	p := pods.Items[0]
	ref := metav1.GetControllerOf(&p)
	if p.GenerateName != "web-" || ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || !*ref.BlockOwnerDeletion {
		t.Errorf("pod %s generateName %q controller %+v", p.Name, p.GenerateName, ref)
	}
	if p.Labels["tier"] != "web" || p.Spec.Containers[0].Image != "nginx" {
		t.Errorf("pod not from the template: %+v", p)
	}
	if ev := <-f.recorder.Events; !strings.HasPrefix(ev, "Normal SuccessfulCreate Created pod: web-") {
		t.Errorf("event %q", ev)
	}
}

func TestAdoptionRecheck(t *testing.T) {
	rs := newRS("web", 1)
	f := newFixture(t, rs, newPod("orphan", rs, orphan))
	// The live ReplicaSet is being deleted although the cache says not.
	live := rs.DeepCopy()
	live.DeletionTimestamp = &metav1.Time{Time: t0}
	f.client.PrependReactor("get", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, live, nil })
	if err := f.c.sync(context.Background(), "ns/web"); err == nil || !strings.Contains(err.Error(), "has just been deleted") {
		t.Fatalf("sync error = %v, want the recheck's", err)
	}
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "patch") || strings.HasPrefix(w, "create") {
			t.Errorf("unexpected write %s", w)
		}
	}
}

func TestMinReadySeconds(t *testing.T) {
	rs := newRS("web", 2)
	rs.Spec.MinReadySeconds = 10
	f := newFixture(t, rs, newPod("old", rs, readyAt(t0.Add(-time.Minute))), newPod("new", rs, readyAt(t0.Add(-4*time.Second))))
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	up := f.statusUpdate()
	if up == nil || up.Status.ReadyReplicas != 2 || up.Status.AvailableReplicas != 1 {
		t.Fatalf("status %+v", up)
	}
	// Requeued for when "new" becomes available, 6s from now.
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("queued at once: %d", n)
	}
	f.clock.Step(6*time.Second - time.Millisecond)
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("queued early: %d", n)
	}
	f.clock.Step(2 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for f.c.queue.Len() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if k, _ := f.c.queue.Get(); k != "ns/web" {
		t.Fatalf("queued %q", k)
	}
}

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		count, failAfter, wantCalls, wantOK int
	}{
		{count: 0, failAfter: 100, wantCalls: 0, wantOK: 0},
		{count: 10, failAfter: 100, wantCalls: 10, wantOK: 10},
		{count: 10, failAfter: 0, wantCalls: 1, wantOK: 0},
		{count: 10, failAfter: 1, wantCalls: 3, wantOK: 1},
		{count: 10, failAfter: 3, wantCalls: 7, wantOK: 3},
		{count: 5, failAfter: 4, wantCalls: 5, wantOK: 4},
	}
	for _, tc := range tests {
		var calls atomic.Int32
		ok, err := slowStartBatch(tc.count, 1, func() error {
			if int(calls.Add(1)) > tc.failAfter {
				return errors.New("fail")
			}
			return nil
		})
		if int(calls.Load()) != tc.wantCalls || ok != tc.wantOK || (err != nil) != (tc.wantOK < tc.count) {
			t.Errorf("count %d failAfter %d: calls %d ok %d err %v, want calls %d ok %d", tc.count, tc.failAfter, calls.Load(), ok, err, tc.wantCalls, tc.wantOK)
		}
	}
}

func TestEventHandlersObserveExpectations(t *testing.T) {
	rs := newRS("web", 3)
	f := newFixture(t, rs)
	f.c.expectations.ExpectCreations("ns/web", 2)
	p := newPod("a", rs)
	f.c.addPod(p)
	if add, _, _ := f.c.expectations.GetExpectations("ns/web"); add != 1 {
		t.Errorf("after addPod: %d creations outstanding, want 1", add)
	}
	// An orphan is no creation.
	f.c.addPod(newPod("o", rs, orphan))
	if add, _, _ := f.c.expectations.GetExpectations("ns/web"); add != 1 {
		t.Errorf("after orphan: %d creations outstanding, want 1", add)
	}
	f.c.expectations.ExpectDeletions("ns/web", []string{"ns/a"})
	gone := p.DeepCopy()
	gone.ResourceVersion = "2"
	deleting(gone)
	f.c.updatePod(p, gone)
	f.c.deletePod(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: gone})
	if _, del, _ := f.c.expectations.GetExpectations("ns/web"); del != 0 {
		t.Errorf("after delete: %d deletions outstanding, want 0", del)
	}
	if f.c.queue.Len() != 1 {
		t.Errorf("queue length %d, want 1 (the ReplicaSet)", f.c.queue.Len())
	}
	// The ReplicaSet's deletion forgets its expectations.
	f.c.expectations.ExpectCreations("ns/web", 5)
	f.c.deleteRS(rs)
	if _, _, ok := f.c.expectations.GetExpectations("ns/web"); ok {
		t.Error("expectations kept after the ReplicaSet was deleted")
	}
}

// withoutTerminating are ReplicaSets whose status, like a
// ReplicationController's, has no terminatingReplicas.
type withoutTerminating struct{ Owners }

func (withoutTerminating) TerminatingReplicas() bool { return false }

func TestOwnersWithoutTerminatingReplicas(t *testing.T) {
	rs := newRS("web", 2)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1}
	f := newFixture(t, rs, newPod("a", rs, ready), newPod("b", rs, ready), newPod("gone", rs, ready, deleting))
	f.c.owners = withoutTerminating{f.c.owners}
	// The status is current: no terminatingReplicas to add, nothing to write.
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("unexpected writes %q", w)
	}
}
