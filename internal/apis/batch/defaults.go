package batch

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/k1s/k1s/internal/apis/core"
)

// RegisterDefaults adds the Job, JobList, CronJob and CronJobList
// defaulters to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&batchv1.Job{}, func(obj interface{}) { DefaultJob(obj.(*batchv1.Job)) })
	s.AddTypeDefaultingFunc(&batchv1.JobList{}, func(obj interface{}) {
		list := obj.(*batchv1.JobList)
		for i := range list.Items {
			DefaultJob(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&batchv1.CronJob{}, func(obj interface{}) { DefaultCronJob(obj.(*batchv1.CronJob)) })
	s.AddTypeDefaultingFunc(&batchv1.CronJobList{}, func(obj interface{}) {
		list := obj.(*batchv1.CronJobList)
		for i := range list.Items {
			DefaultCronJob(&list.Items[i])
		}
	})
	return nil
}

func int32Ptr(v int32) *int32 { return &v }

func boolPtr(v bool) *bool { return &v }

// DefaultJob fills the unset fields of a Job:
//   - completions and parallelism 1 when both are unset, else parallelism 1;
//   - backoffLimit 6, or MaxInt32 when backoffLimitPerIndex is set;
//   - the Job's labels from the pod template when the Job has none;
//   - completionMode NonIndexed, suspend false, manualSelector false;
//   - podReplacementPolicy Failed with a podFailurePolicy, else
//     TerminatingOrFailed;
//   - status True on podFailurePolicy onPodConditions patterns;
//
// and then defaults the pod template through package core.
func DefaultJob(job *batchv1.Job) {
	spec := &job.Spec
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = int32Ptr(1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = int32Ptr(1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = int32Ptr(math.MaxInt32)
		} else {
			spec.BackoffLimit = int32Ptr(6)
		}
	}
	if spec.Template.Labels != nil && len(job.Labels) == 0 {
		// The map is shared, not copied, as upstream does: the labels
		// GenerateJobSelector later adds to the template therefore show up
		// on the Job too, which clients have come to expect.
		job.Labels = spec.Template.Labels
	}
	if spec.CompletionMode == nil {
		mode := batchv1.NonIndexedCompletion
		spec.CompletionMode = &mode
	}
	if spec.Suspend == nil {
		spec.Suspend = boolPtr(false)
	}
	if spec.PodReplacementPolicy == nil {
		policy := batchv1.TerminatingOrFailed
		if spec.PodFailurePolicy != nil {
			policy = batchv1.Failed
		}
		spec.PodReplacementPolicy = &policy
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = boolPtr(false)
	}
	defaultJobSpecParts(spec)
}

// defaultJobSpecParts applies the defaults that also reach the job template
// of a CronJob: pod failure policy patterns and the pod template.
func defaultJobSpecParts(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for j := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				pattern := &spec.PodFailurePolicy.Rules[i].OnPodConditions[j]
				if pattern.Status == "" {
					pattern.Status = corev1.ConditionTrue
				}
			}
		}
	}
	core.DefaultPodTemplateSpec(&spec.Template)
}

// DefaultCronJob sets concurrencyPolicy Allow, suspend false,
// successfulJobsHistoryLimit 3 and failedJobsHistoryLimit 1 when unset.
// Within the job template only the pod template and pod failure policy
// patterns are defaulted (as upstream); the Job defaults apply when the
// controller creates each Job.
func DefaultCronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = boolPtr(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = int32Ptr(3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = int32Ptr(1)
	}
	defaultJobSpecParts(&spec.JobTemplate.Spec)
}
