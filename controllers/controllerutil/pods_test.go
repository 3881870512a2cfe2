package controllerutil

import (
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0)},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func unassigned(p *corev1.Pod) { p.Spec.NodeName = "" }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func readySince(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)}}
	}
}
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: c} }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}
func sidecarRestarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", RestartCount: n}}
	}
}
func created(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func TestActivePodsWithRanksOrder(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Hour))
	tests := []struct {
		name         string
		first, later *corev1.Pod
		rankFirst    int
		rankLater    int
		now          metav1.Time
	}{
		{name: "unassigned before assigned", first: mkPod("a", unassigned, readySince(t0)), later: mkPod("b", phase(corev1.PodPending))},
		{name: "pending before unknown", first: mkPod("a", phase(corev1.PodPending)), later: mkPod("b", phase(corev1.PodUnknown))},
		{name: "unknown before running", first: mkPod("a", phase(corev1.PodUnknown), readySince(t0)), later: mkPod("b")},
		{name: "not ready before ready", first: mkPod("a", cost("100")), later: mkPod("b", readySince(t0))},
		{name: "lower deletion cost first", first: mkPod("a", readySince(t0), cost("-5")), later: mkPod("b", readySince(t0.Add(time.Minute)), restarts(9))},
		{name: "unparsable cost counts as zero", first: mkPod("a", cost("abc")), later: mkPod("b", cost("1"))},
		{name: "higher rank first", first: mkPod("a", readySince(t0)), rankFirst: 2, later: mkPod("b", readySince(t0.Add(time.Minute))), rankLater: 1},
		{name: "ready shorter first", first: mkPod("a", readySince(t0.Add(time.Minute))), later: mkPod("b", readySince(t0), restarts(5))},
		{name: "ready shorter first, log scale", now: now, first: mkPod("a", readySince(t0.Add(50*time.Minute))), later: mkPod("b", readySince(t0))},
		{
			name:  "same log bucket of readiness: by uid",
			now:   now,
			first: mkPod("a", readySince(t0)),
			later: mkPod("b", readySince(t0.Add(time.Second))),
		},
		{name: "more restarts first", first: mkPod("a", restarts(3)), later: mkPod("b", restarts(1), created(t0.Add(time.Hour)))},
		{name: "more sidecar restarts first", first: mkPod("a", sidecarRestarts(2)), later: mkPod("b", created(t0.Add(time.Hour)))},
		{name: "newer first", first: mkPod("a", created(t0.Add(time.Second))), later: mkPod("b")},
		{name: "zero creation time first", first: mkPod("a", created(time.Time{})), later: mkPod("b")},
		{name: "newer first, log scale", now: now, first: mkPod("a", created(t0.Add(40*time.Minute))), later: mkPod("b")},
		{name: "same log bucket of age: by uid", now: now, first: mkPod("a"), later: mkPod("b", created(t0.Add(time.Second)))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ActivePodsWithRanks{Pods: []*corev1.Pod{tc.first, tc.later}, Rank: []int{tc.rankFirst, tc.rankLater}, Now: tc.now}
			if !s.Less(0, 1) {
				t.Errorf("Less(first, later) = false")
			}
			if s.Less(1, 0) {
				t.Errorf("Less(later, first) = true")
			}
			// Sorting the reversed list puts first in front.
			r := ActivePodsWithRanks{Pods: []*corev1.Pod{tc.later, tc.first}, Rank: []int{tc.rankLater, tc.rankFirst}, Now: tc.now}
			sort.Sort(r)
			if r.Pods[0] != tc.first || r.Rank[0] != tc.rankFirst {
				t.Errorf("sorted: %s first, want %s", r.Pods[0].Name, tc.first.Name)
			}
		})
	}
	equal := ActivePodsWithRanks{Pods: []*corev1.Pod{mkPod("a"), mkPod("a")}, Rank: []int{0, 0}}
	if equal.Less(0, 1) || equal.Less(1, 0) {
		t.Error("identical pods are ordered")
	}
}

