package cronjob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the time zone tests do not depend on the host's zoneinfo

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
	batchapi "github.com/k1s/k1s/internal/apis/batch"
)

// at is a time of day on 2026-05-06 UTC.
func at(hour, minute, second int) time.Time {
	return time.Date(2026, 5, 6, hour, minute, second, 0, time.UTC)
}

func newCronJob(schedule string, created time.Time) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cj", UID: "cj-uid", ResourceVersion: "1", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule:          schedule,
			ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "y"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
}

// jobState is a Job of the CronJob for the sync tests.
type jobState struct {
	name     string
	finished batchv1.JobConditionType // "" running
	started  time.Time
	done     time.Time // completion time of Complete jobs
	listed   bool      // in status.active
	notCache bool      // in the API but not in the informer cache
}

func (s jobState) job(cj *batchv1.CronJob) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: s.name, UID: types.UID("uid-" + s.name), ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)}},
	}
	if !s.started.IsZero() {
		j.Status.StartTime = ptr.To(metav1.NewTime(s.started))
	}
	if s.finished != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: s.finished, Status: corev1.ConditionTrue}}
	}
	if !s.done.IsZero() {
		j.Status.CompletionTime = ptr.To(metav1.NewTime(s.done))
	}
	return j
}

type fixture struct {
	c        *Controller
	client   *fake.Clientset
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
}

