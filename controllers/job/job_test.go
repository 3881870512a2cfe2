package job

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type wantStatus struct {
	active, ready, succeeded, failed, terminating int32
}

func checkStatus(t *testing.T, j *batchv1.Job, w wantStatus) {
	t.Helper()
	got := wantStatus{j.Status.Active, ptr.Deref(j.Status.Ready, -1), j.Status.Succeeded, j.Status.Failed, ptr.Deref(j.Status.Terminating, -1)}
	if got != w {
		t.Errorf("status (active ready succeeded failed terminating) = %+v, want %+v", got, w)
	}
}

func sortedNames(names ...string) []string {
	slices.Sort(names)
	return names
}

func TestSync(t *testing.T) {
	longAgo := t0.Add(-time.Hour)
	tests := []struct {
		name string
		job  *batchv1.Job
		pods []podSpec
		// wantCreated is the number of pods created.
		wantCreated int
		wantDeleted []string
		// wantPatched are the pods whose finalizer was removed.
		wantPatched []string
		wantStatus  wantStatus
		wantConds   []string
		// wantStart: "t0", "kept" (as given) or "nil".
		wantStart  string
		wantEvents []string
		noStatus   bool
	}{
		{
			name:        "new job starts parallelism pods",
			job:         newJob("j", ptr.To[int32](3), ptr.To[int32](2)),
			wantCreated: 2,
			wantStatus:  wantStatus{active: 2},
			wantStart:   "t0",
		},
		{
			name:        "remaining completions cap the pods",
			job:         newJob("j", ptr.To[int32](3), ptr.To[int32](5)),
			pods:        []podSpec{{name: "a", phase: corev1.PodSucceeded}, {name: "b", phase: corev1.PodSucceeded}},
			wantCreated: 1,
			wantPatched: []string{"a", "b"},
			wantStatus:  wantStatus{active: 1, succeeded: 2},
			wantStart:   "t0",
		},
		{
			name:       "ready pods are counted",
			job:        newJob("j", ptr.To[int32](3), ptr.To[int32](2)),
			pods:       []podSpec{{name: "a", phase: corev1.PodRunning, ready: true}, {name: "b", phase: corev1.PodRunning}},
			wantStatus: wantStatus{active: 2, ready: 1},
			wantStart:  "t0",
		},
		{
			name:        "reaching completions completes the job",
			job:         newJob("j", ptr.To[int32](2), ptr.To[int32](2)),
			pods:        []podSpec{{name: "a", phase: corev1.PodSucceeded}, {name: "b", phase: corev1.PodSucceeded}},
			wantPatched: []string{"a", "b"},
			wantStatus:  wantStatus{succeeded: 2},
			wantConds:   []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"},
			wantStart:   "t0",
			wantEvents:  []string{"Normal Completed Job completed"},
		},
		{
			name: "lower parallelism deletes the least valuable pod",
			job:  newJob("j", nil, ptr.To[int32](1)),
			pods: []podSpec{
				{name: "running", phase: corev1.PodRunning, ready: true, node: "n1"},
				{name: "pending", phase: corev1.PodPending},
			},
			wantDeleted: []string{"pending"},
			wantPatched: []string{"pending"},
			wantStatus:  wantStatus{active: 1, ready: 1, terminating: 1},
			wantStart:   "t0",
		},
		{
			name:       "without completions a success stops new pods",
			job:        newJob("j", nil, ptr.To[int32](3)),
			pods:       []podSpec{{name: "ok", phase: corev1.PodSucceeded}, {name: "run", phase: corev1.PodRunning}},
			wantStatus: wantStatus{active: 1, succeeded: 1},
			// The succeeded pod is counted and released.
			wantPatched: []string{"ok"},
			wantStart:   "t0",
		},
		{
			name:        "without completions the job completes once the others end",
			job:         newJob("j", nil, ptr.To[int32](2)),
			pods:        []podSpec{{name: "ok", phase: corev1.PodSucceeded}, {name: "bad", phase: corev1.PodFailed}},
			wantPatched: []string{"bad", "ok"},
			wantStatus:  wantStatus{succeeded: 1, failed: 1},
			wantConds:   []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"},
			wantStart:   "t0",
			wantEvents:  []string{"Normal Completed Job completed"},
		},
		{
			name: "failures beyond the backoff limit fail the job; its pods go first",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](5), ptr.To[int32](1))
				j.Spec.BackoffLimit = ptr.To[int32](1)
				return j
			}(),
			pods: []podSpec{
				{name: "f1", phase: corev1.PodFailed}, {name: "f2", phase: corev1.PodFailed},
				{name: "run", phase: corev1.PodRunning},
			},
			wantDeleted: []string{"run"},
			wantPatched: []string{"f1", "f2", "run"},
			// The deleted pod counts as failed too; Failed waits for it
			// to be gone.
			wantStatus: wantStatus{failed: 3, terminating: 1},
			wantConds:  []string{"FailureTarget=True/BackoffLimitExceeded"},
			wantStart:  "t0",
		},
		{
			name: "backoff limit 0: the first failure fails the job",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.BackoffLimit = ptr.To[int32](0)
				return j
			}(),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed}},
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{failed: 1},
			wantConds:   []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"},
			wantStart:   "t0",
			wantEvents:  []string{"Warning BackoffLimitExceeded Job has reached the specified backoff limit"},
		},
		{
			name: "failures up to the backoff limit are retried",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.BackoffLimit = ptr.To[int32](1)
				return j
			}(),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed}},
			wantCreated: 1,
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{active: 1, failed: 1},
			wantStart:   "t0",
		},
		{
			name:        "a failure long ago is replaced at once",
			job:         newJob("j", ptr.To[int32](1), ptr.To[int32](1)),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed, finished: longAgo}},
			wantCreated: 1,
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{active: 1, failed: 1},
			wantStart:   "t0",
		},
		{
			name:        "a recent failure delays the replacement",
			job:         newJob("j", ptr.To[int32](1), ptr.To[int32](1)),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed, finished: t0.Add(-2 * time.Second)}},
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{failed: 1},
			wantStart:   "t0",
		},
		{
			name:        "a pod being deleted counts as failed and is replaced",
			job:         newJob("j", ptr.To[int32](1), ptr.To[int32](1)),
			pods:        []podSpec{{name: "gone", phase: corev1.PodRunning, deleting: true}},
			wantCreated: 1,
			wantPatched: []string{"gone"},
			wantStatus:  wantStatus{active: 1, failed: 1, terminating: 1},
			wantStart:   "t0",
		},
		{
			name: "podReplacementPolicy Failed waits for the terminating pod",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
				return j
			}(),
			pods:       []podSpec{{name: "gone", phase: corev1.PodRunning, deleting: true}},
			wantStatus: wantStatus{terminating: 1},
			wantStart:  "t0",
		},
		{
			name: "active deadline passed: pods deleted, DeadlineExceeded",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](4), ptr.To[int32](2))
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
				j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-11 * time.Second)))
				return j
			}(),
			pods:        []podSpec{{name: "a", phase: corev1.PodRunning, ready: true}, {name: "b", phase: corev1.PodRunning}},
			wantDeleted: []string{"a", "b"},
			wantPatched: []string{"a", "b"},
			wantStatus:  wantStatus{failed: 2, terminating: 2},
			wantConds:   []string{"FailureTarget=True/DeadlineExceeded"},
			wantStart:   "kept",
		},
		{
			name: "active deadline not yet passed",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
				j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-9 * time.Second)))
				j.Status.Active = 1
				j.Status.Ready = ptr.To[int32](0)
				j.Status.Terminating = ptr.To[int32](0)
				return j
			}(),
			pods:       []podSpec{{name: "a", phase: corev1.PodRunning}},
			wantStart:  "kept",
			noStatus:   true,
			wantStatus: wantStatus{active: 1},
		},
		{
			name: "suspending deletes the pods and resets the start time",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
				j.Spec.Suspend = ptr.To(true)
				j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Minute)))
				return j
			}(),
			pods:        []podSpec{{name: "a", phase: corev1.PodRunning, ready: true}, {name: "b", phase: corev1.PodRunning}},
			wantDeleted: []string{"a", "b"},
			wantPatched: []string{"a", "b"},
			wantStatus:  wantStatus{terminating: 2},
			wantConds:   []string{"Suspended=True/JobSuspended"},
			wantStart:   "nil",
			wantEvents:  []string{"Normal Suspended Job suspended"},
		},
		{
			name: "a Job created suspended gets no start time",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
				j.Spec.Suspend = ptr.To(true)
				return j
			}(),
			wantConds:  []string{"Suspended=True/JobSuspended"},
			wantStart:  "nil",
			wantEvents: []string{"Normal Suspended Job suspended"},
		},
		{
			name: "resuming starts pods and the deadline clock",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended"}}
				return j
			}(),
			wantCreated: 2,
			wantStatus:  wantStatus{active: 2},
			wantConds:   []string{"Suspended=False/JobResumed"},
			wantStart:   "t0",
			wantEvents:  []string{"Normal Resumed Job resumed"},
		},
		{
			name: "a Job managed by another controller is left alone",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
				j.Spec.ManagedBy = ptr.To("example.com/other")
				return j
			}(),
			noStatus:  true,
			wantStart: "nil",
		},
		{
			name: "a finished Job is left alone",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
				return j
			}(),
			pods:      []podSpec{{name: "a", phase: corev1.PodSucceeded}},
			noStatus:  true,
			wantConds: []string{"Complete=True/"},
			wantStart: "nil",
		},
		{
			name: "pod failure policy FailJob",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](3), ptr.To[int32](2))
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:      batchv1.PodFailurePolicyActionFailJob,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
				}}}
				return j
			}(),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed, exitCode: 42}},
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{failed: 1},
			wantConds:   []string{"FailureTarget=True/PodFailurePolicy", "Failed=True/PodFailurePolicy"},
			wantStart:   "t0",
			wantEvents:  []string{"Warning PodFailurePolicy Container c for pod ns/f failed with exit code 42 matching FailJob rule at index 0"},
		},
		{
			name: "pod failure policy Ignore does not count the failure",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.BackoffLimit = ptr.To[int32](0)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:      batchv1.PodFailurePolicyActionIgnore,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
				}}}
				return j
			}(),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed, exitCode: 3}},
			wantCreated: 1,
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{active: 1},
			wantStart:   "t0",
		},
		{
			name: "pod failure policy Count counts it",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.BackoffLimit = ptr.To[int32](0)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:      batchv1.PodFailurePolicyActionCount,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}},
				}}}
				return j
			}(),
			pods:        []podSpec{{name: "f", phase: corev1.PodFailed, exitCode: 3}},
			wantPatched: []string{"f"},
			wantStatus:  wantStatus{failed: 1},
			wantConds:   []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"},
			wantStart:   "t0",
			wantEvents:  []string{"Warning BackoffLimitExceeded Job has reached the specified backoff limit"},
		},
		{
			name: "restartPolicy OnFailure: container restarts reach the backoff limit",
			job: func() *batchv1.Job {
				j := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
				j.Spec.BackoffLimit = ptr.To[int32](2)
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				return j
			}(),
			pods:        []podSpec{{name: "crashy", phase: corev1.PodRunning}},
			wantDeleted: []string{"crashy"},
			wantPatched: []string{"crashy"},
			wantStatus:  wantStatus{failed: 1, terminating: 1},
			wantConds:   []string{"FailureTarget=True/BackoffLimitExceeded"},
			wantStart:   "t0",
		},
		{
			name:        "a matching orphan is adopted",
			job:         newJob("j", ptr.To[int32](1), ptr.To[int32](1)),
			pods:        []podSpec{{name: "stray", phase: corev1.PodRunning, orphan: true, noFinal: true}},
			wantPatched: []string{"stray"}, // the adoption patch
			wantStatus:  wantStatus{active: 1},
			wantStart:   "t0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var podObjs []runtime.Object
			for _, s := range tc.pods {
				if s.name == "crashy" {
					p := newPod(tc.job, podSpec{name: s.name, phase: s.phase, index: -1})
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
					podObjs = append(podObjs, p)
					continue
				}
				s.index = -1
				podObjs = append(podObjs, newPod(tc.job, s))
			}
			f := newFixture(t, objs(tc.job, podObjs)...)
			s := summarize(f.mustSync("j"))
			if len(s.created) != tc.wantCreated {
				t.Errorf("created %d pods, want %d", len(s.created), tc.wantCreated)
			}
			if !slices.Equal(s.deleted, sortedNames(tc.wantDeleted...)) {
				t.Errorf("deleted %v, want %v", s.deleted, tc.wantDeleted)
			}
			if !slices.Equal(s.patched, sortedNames(tc.wantPatched...)) {
				t.Errorf("patched %v, want %v", s.patched, tc.wantPatched)
			}
			for _, p := range s.created {
				if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					t.Errorf("pod %s created without the tracking finalizer", p.Name)
				}
				if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != tc.job.UID || ref.Kind != "Job" {
					t.Errorf("pod %s controller %+v", p.Name, ref)
				}
				if p.GenerateName != "j-" {
					t.Errorf("pod generateName %q, want j-", p.GenerateName)
				}
			}
			if tc.noStatus {
				if len(s.statuses) != 0 {
					t.Errorf("status written %d times, want none", len(s.statuses))
				}
			} else {
				got := s.last(t)
				checkStatus(t, got, tc.wantStatus)
				if u := got.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
					t.Errorf("uncounted pods left: %+v", u)
				}
				if c := conditions(got); !slices.Equal(c, tc.wantConds) {
					t.Errorf("conditions %v, want %v", c, tc.wantConds)
				}
				switch tc.wantStart {
				case "t0":
					if got.Status.StartTime == nil || !got.Status.StartTime.Time.Equal(t0) {
						t.Errorf("startTime %v, want %v", got.Status.StartTime, t0)
					}
				case "nil":
					if got.Status.StartTime != nil {
						t.Errorf("startTime %v, want none", got.Status.StartTime)
					}
				case "kept":
					if !got.Status.StartTime.Equal(tc.job.Status.StartTime) {
						t.Errorf("startTime %v, want %v", got.Status.StartTime, tc.job.Status.StartTime)
					}
				}
				complete := trueCondition(got, batchv1.JobComplete) != nil
				if complete != (got.Status.CompletionTime != nil) {
					t.Errorf("complete %v but completionTime %v", complete, got.Status.CompletionTime)
				}
			}
			if ev := f.events(); !containsAll(ev, tc.wantEvents) {
				t.Errorf("events %q, want %q among them", ev, tc.wantEvents)
			}
		})
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// TestSyncRecordsUncountedFirst checks the order of the tracking writes:
// finished pods go to uncountedTerminatedPods before their finalizers are
// removed, and to the counters only after.
func TestSyncRecordsUncountedFirst(t *testing.T) {
	job := newJob("j", ptr.To[int32](3), ptr.To[int32](1))
	ok := newPod(job, podSpec{name: "ok", phase: corev1.PodSucceeded, index: -1})
	bad := newPod(job, podSpec{name: "bad", phase: corev1.PodFailed, index: -1})
	f := newFixture(t, job, ok, bad)
	actions := f.mustSync("j")
	var order []string
	for _, a := range actions {
		order = append(order, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	s := summarize(actions)
	if len(s.statuses) != 2 {
		t.Fatalf("status writes %d, want 2 (actions %v)", len(s.statuses), order)
	}
	first, second := s.statuses[0], s.statuses[1]
	u := first.Status.UncountedTerminatedPods
	if !slices.Equal(u.Succeeded, []types.UID{"uid-ok"}) || !slices.Equal(u.Failed, []types.UID{"uid-bad"}) {
		t.Errorf("first write uncounted %+v, want ok succeeded and bad failed", u)
	}
	if first.Status.Succeeded != 0 || first.Status.Failed != 0 {
		t.Errorf("first write counters %d/%d, want 0/0", first.Status.Succeeded, first.Status.Failed)
	}
	if u := second.Status.UncountedTerminatedPods; len(u.Succeeded)+len(u.Failed) != 0 || second.Status.Succeeded != 1 || second.Status.Failed != 1 {
		t.Errorf("second write: uncounted %+v, succeeded %d, failed %d; want none, 1, 1", u, second.Status.Succeeded, second.Status.Failed)
	}
	// The finalizer patches come between the two writes.
	firstStatus, lastStatus, firstPatch, lastPatch := -1, -1, -1, -1
	for i, o := range order {
		switch o {
		case "update jobs/status":
			if firstStatus < 0 {
				firstStatus = i
			}
			lastStatus = i
		case "patch pods/":
			if firstPatch < 0 {
				firstPatch = i
			}
			lastPatch = i
		}
	}
	if firstStatus >= firstPatch || lastPatch >= lastStatus {
		t.Errorf("action order %v: want status, patches, status", order)
	}
	for _, p := range f.storedPods() {
		if hasTrackingFinalizer(p) && (p.Name == "ok" || p.Name == "bad") {
			t.Errorf("pod %s keeps its finalizer", p.Name)
		}
	}
}

// TestSyncCountsDeletedPods checks that a pod recorded as uncounted and
// deleted since (its finalizer was removed) is moved to the counters.
func TestSyncCountsDeletedPods(t *testing.T) {
	job := newJob("j", ptr.To[int32](2), ptr.To[int32](1))
	job.Status.StartTime = ptr.To(metav1.NewTime(t0))
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"uid-gone"}}
	run := newPod(job, podSpec{name: "run", phase: corev1.PodRunning, index: -1})
	f := newFixture(t, job, run)
	got := summarize(f.mustSync("j")).last(t)
	checkStatus(t, got, wantStatus{active: 1, succeeded: 1})
	if u := got.Status.UncountedTerminatedPods; len(u.Succeeded) != 0 {
		t.Errorf("uncounted %+v, want none", u)
	}
}

