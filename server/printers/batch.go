package printers

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

var jobPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "The job's state, from its conditions."),
		col("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		col("Duration", "string", "How long the job ran, or has been running."),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
		wideCol("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, job *batchv1.Job) []interface{} {
		names, images := containerCells(job.Spec.Template.Spec.Containers)
		return []interface{}{
			job.Name, jobStatus(job), jobCompletions(job), jobDuration(now, job),
			since(now, job.CreationTimestamp), names, images, metav1.FormatLabelSelector(job.Spec.Selector),
		}
	}),
}

func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if p := deref32(job.Spec.Parallelism); p > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

func jobDuration(now time.Time, job *batchv1.Job) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
}

// jobStatus picks the first matching state in upstream's precedence order;
// deletion ranks below Complete and Failed.
func jobStatus(job *batchv1.Job) string {
	switch {
	case jobCondition(job, batchv1.JobComplete):
		return "Complete"
	case jobCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	case jobCondition(job, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	default:
		return "Running"
	}
}

// jobCondition reports whether the first condition of type t is True.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

var cronJobPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
		col("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
		col("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
		col("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
		col("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
		wideCol("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, cj *batchv1.CronJob) []interface{} {
		last := none
		if cj.Status.LastScheduleTime != nil {
			last = since(now, *cj.Status.LastScheduleTime)
		}
		tz := none
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		tmpl := cj.Spec.JobTemplate.Spec
		names, images := containerCells(tmpl.Template.Spec.Containers)
		return []interface{}{
			cj.Name, cj.Spec.Schedule, tz, boolPtrString(cj.Spec.Suspend), int64(len(cj.Status.Active)), last,
			since(now, cj.CreationTimestamp), names, images, metav1.FormatLabelSelector(tmpl.Selector),
		}
	}),
}