func newFixture(t *testing.T, now time.Time, cj *batchv1.CronJob, jobs []jobState) *fixture {
	t.Helper()
	objs := []runtime.Object{cj}
	var cached []*batchv1.Job
	for _, s := range jobs {
		j := s.job(cj)
		objs = append(objs, j)
		if !s.notCache {
			cached = append(cached, j)
		}
		if s.listed {
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: j.Name, UID: j.UID, APIVersion: "batch/v1"})
		}
	}
	f := &fixture{client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(100), clock: testingclock.NewFakeClock(now)}
	f.client.PrependReactor("create", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		j := a.(clienttesting.CreateAction).GetObject().(*batchv1.Job)
		j.UID = types.UID("uid-" + j.Name)
		return false, nil, nil
	})
	// Status writes must pass the apiserver's validation.
	f.client.PrependReactor("update", "cronjobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			cj := a.(clienttesting.UpdateAction).GetObject().(*batchv1.CronJob)
			if errs := batchapi.ValidateCronJobStatusUpdate(cj, cj); len(errs) > 0 {
				t.Errorf("invalid cronjob status: %v", errs.ToAggregate())
			}
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(f.client, 0)
	c, err := New(f.client, factory.Batch().V1().Jobs(), factory.Batch().V1().CronJobs(), f.recorder, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	f.c = c
	if err := factory.Batch().V1().CronJobs().Informer().GetStore().Add(cj); err != nil {
		t.Fatal(err)
	}
	for _, j := range cached {
		if err := factory.Batch().V1().Jobs().Informer().GetIndexer().Add(j); err != nil {
			t.Fatal(err)
		}
	}
	f.client.ClearActions()
	return f
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestSync(t *testing.T) {
	tests := []struct {
		name        string
		cj          func() *batchv1.CronJob
		jobs        []jobState
		now         time.Time
		wantJob     string // name of the Job created, "" none
		wantDeleted []string
		wantActive  []string // status.active after the sync; nil: no status write
		wantLast    time.Time
		wantSuccess time.Time
		wantRequeue time.Duration // -1: none
		wantEvents  []string      // prefixes
	}{
		{
			name:        "before the first time: wait for it",
			cj:          func() *batchv1.CronJob { return newCronJob("*/1 * * * *", at(10, 0, 30)) },
			now:         at(10, 0, 50),
			wantRequeue: 10*time.Second + nextScheduleDelta,
		},
		{
			name:        "the time has come",
			cj:          func() *batchv1.CronJob { return newCronJob("*/1 * * * *", at(9, 59, 30)) },
			now:         at(10, 0, 5),
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantActive:  []string{fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Second + nextScheduleDelta,
			wantEvents:  []string{"Normal SuccessfulCreate Created job cj-"},
		},
		{
			name:        "several times missed: only the latest runs",
			cj:          func() *batchv1.CronJob { return newCronJob("0 * * * *", at(6, 30, 0)) },
			now:         at(10, 10, 0),
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantActive:  []string{fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 50*time.Minute + nextScheduleDelta,
		},
		{
			name:        "more than 100 missed times: warned, the latest runs",
			cj:          func() *batchv1.CronJob { return newCronJob("*/1 * * * *", at(7, 0, 0)) },
			now:         at(10, 0, 30),
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantActive:  []string{fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 30*time.Second + nextScheduleDelta,
			wantEvents:  []string{"Warning TooManyMissedTimes too many missed start times"},
		},
		{
			name: "startingDeadlineSeconds: a time too old is skipped",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("0 * * * *", at(9, 30, 0))
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](60)
				return cj
			},
			now:         at(10, 5, 0),
			wantRequeue: 55*time.Minute + nextScheduleDelta,
		},
		{
			name: "startingDeadlineSeconds: a time within it runs",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("0 * * * *", at(9, 30, 0))
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](600)
				return cj
			},
			now:         at(10, 5, 0),
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantActive:  []string{fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Minute + nextScheduleDelta,
		},
		{
			name: "suspended: nothing, no requeue",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/1 * * * *", at(9, 0, 0))
				cj.Spec.Suspend = ptr.To(true)
				return cj
			},
			now:         at(10, 0, 5),
			wantRequeue: -1,
		},
		{
			name: "already run for this time",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/1 * * * *", at(9, 0, 0))
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(10, 0, 0)))
				return cj
			},
			now:         at(10, 0, 5),
			wantRequeue: 55*time.Second + nextScheduleDelta,
		},
		{
			name: "Forbid: a running job blocks the next",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/1 * * * *", at(9, 0, 0))
				cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(9, 59, 0)))
				return cj
			},
			jobs:        []jobState{{name: "running", listed: true}},
			now:         at(10, 0, 5),
			wantRequeue: 55*time.Second + nextScheduleDelta,
			wantEvents:  []string{"Normal JobAlreadyActive Not starting job because prior execution is running"},
		},
		{
			name: "Replace: the running job is deleted for the next",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/1 * * * *", at(9, 0, 0))
				cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(9, 59, 0)))
				return cj
			},
			jobs:        []jobState{{name: "running", listed: true}},
			now:         at(10, 0, 5),
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantDeleted: []string{"running"},
			wantActive:  []string{fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Second + nextScheduleDelta,
			wantEvents:  []string{"Normal SuccessfulDelete Deleted job running"},
		},
		{
			name: "Allow: jobs run side by side",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/1 * * * *", at(9, 0, 0))
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(9, 59, 0)))
				return cj
			},
			jobs:        []jobState{{name: "running", listed: true}},
			now:         at(10, 0, 5),
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantActive:  []string{"running", fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Second + nextScheduleDelta,
		},
		{
			name: "a finished job leaves status.active; its completion is recorded",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("0 * * * *", at(9, 0, 0))
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(10, 0, 0)))
				return cj
			},
			jobs:        []jobState{{name: "done", listed: true, finished: batchv1.JobComplete, done: at(10, 3, 0)}},
			now:         at(10, 5, 0),
			wantActive:  []string{},
			wantLast:    at(10, 0, 0),
			wantSuccess: at(10, 3, 0),
			wantRequeue: 55*time.Minute + nextScheduleDelta,
			wantEvents:  []string{"Normal SawCompletedJob Saw completed job: done, condition: Complete"},
		},
		{
			name: "an active job that is gone is dropped",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("0 * * * *", at(9, 0, 0))
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(10, 0, 0)))
				cj.Status.Active = []corev1.ObjectReference{{Kind: "Job", Namespace: "ns", Name: "vanished", UID: "uid-vanished"}}
				return cj
			},
			now:         at(10, 5, 0),
			wantActive:  []string{},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Minute + nextScheduleDelta,
			wantEvents:  []string{"Normal MissingJob Active job went missing: vanished"},
		},
		{
			name: "history limits delete the oldest finished jobs",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("0 * * * *", at(9, 0, 0))
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(10, 0, 0)))
				cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
				cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](0)
				return cj
			},
			jobs: []jobState{
				{name: "ok-1", finished: batchv1.JobComplete, started: at(7, 0, 0)},
				{name: "ok-3", finished: batchv1.JobComplete, started: at(9, 0, 0)},
				{name: "ok-2", finished: batchv1.JobComplete, started: at(8, 0, 0)},
				{name: "bad", finished: batchv1.JobFailed, started: at(8, 30, 0)},
				{name: "run", started: at(10, 0, 0), listed: true},
			},
			now:         at(10, 5, 0),
			wantDeleted: []string{"bad", "ok-1", "ok-2"},
			wantActive:  []string{"run"},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Minute + nextScheduleDelta,
		},
		{
			name: "the schedule is read in spec.timeZone",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("0 9 * * *", at(0, 0, 0).Add(-time.Hour))
				cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
				return cj
			},
			// 09:00 in Tokyo is 00:00 UTC.
			now:         at(0, 0, 30),
			wantJob:     fmt.Sprintf("cj-%d", at(0, 0, 0).Unix()/60),
			wantActive:  []string{fmt.Sprintf("cj-%d", at(0, 0, 0).Unix()/60)},
			wantLast:    at(0, 0, 0),
			wantRequeue: 24*time.Hour - 30*time.Second + nextScheduleDelta,
		},
		{
			name: "an unknown time zone starts nothing",
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/1 * * * *", at(9, 0, 0))
				cj.Spec.TimeZone = ptr.To("Mars/Olympus_Mons")
				return cj
			},
			now:         at(10, 0, 5),
			wantRequeue: -1,
			wantEvents:  []string{`Warning UnknownTimeZone invalid timeZone: "Mars/Olympus_Mons"`},
		},
		{
			name:        "an unparseable schedule starts nothing",
			cj:          func() *batchv1.CronJob { return newCronJob("every minute", at(9, 0, 0)) },
			now:         at(10, 0, 5),
			wantRequeue: -1,
			wantEvents:  []string{`Warning UnparseableSchedule unparseable schedule: "every minute"`},
		},
		{
			name: "a job created before a lost status write is taken over",
			cj:   func() *batchv1.CronJob { return newCronJob("*/1 * * * *", at(9, 59, 30)) },
			jobs: []jobState{{name: fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60), notCache: true}},
			now:  at(10, 0, 5),
			// The create fails (it exists); the Job is listed anyway.
			wantJob:     fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60),
			wantActive:  []string{fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)},
			wantLast:    at(10, 0, 0),
			wantRequeue: 55*time.Second + nextScheduleDelta,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.now, tc.cj(), tc.jobs)
			requeue, err := f.c.sync(context.Background(), "ns/cj")
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			var created *batchv1.Job
			var deleted []string
			var status *batchv1.CronJob
			for _, a := range f.client.Actions() {
				switch {
				case a.GetVerb() == "create" && a.GetResource().Resource == "jobs":
					created = a.(clienttesting.CreateAction).GetObject().(*batchv1.Job)
				case a.GetVerb() == "delete" && a.GetResource().Resource == "jobs":
					d := a.(clienttesting.DeleteAction)
					deleted = append(deleted, d.GetName())
					if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
						t.Errorf("job %s deleted with propagation %v, want Background", d.GetName(), p)
					}
				case a.GetVerb() == "update" && a.GetSubresource() == "status":
					status = a.(clienttesting.UpdateAction).GetObject().(*batchv1.CronJob)
				}
			}
			gotJob := ""
			if created != nil {
				gotJob = created.Name
				if created.Labels["app"] != "x" || created.Annotations["note"] != "y" {
					t.Errorf("job metadata from the template lost: %v %v", created.Labels, created.Annotations)
				}
				if ref := metav1.GetControllerOf(created); ref == nil || ref.UID != "cj-uid" || ref.Kind != "CronJob" {
					t.Errorf("job controller %+v", ref)
				}
				if _, ok := created.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; !ok {
					t.Errorf("job lacks the scheduled-timestamp annotation")
				}
			}
			if gotJob != tc.wantJob {
				t.Errorf("created job %q, want %q", gotJob, tc.wantJob)
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			switch {
			case tc.wantActive == nil && status != nil:
				t.Errorf("status written: %+v", status.Status)
			case tc.wantActive != nil && status == nil:
				t.Errorf("no status written")
			case status != nil:
				var active []string
				for _, r := range status.Status.Active {
					active = append(active, r.Name)
				}
				if !slices.Equal(active, tc.wantActive) && !(len(active) == 0 && len(tc.wantActive) == 0) {
					t.Errorf("active %v, want %v", active, tc.wantActive)
				}
				if got := status.Status.LastScheduleTime; got == nil || !got.Time.Equal(tc.wantLast) {
					t.Errorf("lastScheduleTime %v, want %v", got, tc.wantLast)
				}
				got := status.Status.LastSuccessfulTime
				if (got == nil) != tc.wantSuccess.IsZero() || (got != nil && !got.Time.Equal(tc.wantSuccess)) {
					t.Errorf("lastSuccessfulTime %v, want %v", got, tc.wantSuccess)
				}
			}
			switch {
			case tc.wantRequeue < 0 && requeue != nil:
				t.Errorf("requeue after %v, want none", *requeue)
			case tc.wantRequeue >= 0 && (requeue == nil || *requeue != tc.wantRequeue):
				t.Errorf("requeue after %v, want %v", ptr.Deref(requeue, -1), tc.wantRequeue)
			}
			events := f.events()
			for _, w := range tc.wantEvents {
				if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, w) }) {
					t.Errorf("no event %q in %q", w, events)
				}
			}
		})
	}
}