// TestSyncExpectations checks that a sync with unmet expectations creates
// nothing and that observing the creations lets the next one act.
func TestSyncExpectations(t *testing.T) {
	job := newJob("j", ptr.To[int32](4), ptr.To[int32](2))
	f := newFixture(t, job)
	if s := summarize(f.mustSync("j")); len(s.created) != 2 {
		t.Fatalf("first sync created %d pods, want 2", len(s.created))
	}
	// The cache has not seen the pods yet: no more creations.
	if s := summarize(f.mustSync("j")); len(s.created) != 0 {
		t.Fatalf("sync with unmet expectations created %d pods", len(s.created))
	}
	f.resync() // the informer reports the pods: expectations met
	if !f.c.expectations.SatisfiedExpectations("ns/j") {
		t.Fatal("expectations not satisfied after the pods were seen")
	}
	for _, p := range f.storedPods() {
		f.setPodPhase(p.Name, corev1.PodSucceeded, t0)
	}
	f.resync()
	s := summarize(f.mustSync("j"))
	if len(s.created) != 2 {
		t.Errorf("created %d pods after two successes, want 2", len(s.created))
	}
	checkStatus(t, s.last(t), wantStatus{active: 2, succeeded: 2})
}

// TestJobLifecycle runs a Job with completions 3 and parallelism 2 to
// completion, playing the kubelet and the informers.
func TestJobLifecycle(t *testing.T) {
	job := newJob("j", ptr.To[int32](3), ptr.To[int32](2))
	f := newFixture(t, job)
	for round := 0; round < 6; round++ {
		f.mustSync("j")
		f.resync()
		if isFinished(f.storedJob("j")) {
			break
		}
		for _, p := range f.storedPods() {
			if p.Status.Phase == "" {
				f.setPodPhase(p.Name, corev1.PodSucceeded, f.clock.Now())
			}
		}
		f.resync()
	}
	got := f.storedJob("j")
	if trueCondition(got, batchv1.JobComplete) == nil {
		t.Fatalf("job not complete: %v %+v", conditions(got), got.Status)
	}
	checkStatus(t, got, wantStatus{succeeded: 3})
	pods := f.storedPods()
	if len(pods) != 3 {
		t.Errorf("%d pods, want 3", len(pods))
	}
	for _, p := range pods {
		if hasTrackingFinalizer(p) {
			t.Errorf("pod %s keeps the tracking finalizer", p.Name)
		}
	}
	// Finished: later syncs do nothing.
	if s := summarize(f.mustSync("j")); len(s.statuses)+len(s.created)+len(s.patched) != 0 {
		t.Errorf("sync of a finished job acted: %+v", s)
	}
}

