package disruption

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client   *fake.Clientset
	c        *Controller
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
}

func newFixture(t *testing.T, scale ScaleFunc, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	inf := Informers{
		Pods:                   f.Core().V1().Pods(),
		PodDisruptionBudgets:   f.Policy().V1().PodDisruptionBudgets(),
		ReplicationControllers: f.Core().V1().ReplicationControllers(),
		ReplicaSets:            f.Apps().V1().ReplicaSets(),
		Deployments:            f.Apps().V1().Deployments(),
		StatefulSets:           f.Apps().V1().StatefulSets(),
	}
	clk := clocktesting.NewFakeClock(now)
	rec := record.NewFakeRecorder(100)
	c, err := New(client, inf, scale, rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = inf.Pods.Informer().GetStore().Add(o)
		case *policyv1.PodDisruptionBudget:
			err = inf.PodDisruptionBudgets.Informer().GetStore().Add(o)
		case *corev1.ReplicationController:
			err = inf.ReplicationControllers.Informer().GetStore().Add(o)
		case *appsv1.ReplicaSet:
			err = inf.ReplicaSets.Informer().GetStore().Add(o)
		case *appsv1.Deployment:
			err = inf.Deployments.Informer().GetStore().Add(o)
		case *appsv1.StatefulSet:
			err = inf.StatefulSets.Informer().GetStore().Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{client: client, c: c, recorder: rec, clock: clk}
}

func pdb(name string, minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 2},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MinAvailable:   minAvailable,
			MaxUnavailable: maxUnavailable,
		},
	}
}

func intOrStr(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
func pct(s string) *intstr.IntOrString   { v := intstr.FromString(s); return &v }

type podOpt func(*corev1.Pod)

func pod(name string, ready bool, opts ...podOpt) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(apiVersion, kind, name string, uid types.UID) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
	}
}

func deleting(p *corev1.Pod) {
	ts := metav1.NewTime(now.Add(-time.Second))
	p.DeletionTimestamp = &ts
}

