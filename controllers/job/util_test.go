package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestIndexSet(t *testing.T) {
	tests := []struct {
		in          string
		completions int
		add         []int
		want        string
		total       int
	}{
		{in: "", completions: 5, want: "", total: 0},
		{in: "0", completions: 5, add: []int{1}, want: "0,1", total: 2},
		{in: "0,1", completions: 5, add: []int{2}, want: "0-2", total: 3},
		{in: "1,3-5,7", completions: 10, want: "1,3-5,7", total: 5},
		{in: "1,3-5,7", completions: 10, add: []int{6, 2}, want: "1-7", total: 7},
		{in: "3-9", completions: 5, want: "3,4", total: 2},       // clipped to completions
		{in: "2,7,8", completions: 5, want: "2", total: 1},       // beyond completions dropped
		{in: "x,1,2-a,4", completions: 5, want: "1,4", total: 2}, // malformed entries skipped
		{in: "", completions: 5, add: []int{4, 0, 2, 3}, want: "0,2-4", total: 4},
	}
	for _, tc := range tests {
		s := parseIndexSet(tc.in, tc.completions).withIndexes(tc.add)
		if got := s.String(); got != tc.want || s.total() != tc.total {
			t.Errorf("parse(%q)+%v = %q (total %d), want %q (total %d)", tc.in, tc.add, got, s.total(), tc.want, tc.total)
		}
	}
	s := parseIndexSet("1,3-5,9", 10)
	for ix, want := range map[int]bool{0: false, 1: true, 2: false, 3: true, 5: true, 6: false, 9: true, 10: false} {
		if s.has(ix) != want {
			t.Errorf("has(%d) = %v, want %v", ix, !want, want)
		}
	}
	if got := s.overlap(parseIndexSet("0-4", 10)); got != 3 {
		t.Errorf("overlap with 0-4 = %d, want 3", got)
	}
}

func TestFirstPendingIndexes(t *testing.T) {
	job := indexed(newJob("j", ptr.To[int32](6), ptr.To[int32](6)))
	st := &syncState{
		job:              job,
		succeededIndexes: parseIndexSet("0,3", 6),
		active:           []*corev1.Pod{newPod(job, podSpec{name: "a", index: 1})},
	}
	if got := st.firstPendingIndexes(2); !slices.Equal(got, []int{2, 4}) {
		t.Errorf("first 2 pending = %v, want [2 4]", got)
	}
	if got := st.firstPendingIndexes(10); !slices.Equal(got, []int{2, 4, 5}) {
		t.Errorf("all pending = %v, want [2 4 5]", got)
	}
	st.failedIndexes = ptr.To(parseIndexSet("4", 6))
	if got := st.firstPendingIndexes(10); !slices.Equal(got, []int{2, 5}) {
		t.Errorf("pending with index 4 failed = %v, want [2 5]", got)
	}
}