// TestBackoffLimitThenFailed follows a Job over its backoff limit until it
// is Failed, once its last pod is gone.
func TestBackoffLimitThenFailed(t *testing.T) {
	job := newJob("j", ptr.To[int32](3), ptr.To[int32](2))
	job.Spec.BackoffLimit = ptr.To[int32](1)
	f := newFixture(t, job, newPod(job, podSpec{name: "f1", phase: corev1.PodFailed, index: -1}),
		newPod(job, podSpec{name: "f2", phase: corev1.PodFailed, index: -1}),
		newPod(job, podSpec{name: "run", phase: corev1.PodRunning, index: -1}))
	f.mustSync("j")
	f.resync()
	got := f.storedJob("j")
	if c := conditions(got); !slices.Equal(c, []string{"FailureTarget=True/BackoffLimitExceeded"}) {
		t.Fatalf("after first sync conditions %v", c)
	}
	f.mustSync("j")
	got = f.storedJob("j")
	if c := conditions(got); !slices.Equal(c, []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}) {
		t.Fatalf("after second sync conditions %v", c)
	}
	checkStatus(t, got, wantStatus{failed: 3})
	if got.Status.CompletionTime != nil {
		t.Errorf("failed job has completionTime %v", got.Status.CompletionTime)
	}
	if ev := f.events(); !slices.Contains(ev, "Warning BackoffLimitExceeded Job has reached the specified backoff limit") {
		t.Errorf("events %q", ev)
	}
}