func TestJobFromTemplate(t *testing.T) {
	cj := newCronJob("0 9 * * *", at(0, 0, 0))
	cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
	cj.Spec.JobTemplate.Spec.BackoffLimit = ptr.To[int32](2)
	j, err := jobFromTemplate(cj, at(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("cj-%d", at(0, 0, 0).Unix()/60); j.Name != want || j.Namespace != "ns" {
		t.Errorf("job %s/%s, want ns/%s", j.Namespace, j.Name, want)
	}
	if got := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-05-06T09:00:00+09:00" {
		t.Errorf("scheduled timestamp %q, want the time in the CronJob's zone", got)
	}
	if ptr.Deref(j.Spec.BackoffLimit, 0) != 2 || len(j.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("job spec not copied from the template: %+v", j.Spec)
	}
	// The Job does not share the template's maps.
	j.Labels["app"] = "changed"
	if cj.Spec.JobTemplate.Labels["app"] != "x" {
		t.Error("job labels alias the template's")
	}
}

func TestMostRecentScheduleTime(t *testing.T) {
	tests := []struct {
		name       string
		schedule   string
		created    time.Time
		last       time.Time
		deadline   *int64
		now        time.Time
		want       time.Time // zero: none
		wantMissed missed
	}{
		{name: "nothing due", schedule: "0 * * * *", created: at(9, 10, 0), now: at(9, 59, 0)},
		{name: "one due", schedule: "0 * * * *", created: at(9, 10, 0), now: at(10, 0, 0), want: at(10, 0, 0)},
		{name: "from the last schedule time", schedule: "0 * * * *", created: at(1, 0, 0), last: at(9, 0, 0), now: at(10, 30, 0), want: at(10, 0, 0)},
		{name: "two due", schedule: "0 * * * *", created: at(8, 10, 0), now: at(10, 1, 0), want: at(10, 0, 0), wantMissed: fewMissed},
		{name: "101 due", schedule: "*/1 * * * *", created: at(8, 0, 30), now: at(9, 41, 0), want: at(9, 41, 0), wantMissed: manyMissed},
		{name: "100 due", schedule: "*/1 * * * *", created: at(8, 0, 30), now: at(9, 40, 59), want: at(9, 40, 0), wantMissed: fewMissed},
		{name: "deadline moves the start", schedule: "*/1 * * * *", created: at(1, 0, 0), deadline: ptr.To[int64](90), now: at(9, 40, 59), want: at(9, 40, 0), wantMissed: noneMissed},
		{name: "irregular schedule", schedule: "0 9,17 * * *", created: at(0, 0, 0).Add(-48 * time.Hour), now: at(12, 0, 0), want: at(9, 0, 0), wantMissed: fewMissed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cj := newCronJob(tc.schedule, tc.created)
			if !tc.last.IsZero() {
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(tc.last))
			}
			cj.Spec.StartingDeadlineSeconds = tc.deadline
			sched, err := parseSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			_, got, m, err := mostRecentScheduleTime(cj, tc.now, sched, true)
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != tc.want.IsZero() || (got != nil && !got.Equal(tc.want)) {
				t.Errorf("most recent %v, want %v", got, tc.want)
			}
			if m != tc.wantMissed {
				t.Errorf("missed %v, want %v", m, tc.wantMissed)
			}
		})
	}
}