func TestBackoffRecord(t *testing.T) {
	now := t0
	pod := func(phase corev1.PodPhase, finished time.Time) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(finished)}}}}}}
	}
	tests := []struct {
		name          string
		prev          backoffRecord
		succeeded     []*corev1.Pod
		failed        []*corev1.Pod
		wantFailures  int32
		wantRemaining time.Duration
	}{
		{name: "nothing", wantRemaining: 0},
		{name: "one failure just now", failed: []*corev1.Pod{pod(corev1.PodFailed, now)}, wantFailures: 1, wantRemaining: 10 * time.Second},
		{
			name:          "third failure doubles twice",
			prev:          backoffRecord{failuresAfterLastSuccess: 2, lastFailure: now.Add(-time.Minute)},
			failed:        []*corev1.Pod{pod(corev1.PodFailed, now.Add(-5*time.Second))},
			wantFailures:  3,
			wantRemaining: 35 * time.Second,
		},
		{
			name:          "capped at ten minutes",
			prev:          backoffRecord{failuresAfterLastSuccess: 20, lastFailure: now},
			failed:        []*corev1.Pod{pod(corev1.PodFailed, now)},
			wantFailures:  21,
			wantRemaining: 10 * time.Minute,
		},
		{
			name:      "a success resets",
			prev:      backoffRecord{failuresAfterLastSuccess: 4, lastFailure: now},
			succeeded: []*corev1.Pod{pod(corev1.PodSucceeded, now)},
		},
		{
			name:          "only failures after the latest success count",
			prev:          backoffRecord{failuresAfterLastSuccess: 4, lastFailure: now.Add(-time.Hour)},
			succeeded:     []*corev1.Pod{pod(corev1.PodSucceeded, now.Add(-3*time.Second))},
			failed:        []*corev1.Pod{pod(corev1.PodFailed, now.Add(-4*time.Second)), pod(corev1.PodFailed, now.Add(-2*time.Second))},
			wantFailures:  1,
			wantRemaining: 8 * time.Second,
		},
	}
	for _, tc := range tests {
		r := tc.prev.next(tc.succeeded, tc.failed)
		if r.failuresAfterLastSuccess != tc.wantFailures {
			t.Errorf("%s: failures %d, want %d", tc.name, r.failuresAfterLastSuccess, tc.wantFailures)
		}
		if got := r.remaining(now, podFailureBackoff, maxPodFailureBackoff); got != tc.wantRemaining {
			t.Errorf("%s: remaining %v, want %v", tc.name, got, tc.wantRemaining)
		}
	}
}

func TestFinishTime(t *testing.T) {
	ready := metav1.NewTime(t0.Add(-time.Minute))
	del := metav1.NewTime(t0)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
	}{
		{name: "creation time when nothing else", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}, want: t0.Add(-time.Hour)},
		{name: "ready false transition", pod: &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ready}}}}, want: ready.Time},
		{name: "deletion less grace", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del, DeletionGracePeriodSeconds: ptr.To[int64](30)}}, want: t0.Add(-30 * time.Second)},
		{name: "latest container finish", pod: &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(-3 * time.Second))}}},
			{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(-2 * time.Second))}}},
		}}}, want: t0.Add(-2 * time.Second)},
	}
	for _, tc := range tests {
		if got := finishTime(tc.pod); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	failedWith := func(name string, code int32, conds ...corev1.PodConditionType) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}}}
		for _, c := range conds {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return p
	}
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0, 42}}},
	}}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		wantAction string
		wantCount  bool
		wantMsg    string
	}{
		{name: "disruption ignored", pod: failedWith("main", 42, corev1.DisruptionTarget), wantAction: "Ignore"},
		{name: "exit 42 of main fails the job", pod: failedWith("main", 42), wantAction: "FailJob", wantCount: true,
			wantMsg: "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"},
		{name: "exit 42 of another container: no rule", pod: failedWith("side", 42), wantCount: true},
		{name: "other exit code counted", pod: failedWith("main", 3), wantAction: "Count", wantCount: true},
	}
	for _, tc := range tests {
		m := matchPodFailurePolicy(policy, tc.pod)
		action := ""
		if m.action != nil {
			action = string(*m.action)
		}
		if action != tc.wantAction || m.countFailed != tc.wantCount || m.failJobMessage != tc.wantMsg {
			t.Errorf("%s: action %q count %v msg %q; want %q %v %q", tc.name, action, m.countFailed, m.failJobMessage, tc.wantAction, tc.wantCount, tc.wantMsg)
		}
	}
}

func TestIndexedGenerateName(t *testing.T) {
	long := "a123456789b123456789c123456789d123456789e123456789f12345678"
	if got := indexedGenerateName("job", 7); got != "job-7-" {
		t.Errorf("short name: %q", got)
	}
	got := indexedGenerateName(long, 12345)
	if len(got) != 58 || got[len(got)-7:] != "-12345-" {
		t.Errorf("long name: %q (%d chars)", got, len(got))
	}
}