// TestRequeueTimes checks that the controller comes back when the pod
// failure back-off and the active deadline run out.
func TestRequeueTimes(t *testing.T) {
	t.Run("pod failure back-off", func(t *testing.T) {
		job := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
		// Two failures: 20 s back-off, 2 s of it gone.
		f := newFixture(t, job,
			newPod(job, podSpec{name: "f1", phase: corev1.PodFailed, index: -1, finished: t0.Add(-3 * time.Second)}),
			newPod(job, podSpec{name: "f2", phase: corev1.PodFailed, index: -1, finished: t0.Add(-2 * time.Second)}))
		if s := summarize(f.mustSync("j")); len(s.created) != 0 {
			t.Fatalf("created %d pods during back-off", len(s.created))
		}
		if f.queuedAfter("ns/j", 18*time.Second-time.Millisecond) {
			t.Fatal("queued before the back-off ran out")
		}
		if !f.queuedAfter("ns/j", time.Millisecond) {
			t.Fatal("not queued when the back-off ran out")
		}
	})
	t.Run("active deadline", func(t *testing.T) {
		job := newJob("j", ptr.To[int32](1), ptr.To[int32](1))
		job.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
		f := newFixture(t, job)
		f.mustSync("j")
		if f.queuedAfter("ns/j", 30*time.Second-time.Millisecond) {
			t.Fatal("queued before the deadline")
		}
		if !f.queuedAfter("ns/j", time.Millisecond) {
			t.Fatal("not queued at the deadline")
		}
		f.resync()
		f.clock.Step(time.Millisecond)
		s := summarize(f.mustSync("j"))
		if c := conditions(s.last(t)); !slices.Contains(c, "FailureTarget=True/DeadlineExceeded") {
			t.Errorf("conditions after the deadline %v", c)
		}
	})
}