func rs(name string, uid types.UID, replicas int32, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
	if owner != nil {
		r.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return r
}

// wantStatus is what a status write must hold (conditions checked by
// type, status and reason).
type wantStatus struct {
	expected, desired, healthy, allowed int32
	disrupted                           []string
	reason                              string
}

func TestSync(t *testing.T) {
	rsRef := ownedBy("apps/v1", "ReplicaSet", "web-1", "rs-uid")
	tests := []struct {
		name     string
		objs     []runtime.Object
		scale    ScaleFunc
		budget   *policyv1.PodDisruptionBudget
		want     *wantStatus // nil: no write
		wantEvts []string    // reasons of recorded events, in order
	}{
		{
			name:   "integer minAvailable counts matched pods",
			budget: pdb("b", intOrStr(2), nil),
			objs:   []runtime.Object{pod("a", true), pod("b", true), pod("c", true), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}}},
			want:   &wantStatus{expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason},
		},
		{
			name:   "not enough ready pods allow nothing",
			budget: pdb("b", intOrStr(2), nil),
			objs:   []runtime.Object{pod("a", true), pod("b", false), pod("c", true, deleting)},
			want:   &wantStatus{expected: 3, desired: 2, healthy: 1, allowed: 0, reason: policyv1.InsufficientPodsReason},
		},
		{
			name:   "maxUnavailable uses the replica set's scale",
			budget: pdb("b", nil, intOrStr(1)),
			objs:   []runtime.Object{rs("web-1", "rs-uid", 3, nil), pod("a", true, rsRef), pod("b", true, rsRef)},
			want:   &wantStatus{expected: 3, desired: 2, healthy: 2, allowed: 0, reason: policyv1.InsufficientPodsReason},
		},
		{
			name:   "percentage maxUnavailable uses the deployment's scale, rounded up",
			budget: pdb("b", nil, pct("30%")),
			objs: []runtime.Object{
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)}},
				rs("web-1", "rs-uid", 2, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr.To(true)}),
				pod("a", true, rsRef), pod("b", true, rsRef), pod("c", true, rsRef), pod("d", true, rsRef),
			},
			want: &wantStatus{expected: 4, desired: 2, healthy: 4, allowed: 2, reason: policyv1.SufficientPodsReason},
		},
		{
			name:   "percentage minAvailable uses the stateful set's scale, rounded up",
			budget: pdb("b", pct("50%"), nil),
			objs: []runtime.Object{
				&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "ss-uid"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}},
				pod("db-0", true, ownedBy("apps/v1", "StatefulSet", "db", "ss-uid")),
				pod("db-1", true, ownedBy("apps/v1", "StatefulSet", "db", "ss-uid")),
			},
			want: &wantStatus{expected: 3, desired: 2, healthy: 2, allowed: 0, reason: policyv1.InsufficientPodsReason},
		},
		{
			name:   "replication controller scale",
			budget: pdb("b", nil, intOrStr(1)),
			objs: []runtime.Object{
				&corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc", UID: "rc-uid"}, Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2)}},
				pod("a", true, ownedBy("v1", "ReplicationController", "rc", "rc-uid")),
				pod("b", true, ownedBy("v1", "ReplicationController", "rc", "rc-uid")),
			},
			want: &wantStatus{expected: 2, desired: 1, healthy: 2, allowed: 1, reason: policyv1.SufficientPodsReason},
		},
		{
			name:   "other controllers through the scale subresource",
			budget: pdb("b", nil, intOrStr(1)),
			scale: func(_ context.Context, ns string, ref metav1.OwnerReference) (types.UID, int32, bool, error) {
				if ns != "ns" || ref.Kind != "Widget" || ref.Name != "w" {
					return "", 0, false, errors.New("unexpected lookup")
				}
				return "w-uid", 5, true, nil
			},
			objs: []runtime.Object{pod("a", true, ownedBy("example.com/v1", "Widget", "w", "w-uid"))},
			want: &wantStatus{expected: 5, desired: 4, healthy: 1, allowed: 0, reason: policyv1.InsufficientPodsReason},
		},
		{
			name:     "a controller that cannot be found fails safe",
			budget:   pdb("b", nil, intOrStr(1)),
			objs:     []runtime.Object{pod("a", true, rsRef)},
			want:     &wantStatus{reason: policyv1.SyncFailedReason},
			wantEvts: []string{"CalculateExpectedPodCountFailed"},
		},
		{
			name:     "a replica set with another UID is not the pod's controller",
			budget:   pdb("b", nil, intOrStr(1)),
			objs:     []runtime.Object{rs("web-1", "new-uid", 3, nil), pod("a", true, rsRef)},
			want:     &wantStatus{reason: policyv1.SyncFailedReason},
			wantEvts: []string{"CalculateExpectedPodCountFailed"},
		},
		{
			name:   "a scale lookup error fails safe",
			budget: pdb("b", nil, intOrStr(1)),
			scale: func(context.Context, string, metav1.OwnerReference) (types.UID, int32, bool, error) {
				return "", 0, false, errors.New("widgets does not implement the scale subresource")
			},
			objs:     []runtime.Object{pod("a", true, ownedBy("example.com/v1", "Widget", "w", "w-uid"))},
			want:     &wantStatus{reason: policyv1.SyncFailedReason},
			wantEvts: []string{"CalculateExpectedPodCountFailed"},
		},
		{
			name:     "unmanaged pods with maxUnavailable expect nothing",
			budget:   pdb("b", nil, intOrStr(1)),
			objs:     []runtime.Object{pod("a", true)},
			want:     &wantStatus{expected: 0, desired: 0, healthy: 1, allowed: 0, reason: policyv1.InsufficientPodsReason},
			wantEvts: []string{"UnmanagedPods"},
		},
		{
			name:     "no pods",
			budget:   pdb("b", intOrStr(1), nil),
			want:     &wantStatus{expected: 0, desired: 1, healthy: 0, allowed: 0, reason: policyv1.InsufficientPodsReason},
			wantEvts: []string{"NoPods"},
		},
		{
			name: "recent disruptions hold pods back, old and finished ones are dropped",
			budget: func() *policyv1.PodDisruptionBudget {
				b := pdb("b", intOrStr(1), nil)
				b.Status.DisruptedPods = map[string]metav1.Time{
					"recent":  metav1.NewTime(now.Add(-30 * time.Second)),
					"old":     metav1.NewTime(now.Add(-3 * time.Minute)),
					"going":   metav1.NewTime(now.Add(-10 * time.Second)),
					"deleted": metav1.NewTime(now.Add(-10 * time.Second)),
				}
				return b
			}(),
			objs:     []runtime.Object{pod("recent", true), pod("old", true), pod("going", true, deleting), pod("fine", true)},
			want:     &wantStatus{expected: 4, desired: 1, healthy: 2, allowed: 1, disrupted: []string{"recent"}, reason: policyv1.SufficientPodsReason},
			wantEvts: []string{"NotDeleted"},
		},
		{
			name: "up to date status is not written",
			budget: func() *policyv1.PodDisruptionBudget {
				b := pdb("b", intOrStr(1), nil)
				b.Status = policyv1.PodDisruptionBudgetStatus{
					ObservedGeneration: 2, ExpectedPods: 2, DesiredHealthy: 1, CurrentHealthy: 2, DisruptionsAllowed: 1,
					Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason}},
				}
				return b
			}(),
			objs: []runtime.Object{pod("a", true), pod("b", true)},
		},
		{
			name: "a new generation is observed even when counts are unchanged",
			budget: func() *policyv1.PodDisruptionBudget {
				b := pdb("b", intOrStr(1), nil)
				b.Status = policyv1.PodDisruptionBudgetStatus{
					ObservedGeneration: 1, ExpectedPods: 2, DesiredHealthy: 1, CurrentHealthy: 2, DisruptionsAllowed: 1,
					Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason}},
				}
				return b
			}(),
			objs: []runtime.Object{pod("a", true), pod("b", true)},
			want: &wantStatus{expected: 2, desired: 1, healthy: 2, allowed: 1, reason: policyv1.SufficientPodsReason},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.scale, append(tt.objs, tt.budget)...)
			if err := f.c.sync(context.Background(), "ns/"+tt.budget.Name); err != nil {
				t.Fatalf("sync: %v", err)
			}
			var writes []*policyv1.PodDisruptionBudget
			for _, a := range f.client.Actions() {
				if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
					writes = append(writes, u.GetObject().(*policyv1.PodDisruptionBudget))
				} else {
					t.Errorf("unexpected action %v", a)
				}
			}
			if got := eventReasons(f.recorder); !cmp.Equal(got, tt.wantEvts) {
				t.Errorf("events %v, want %v", got, tt.wantEvts)
			}
			if tt.want == nil {
				if len(writes) > 0 {
					t.Fatalf("status written: %+v", writes[0].Status)
				}
				return
			}
			if len(writes) != 1 {
				t.Fatalf("%d status writes, want 1", len(writes))
			}
			st := writes[0].Status
			cond := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			if cond == nil || cond.Reason != tt.want.reason {
				t.Fatalf("condition %+v, want reason %s", cond, tt.want.reason)
			}
			if wantTrue := tt.want.reason == policyv1.SufficientPodsReason; (cond.Status == metav1.ConditionTrue) != wantTrue {
				t.Errorf("condition status %s with reason %s", cond.Status, cond.Reason)
			}
			if tt.want.reason == policyv1.SyncFailedReason {
				if st.DisruptionsAllowed != 0 {
					t.Errorf("failed safe with %d disruptions allowed", st.DisruptionsAllowed)
				}
				return
			}
			got := wantStatus{expected: st.ExpectedPods, desired: st.DesiredHealthy, healthy: st.CurrentHealthy, allowed: st.DisruptionsAllowed, reason: cond.Reason}
			for name := range st.DisruptedPods {
				got.disrupted = append(got.disrupted, name)
			}
			if diff := cmp.Diff(*tt.want, got, cmp.AllowUnexported(wantStatus{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if st.ObservedGeneration != 2 {
				t.Errorf("observedGeneration %d, want 2", st.ObservedGeneration)
			}
		})
	}
}