func TestActivePodsOrder(t *testing.T) {
	pods := ActivePods{
		mkPod("old-ready", readySince(t0)),
		mkPod("new-ready", readySince(t0.Add(time.Minute))),
		mkPod("restarted", restarts(4)),
		mkPod("notready-new", created(t0.Add(time.Hour))),
		mkPod("pending", phase(corev1.PodPending)),
		mkPod("unknown", phase(corev1.PodUnknown)),
		mkPod("unscheduled", unassigned),
	}
	sort.Sort(pods)
	want := []string{"unscheduled", "pending", "unknown", "restarted", "notready-new", "new-ready", "old-ready"}
	for i, p := range pods {
		if p.Name != want[i] {
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestPodPredicates(t *testing.T) {
	now := metav1.Now()
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &now }
	tests := []struct {
		pod                        *corev1.Pod
		active, terminating, ready bool
	}{
		{pod: mkPod("running"), active: true},
		{pod: mkPod("ready", readySince(t0)), active: true, ready: true},
		{pod: mkPod("succeeded", phase(corev1.PodSucceeded)), active: false},
		{pod: mkPod("failed", phase(corev1.PodFailed)), active: false},
		{pod: mkPod("deleting", deleting), active: false, terminating: true},
		{pod: mkPod("failed-deleting", phase(corev1.PodFailed), deleting), active: false, terminating: false},
	}
	var all []*corev1.Pod
	for _, tc := range tests {
		all = append(all, tc.pod)
		if got := IsPodActive(tc.pod); got != tc.active {
			t.Errorf("%s: IsPodActive = %v", tc.pod.Name, got)
		}
		if got := IsPodTerminating(tc.pod); got != tc.terminating {
			t.Errorf("%s: IsPodTerminating = %v", tc.pod.Name, got)
		}
		if got := IsPodReady(tc.pod); got != tc.ready {
			t.Errorf("%s: IsPodReady = %v", tc.pod.Name, got)
		}
	}
	if n := len(FilterActivePods(all)); n != 2 {
		t.Errorf("FilterActivePods: %d pods, want 2", n)
	}
	if n := len(FilterTerminatingPods(all)); n != 1 || CountTerminatingPods(all) != 1 {
		t.Errorf("terminating pods: %d, want 1", n)
	}
}

func TestFilterClaimedPods(t *testing.T) {
	owner := testRS("web")
	ref := NewControllerRef(owner, rsKind)
	mine := claimPod("mine", "ns", map[string]string{"app": "web"}, ref)
	mineStale := claimPod("stale", "ns", map[string]string{"app": "db"}, ref)
	orphan := claimPod("orphan", "ns", map[string]string{"app": "web"}, nil)
	got := FilterClaimedPods(owner, labels.SelectorFromSet(map[string]string{"app": "web"}), []*corev1.Pod{mine, mineStale, orphan})
	if len(got) != 1 || got[0] != mine {
		t.Errorf("FilterClaimedPods = %v", got)
	}
}

func TestIsPodAvailable(t *testing.T) {
	now := metav1.NewTime(t0.Add(10 * time.Second))
	tests := []struct {
		name string
		pod  *corev1.Pod
		min  int32
		want bool
	}{
		{name: "not ready", pod: mkPod("a"), want: false},
		{name: "ready, no min", pod: mkPod("a", readySince(t0.Add(10*time.Second))), want: true},
		{name: "ready long enough", pod: mkPod("a", readySince(t0)), min: 5, want: true},
		{name: "ready exactly min ago", pod: mkPod("a", readySince(t0)), min: 10, want: false},
		{name: "ready too short", pod: mkPod("a", readySince(t0.Add(6*time.Second))), min: 5, want: false},
		{name: "ready without transition time", pod: mkPod("a", readySince(time.Time{})), min: 5, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsPodAvailable(tc.pod, tc.min, now); got != tc.want {
				t.Errorf("IsPodAvailable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFindMinNextPodAvailabilityCheck(t *testing.T) {
	evaluated := t0.Add(10 * time.Second)
	pods := []*corev1.Pod{
		mkPod("available", readySince(t0)),
		mkPod("soon", readySince(t0.Add(8*time.Second))),
		mkPod("later", readySince(t0.Add(9*time.Second))),
		mkPod("notready"),
	}
	tests := []struct {
		name  string
		pods  []*corev1.Pod
		min   int32
		clock time.Time
		want  *time.Duration
	}{
		{name: "no min ready seconds", pods: pods, min: 0, clock: evaluated},
		{name: "earliest waiting pod", pods: pods, min: 5, clock: evaluated, want: ptr.To(3 * time.Second)},
		{name: "time passed since evaluation", pods: pods, min: 5, clock: evaluated.Add(time.Second), want: ptr.To(2 * time.Second)},
		{name: "moment passed: check now", pods: pods, min: 5, clock: evaluated.Add(time.Minute), want: ptr.To(time.Duration(0))},
		{name: "nobody waiting", pods: pods[:1], min: 5, clock: evaluated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FindMinNextPodAvailabilityCheck(tc.pods, tc.min, evaluated, clocktesting.NewFakePassiveClock(tc.clock))
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("got %v, want %v", fmtDur(got), fmtDur(tc.want))
			}
		})
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "nil"
	}
	return d.String()
}

func TestGetDeletionCost(t *testing.T) {
	tests := map[string]int32{"": 0, "12": 12, "-3": -3, "2147483648": 0, "x": 0}
	for v, want := range tests {
		p := mkPod("a")
		if v != "" {
			p = mkPod("a", cost(v))
		}
		if got := GetDeletionCost(p); got != want {
			t.Errorf("cost %q = %d, want %d", v, got, want)
		}
	}
}