func TestSyncIndexed(t *testing.T) {
	tests := []struct {
		name          string
		job           *batchv1.Job
		pods          []podSpec
		wantIndexes   []int // of the pods created
		wantDeleted   []string
		wantCompleted string
		wantFailedIx  *string
		wantStatus    wantStatus
		wantConds     []string
	}{
		{
			name:        "creates the lowest pending indexes",
			job:         indexed(newJob("j", ptr.To[int32](4), ptr.To[int32](2))),
			pods:        []podSpec{{name: "p0", phase: corev1.PodSucceeded, index: 0}, {name: "p2", phase: corev1.PodRunning, index: 2}},
			wantIndexes: []int{1},
			wantStatus:  wantStatus{active: 2, succeeded: 1},
			// Index 0 is done.
			wantCompleted: "0",
		},
		{
			name: "a duplicated index loses its less valuable pod",
			job:  indexed(newJob("j", ptr.To[int32](2), ptr.To[int32](2))),
			pods: []podSpec{
				{name: "a", phase: corev1.PodRunning, index: 0, ready: true},
				{name: "b", phase: corev1.PodRunning, index: 0},
			},
			wantDeleted: []string{"b"},
			wantStatus:  wantStatus{active: 1, ready: 1, terminating: 1},
		},
		{
			name: "pods with no or an out-of-range index go",
			job:  indexed(newJob("j", ptr.To[int32](2), ptr.To[int32](2))),
			pods: []podSpec{
				{name: "none", phase: corev1.PodRunning, index: -1},
				{name: "far", phase: corev1.PodRunning, index: 7},
				{name: "ok", phase: corev1.PodRunning, index: 1},
			},
			wantDeleted: []string{"far", "none"},
			wantStatus:  wantStatus{active: 1, terminating: 2},
		},
		{
			name: "all indexes done completes the job",
			job:  indexed(newJob("j", ptr.To[int32](3), ptr.To[int32](3))),
			pods: []podSpec{
				{name: "p0", phase: corev1.PodSucceeded, index: 0},
				{name: "p1", phase: corev1.PodSucceeded, index: 1},
				{name: "p2", phase: corev1.PodSucceeded, index: 2},
				// A second success of index 1 counts once.
				{name: "p1b", phase: corev1.PodSucceeded, index: 1},
			},
			wantCompleted: "0-2",
			wantStatus:    wantStatus{succeeded: 3},
			wantConds:     []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"},
		},
		{
			name: "success policy met: the rest is deleted",
			job: func() *batchv1.Job {
				j := indexed(newJob("j", ptr.To[int32](5), ptr.To[int32](3)))
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
				return j
			}(),
			pods: []podSpec{
				{name: "p0", phase: corev1.PodSucceeded, index: 0},
				{name: "p1", phase: corev1.PodRunning, index: 1},
				{name: "p2", phase: corev1.PodRunning, index: 2},
			},
			wantDeleted:   []string{"p1", "p2"},
			wantCompleted: "0",
			// Deleted pods of a succeeding Job are not failures.
			wantStatus: wantStatus{succeeded: 1, terminating: 2},
			wantConds:  []string{"SuccessCriteriaMet=True/SuccessPolicy"},
		},
		{
			name: "an index out of retries fails the job once the others are done",
			job: func() *batchv1.Job {
				j := indexed(newJob("j", ptr.To[int32](2), ptr.To[int32](2)))
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
				j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
				return j
			}(),
			pods: []podSpec{
				{name: "p0", phase: corev1.PodFailed, index: 0}, // failure count annotation set below
				{name: "p1", phase: corev1.PodSucceeded, index: 1},
			},
			wantCompleted: "1",
			wantFailedIx:  ptr.To("0"),
			wantStatus:    wantStatus{succeeded: 1, failed: 1},
			wantConds:     []string{"FailureTarget=True/FailedIndexes", "Failed=True/FailedIndexes"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var podObjs []runtime.Object
			for _, s := range tc.pods {
				p := newPod(tc.job, s)
				if s.index >= 0 && hasBackoffLimitPerIndex(tc.job) {
					p.Annotations[batchv1.JobIndexFailureCountAnnotation] = "1"
				}
				if s.index > 2 {
					// newPod only sets valid-looking indexes; force it.
					p.Annotations[batchv1.JobCompletionIndexAnnotation] = fmt.Sprint(s.index)
				}
				podObjs = append(podObjs, p)
			}
			f := newFixture(t, objs(tc.job, podObjs)...)
			s := summarize(f.mustSync("j"))
			var gotIx []int
			for _, p := range s.created {
				ix := completionIndex(p)
				gotIx = append(gotIx, ix)
				want := fmt.Sprint(ix)
				if p.Labels[batchv1.JobCompletionIndexAnnotation] != want {
					t.Errorf("pod of index %d has index label %q", ix, p.Labels[batchv1.JobCompletionIndexAnnotation])
				}
				if p.Spec.Hostname != fmt.Sprintf("j-%d", ix) || p.GenerateName != fmt.Sprintf("j-%d-", ix) {
					t.Errorf("pod of index %d: hostname %q, generateName %q", ix, p.Spec.Hostname, p.GenerateName)
				}
				env := p.Spec.Containers[0].Env
				if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil ||
					env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
					t.Errorf("pod env %+v", env)
				}
			}
			slices.Sort(gotIx)
			if !slices.Equal(gotIx, tc.wantIndexes) {
				t.Errorf("created indexes %v, want %v", gotIx, tc.wantIndexes)
			}
			if !slices.Equal(s.deleted, sortedNames(tc.wantDeleted...)) {
				t.Errorf("deleted %v, want %v", s.deleted, tc.wantDeleted)
			}
			got := s.last(t)
			checkStatus(t, got, tc.wantStatus)
			if got.Status.CompletedIndexes != tc.wantCompleted {
				t.Errorf("completedIndexes %q, want %q", got.Status.CompletedIndexes, tc.wantCompleted)
			}
			if !ptr.Equal(got.Status.FailedIndexes, tc.wantFailedIx) {
				t.Errorf("failedIndexes %v, want %v", ptr.Deref(got.Status.FailedIndexes, "<nil>"), ptr.Deref(tc.wantFailedIx, "<nil>"))
			}
			if c := conditions(got); !slices.Equal(c, tc.wantConds) {
				t.Errorf("conditions %v, want %v", c, tc.wantConds)
			}
		})
	}
}