// TestUpdateCronJobSchedule checks that a changed schedule queues the
// CronJob for the new schedule's next time, and a bad one not at all.
func TestUpdateCronJobSchedule(t *testing.T) {
	cj := newCronJob("0 * * * *", at(9, 0, 0))
	f := newFixture(t, at(10, 0, 30), cj, nil)
	updated := cj.DeepCopy()
	updated.Spec.Schedule = "*/5 * * * *"
	f.c.updateCronJob(cj, updated)
	if f.c.queue.Len() != 0 {
		t.Fatal("queued at once, want at the next time")
	}
	f.clock.Step(4*time.Minute + 30*time.Second + 50*time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if f.c.queue.Len() != 0 {
		t.Fatal("queued before the next time")
	}
	f.clock.Step(100 * time.Millisecond)
	waitLen(t, f.c, 1)

	bad := cj.DeepCopy()
	bad.Spec.Schedule = "61 * * * *"
	f.c.updateCronJob(cj, bad)
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning UnParseableCronJobSchedule") {
		t.Errorf("events %q", ev)
	}
}

func waitLen(t *testing.T, c *Controller, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.queue.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue length %d, want %d", c.queue.Len(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunOnSchedule runs the controller through its Descriptor on a fake
// clock: nothing happens until the clock reaches the next minute, then the
// Job is created.
func TestRunOnSchedule(t *testing.T) {
	cj := newCronJob("*/1 * * * *", at(10, 0, 10))
	client := fake.NewClientset(cj)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(at(10, 0, 30))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	d := Descriptor()
	if d.Name != "cronjob-controller" || d.ServiceAccount != "cronjob-controller" || !slices.Equal(d.Aliases, []string{"cronjob"}) {
		t.Fatalf("descriptor %+v", d)
	}
	err := d.Start(ctx, manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   &managertesting.ClientBuilder{Clientset: client},
		InformerFactory: factory,
		EventRecorder:   func(string) record.EventRecorder { return record.NewFakeRecorder(100) },
		Clock:           clk,
		Go:              func(fn func(context.Context) error) { go func() { errc <- fn(ctx) }() },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	jobs := func() []batchv1.Job {
		l, err := client.BatchV1().Jobs("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(jobs()); n != 0 {
		t.Fatalf("%d jobs before the schedule", n)
	}
	clk.SetTime(at(10, 1, 0).Add(nextScheduleDelta))
	deadline := time.Now().Add(5 * time.Second)
	for len(jobs()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no job after the scheduled time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, want := jobs()[0].Name, fmt.Sprintf("cj-%d", at(10, 1, 0).Unix()/60); got != want {
		t.Errorf("job %q, want %q", got, want)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Run did not return after cancel")
	}
}

// TestSyncJobListedOnlyInAPI checks that a running Job missing from the
// cached status.active but listed by the apiserver (a status write the
// cache has not caught up with) is not reported as unexpected and stays
// listed next to the Job started in the same sync.
func TestSyncJobListedOnlyInAPI(t *testing.T) {
	cj := newCronJob("*/1 * * * *", at(9, 0, 0))
	cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(9, 59, 0)))
	f := newFixture(t, at(10, 0, 5), cj, []jobState{{name: "run"}})
	fresh := cj.DeepCopy()
	fresh.Status.Active = []corev1.ObjectReference{{Kind: "Job", Namespace: "ns", Name: "run", UID: "uid-run"}}
	if err := f.client.Tracker().Update(batchv1.SchemeGroupVersion.WithResource("cronjobs"), fresh, "ns"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.sync(context.Background(), "ns/cj"); err != nil {
		t.Fatal(err)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "UnexpectedJob") {
			t.Errorf("event %q", e)
		}
	}
	got, err := f.client.BatchV1().CronJobs("ns").Get(context.Background(), "cj", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The Job of 10:00 is added to the apiserver's list.
	var active []string
	for _, r := range got.Status.Active {
		active = append(active, r.Name)
	}
	if want := []string{"run", fmt.Sprintf("cj-%d", at(10, 0, 0).Unix()/60)}; !slices.Equal(active, want) {
		t.Errorf("active %v, want %v", active, want)
	}
}
