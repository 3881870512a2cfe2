package cronjob

import (
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchapi "github.com/k1s/k1s/internal/apis/batch"
)

// nextScheduleDelta is added to the requeue delay so that the sync runs
// just after, never just before, the scheduled time.
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is the number of missed times above which the controller
// warns that the schedule cannot be kept.
const tooManyMissed = 100

// missed says how many scheduled times passed unrun.
type missed int

const (
	noneMissed missed = iota
	fewMissed
	manyMissed
)

// scheduleSpec is the schedule as parsed: spec.schedule, prefixed with
// "TZ=<zone> " when spec.timeZone names a zone this process knows. A
// schedule with its own TZ= or CRON_TZ= prefix is used as it is.
func scheduleSpec(cj *batchv1.CronJob) string {
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		return cj.Spec.Schedule
	}
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			return "TZ=" + *cj.Spec.TimeZone + " " + cj.Spec.Schedule
		}
	}
	return cj.Spec.Schedule
}

func parseSchedule(cj *batchv1.CronJob) (batchapi.Schedule, error) {
	return batchapi.ParseSchedule(scheduleSpec(cj))
}

// mostRecentScheduleTime finds the latest scheduled time in (earliest,
// now], where earliest is the last schedule time (or the CronJob's
// creation) and, with withDeadline, no earlier than startingDeadlineSeconds
// before now. It returns earliest, that time (nil if none) and how many
// times were missed.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched batchapi.Schedule, withDeadline bool) (time.Time, *time.Time, missed, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		if deadline := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := sched.Next(earliest)
	if t1.IsZero() || now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	t2 := sched.Next(t1)
	if t2.IsZero() || now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	// Several times passed: estimate their number from the interval of the
	// first two, then walk the last stretch to find the latest exactly.
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return earliest, nil, noneMissed, errors.New("time difference between two schedules is less than 1 second")
	}
	count := int64(now.Sub(t1).Seconds())/interval + 1
	var latest time.Time
	start := t1.Add(time.Duration((count-2)*interval) * time.Second)
	for t := sched.Next(start); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		latest = t
	}
	m := fewMissed
	if count > tooManyMissed {
		m = manyMissed
	}
	if latest.IsZero() {
		return earliest, nil, m, nil
	}
	return earliest, &latest, m, nil
}

// nextScheduleDelay is how long after now the CronJob should be synced
// again: just after its next scheduled time. It is nil when the schedule
// never fires again.
func nextScheduleDelay(cj *batchv1.CronJob, now time.Time, sched batchapi.Schedule) *time.Duration {
	earliest, latest, m, err := mostRecentScheduleTime(cj, now, sched, false)
	from := now
	switch {
	case err != nil:
	case latest != nil:
		from = *latest
	case m == noneMissed:
		from = earliest
	}
	next := sched.Next(from)
	if next.IsZero() {
		return nil
	}
	return ptr.To(next.Add(nextScheduleDelta).Sub(now))
}

// jobName is the name of the CronJob's Job for a scheduled time: the
// minutes since the epoch make it unique and let the controller find it
// again.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// jobFromTemplate builds the Job of the CronJob for a scheduled time.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	loc, err := time.LoadLocation(ptr.Deref(cj.Spec.TimeZone, ""))
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", ptr.Deref(cj.Spec.TimeZone, ""), err)
	}
	labels := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobName(cj, scheduled),
			Namespace:       cj.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job, nil
}