// TestBackoffLimitPerIndexReplacement checks that a failed index is retried
// with its failure count carried over, and that the failed pod keeps its
// finalizer until the replacement exists.
func TestBackoffLimitPerIndexReplacement(t *testing.T) {
	job := indexed(newJob("j", ptr.To[int32](1), ptr.To[int32](1)))
	job.Spec.BackoffLimitPerIndex = ptr.To[int32](2)
	failed := newPod(job, podSpec{name: "p0", phase: corev1.PodFailed, index: 0})
	f := newFixture(t, job, failed)
	s := summarize(f.mustSync("j"))
	if len(s.created) != 1 {
		t.Fatalf("created %d pods, want 1", len(s.created))
	}
	if got := s.created[0].Annotations[batchv1.JobIndexFailureCountAnnotation]; got != "1" {
		t.Errorf("replacement failure count %q, want 1", got)
	}
	if slices.Contains(s.patched, "p0") {
		t.Error("failed pod lost its finalizer before its replacement was seen")
	}
	f.resync()
	s = summarize(f.mustSync("j"))
	if !slices.Contains(s.patched, "p0") {
		t.Errorf("failed pod's finalizer not removed once replaced (patched %v)", s.patched)
	}
	got := f.storedJob("j")
	if got.Status.Failed != 1 || ptr.Deref(got.Status.FailedIndexes, "x") != "" {
		t.Errorf("failed %d, failedIndexes %v; want 1 and empty", got.Status.Failed, ptr.Deref(got.Status.FailedIndexes, "<nil>"))
	}
}