func eventReasons(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			// "<type> <reason> <message>"
			reason := ""
			if f := strings.Fields(e); len(f) > 1 {
				reason = f[1]
			}
			out = append(out, reason)
		default:
			return out
		}
	}
}

func TestRecheckWhenDisruptionExpires(t *testing.T) {
	b := pdb("b", intOrStr(1), nil)
	b.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-90 * time.Second))}
	f := newFixture(t, nil, b, pod("a", true), pod("b", true))
	if err := f.c.sync(context.Background(), "ns/b"); err != nil {
		t.Fatal(err)
	}
	if f.c.queue.Len() != 0 {
		t.Fatalf("queued at once")
	}
	// The record expires 30 s later; the budget is synced again then.
	f.clock.Step(31 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for f.c.queue.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if f.c.queue.Len() != 1 {
		t.Fatalf("budget not queued for a recheck when its disruption record expired")
	}
}

func TestStaleDisruptionTarget(t *testing.T) {
	withTarget := func(age time.Duration, reason string) podOpt {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason,
				LastTransitionTime: metav1.NewTime(now.Add(-age)),
			})
		}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantReset bool
		wantLater bool
	}{
		{name: "stale condition is reset", pod: pod("a", true, withTarget(3*time.Minute, "EvictionByEvictionAPI")), wantReset: true},
		{name: "recent condition waits", pod: pod("a", true, withTarget(time.Minute, "EvictionByEvictionAPI")), wantLater: true},
		{name: "kubelet's own condition is kept", pod: pod("a", true, withTarget(3*time.Minute, corev1.PodReasonTerminationByKubelet))},
		{name: "deleting pod is left alone", pod: pod("a", true, withTarget(3*time.Minute, "EvictionByEvictionAPI"), deleting)},
		{name: "finished pod is left alone", pod: pod("a", true, withTarget(3*time.Minute, "EvictionByEvictionAPI"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, tt.pod)
			if err := f.c.syncStalePod(context.Background(), "ns/a"); err != nil {
				t.Fatal(err)
			}
			var reset bool
			for _, a := range f.client.Actions() {
				u, ok := a.(clienttesting.UpdateAction)
				if !ok || a.GetSubresource() != "status" {
					t.Fatalf("unexpected action %v", a)
				}
				for _, c := range u.GetObject().(*corev1.Pod).Status.Conditions {
					if c.Type == corev1.DisruptionTarget {
						reset = c.Status == corev1.ConditionFalse && c.LastTransitionTime.Time.Equal(now)
					}
				}
			}
			if reset != tt.wantReset {
				t.Errorf("reset = %v, want %v", reset, tt.wantReset)
			}
			stale, after := f.c.staleDisruptionTarget(tt.pod)
			if tt.wantLater != (stale && after > 0) {
				t.Errorf("stale=%v after=%v, want a later recheck %v", stale, after, tt.wantLater)
			}
		})
	}
}