// TestPodEvents checks the pod handlers: creations lower expectations,
// orphans with the finalizer are queued for clean-up.
func TestPodEvents(t *testing.T) {
	job := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
	f := newFixture(t, job)
	f.c.expectations.ExpectCreations("ns/j", 1)
	f.c.addPod(newPod(job, podSpec{name: "a", phase: corev1.PodPending, index: -1}))
	if !f.c.expectations.SatisfiedExpectations("ns/j") {
		t.Error("add of an owned pod did not meet the creation expectation")
	}
	f.c.expectations.ExpectDeletions("ns/j", 1)
	f.c.deletePod(newPod(job, podSpec{name: "a", phase: corev1.PodPending, index: -1}), true)
	if !f.c.expectations.SatisfiedExpectations("ns/j") {
		t.Error("delete of an owned pod did not meet the deletion expectation")
	}
	orphan := newPod(job, podSpec{name: "o", phase: corev1.PodSucceeded, index: -1, orphan: true})
	orphan.Labels = map[string]string{"unrelated": "yes"}
	f.c.addPod(orphan)
	if f.c.orphanQueue.Len() != 1 {
		t.Fatalf("orphan queue has %d items, want 1", f.c.orphanQueue.Len())
	}
}

// TestSyncOrphan checks which pods lose their tracking finalizer outside a
// Job sync.
func TestSyncOrphan(t *testing.T) {
	job := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
	done := newJob("done", ptr.To[int32](1), ptr.To[int32](1))
	done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	other := newPod(job, podSpec{name: "rs-pod", phase: corev1.PodRunning, index: -1})
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)}}
	pods := []*corev1.Pod{
		newPod(job, podSpec{name: "orphan", phase: corev1.PodSucceeded, index: -1, orphan: true}),
		newPod(job, podSpec{name: "owned", phase: corev1.PodRunning, index: -1}),
		newPod(done, podSpec{name: "of-done", phase: corev1.PodSucceeded, index: -1}),
		other,
	}
	gone := newPod(job, podSpec{name: "lost", phase: corev1.PodSucceeded, index: -1})
	gone.OwnerReferences[0].UID = "someone-else"
	pods = append(pods, gone)
	o := []runtime.Object{job, done}
	for _, p := range pods {
		o = append(o, p)
	}
	f := newFixture(t, o...)
	for _, p := range pods {
		f.client.ClearActions()
		if err := f.c.syncOrphan(t.Context(), orphanKey{namespace: testNS, name: p.Name}); err != nil {
			t.Fatalf("syncOrphan %s: %v", p.Name, err)
		}
		patched := len(summarize(f.client.Actions()).patched) == 1
		want := p.Name == "orphan" || p.Name == "of-done" || p.Name == "lost"
		if patched != want {
			t.Errorf("pod %s: finalizer removed %v, want %v", p.Name, patched, want)
		}
	}
	// By selector: every pod of the finished Job.
	sel := metav1.FormatLabelSelector(done.Spec.Selector)
	f.client.ClearActions()
	if err := f.c.syncOrphan(t.Context(), orphanKey{namespace: testNS, selector: strings.ReplaceAll(sel, " ", "")}); err != nil {
		t.Fatal(err)
	}
	if got := summarize(f.client.Actions()).patched; !slices.Equal(got, []string{"of-done"}) {
		t.Errorf("selector clean-up patched %v, want [of-done]", got)
	}
}
