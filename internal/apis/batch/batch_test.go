package batch

import (
	"math"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func jobTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pi"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "pi", Image: "perl:5.34", Command: []string{"perl", "-e", "print 1"}}},
		},
	}
}

// newJob returns a defaulted Job with a generated selector, as the registry
// would have it right before create validation.
func newJob(mutate func(*batchv1.Job)) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: types.UID("0d3c-uid"), ResourceVersion: "1"},
		Spec:       batchv1.JobSpec{Template: jobTemplate()},
	}
	if mutate != nil {
		mutate(job)
	}
	DefaultJob(job)
	GenerateJobSelector(job)
	return job
}

func TestDefaultJob(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{Spec: batchv1.JobSpec{Template: jobTemplate()}}
	s.Default(job)
	sp := job.Spec
	if *sp.Completions != 1 || *sp.Parallelism != 1 || *sp.BackoffLimit != 6 {
		t.Errorf("counts: completions %d parallelism %d backoffLimit %d", *sp.Completions, *sp.Parallelism, *sp.BackoffLimit)
	}
	if *sp.CompletionMode != batchv1.NonIndexedCompletion || *sp.Suspend || *sp.ManualSelector || *sp.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("modes: %v %v %v %v", *sp.CompletionMode, *sp.Suspend, *sp.ManualSelector, *sp.PodReplacementPolicy)
	}
	if job.Labels["app"] != "pi" {
		t.Errorf("job labels not copied from template: %v", job.Labels)
	}
	if sp.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("pod template not defaulted by core: %q", sp.Template.Spec.DNSPolicy)
	}

	parallelOnly := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"own": "x"}}, Spec: batchv1.JobSpec{
		Parallelism:          ptr.To[int32](3),
		BackoffLimitPerIndex: ptr.To[int32](1),
		PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
		}}},
		Template: jobTemplate(),
	}}
	DefaultJob(parallelOnly)
	sp = parallelOnly.Spec
	if sp.Completions != nil || *sp.Parallelism != 3 {
		t.Errorf("work-queue job: completions %v parallelism %d", sp.Completions, *sp.Parallelism)
	}
	if *sp.BackoffLimit != math.MaxInt32 {
		t.Errorf("backoffLimit with per-index limit = %d", *sp.BackoffLimit)
	}
	if *sp.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("podReplacementPolicy with failure policy = %v", *sp.PodReplacementPolicy)
	}
	if got := sp.PodFailurePolicy.Rules[0].OnPodConditions[0].Status; got != corev1.ConditionTrue {
		t.Errorf("pattern status = %q", got)
	}
	if len(parallelOnly.Labels) != 1 || parallelOnly.Labels["own"] != "x" {
		t.Errorf("existing job labels replaced: %v", parallelOnly.Labels)
	}
}

func TestDefaultCronJob(t *testing.T) {
	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate()}}}}
	DefaultCronJob(cj)
	sp := cj.Spec
	if sp.ConcurrencyPolicy != batchv1.AllowConcurrent || *sp.Suspend || *sp.SuccessfulJobsHistoryLimit != 3 || *sp.FailedJobsHistoryLimit != 1 {
		t.Errorf("cronjob defaults = %+v", sp)
	}
	if sp.JobTemplate.Spec.Completions != nil || sp.JobTemplate.Spec.BackoffLimit != nil {
		t.Errorf("job template got Job-level defaults: %+v", sp.JobTemplate.Spec)
	}
	if sp.JobTemplate.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("job template pod spec not defaulted")
	}
}

func TestGenerateJobSelector(t *testing.T) {
	job := newJob(nil)
	want := map[string]string{"job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": "0d3c-uid", "batch.kubernetes.io/controller-uid": "0d3c-uid"}
	for k, v := range want {
		if job.Spec.Template.Labels[k] != v {
			t.Errorf("template label %s = %q, want %q", k, job.Spec.Template.Labels[k], v)
		}
	}
	if got := job.Spec.Selector.MatchLabels; len(got) != 1 || got["batch.kubernetes.io/controller-uid"] != "0d3c-uid" {
		t.Errorf("selector = %v", got)
	}
	// Job labels defaulted from the template share its map, so the
	// generated labels appear on the Job as well (as upstream).
	if job.Labels["batch.kubernetes.io/job-name"] != "pi" || job.Labels["app"] != "pi" {
		t.Errorf("job labels = %v", job.Labels)
	}
	manual := newJob(func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
	})
	if _, set := manual.Spec.Template.Labels["job-name"]; set {
		t.Errorf("manual selector job got generated labels")
	}
}

func TestValidateJob(t *testing.T) {
	tests := []struct {
		name string
		job  *batchv1.Job
		want []errKey
	}{
		{name: "valid", job: newJob(nil)},
		{
			name: "manual selector",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptr.To(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			}),
		},
		{
			name: "manual selector not matching template",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptr.To(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
			}),
			want: []errKey{e(field.ErrorTypeInvalid, "spec.template.metadata.labels")},
		},
		{
			name: "user selector without manualSelector",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			}),
			// The generated uid label was added, so only the "not auto-generated" check trips.
			want: []errKey{e(field.ErrorTypeInvalid, "spec.selector")},
		},
		{
			name: "conflicting controller-uid label",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.Template.Labels["batch.kubernetes.io/controller-uid"] = "someone-else"
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]"),
				e(field.ErrorTypeInvalid, "spec.template.metadata.labels"),
			},
		},
		{
			name: "missing uid",
			job: func() *batchv1.Job {
				j := newJob(nil)
				j.UID = ""
				return j
			}(),
			want: []errKey{
				e(field.ErrorTypeRequired, "metadata.uid"),
				e(field.ErrorTypeInvalid, "spec.template.metadata.labels[controller-uid]"),
				e(field.ErrorTypeInvalid, "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]"),
				e(field.ErrorTypeInvalid, "spec.selector"),
			},
		},
		{
			name: "restart policy always",
			job:  newJob(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }),
			want: []errKey{e(field.ErrorTypeRequired, "spec.template.spec.restartPolicy")},
		},
		{
			name: "restart policy unset (defaults to Always)",
			job:  newJob(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }),
			want: []errKey{e(field.ErrorTypeRequired, "spec.template.spec.restartPolicy")},
		},
		{
			name: "negative counts",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.Parallelism = ptr.To[int32](-1)
				j.Spec.Completions = ptr.To[int32](-1)
				j.Spec.BackoffLimit = ptr.To[int32](-1)
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](-1)
				j.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1)
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.parallelism"),
				e(field.ErrorTypeInvalid, "spec.completions"),
				e(field.ErrorTypeInvalid, "spec.backoffLimit"),
				e(field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"),
				e(field.ErrorTypeInvalid, "spec.ttlSecondsAfterFinished"),
			},
		},
		{
			name: "indexed without completions",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Parallelism = ptr.To[int32](2)
			}),
			want: []errKey{e(field.ErrorTypeRequired, "spec.completions")},
		},
		{
			name: "indexed limits",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](4)
				j.Spec.Parallelism = ptr.To[int32](200000)
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
				j.Spec.MaxFailedIndexes = ptr.To[int32](5)
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.parallelism"),
				e(field.ErrorTypeInvalid, "spec.maxFailedIndexes"),
			},
		},
		{
			name: "indexed name too long for pod hostnames",
			job: newJob(func(j *batchv1.Job) {
				j.Name = strings.Repeat("a", 60)
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](1000)
			}),
			want: []errKey{e(field.ErrorTypeInvalid, "metadata.name")},
		},
		{
			name: "per-index fields need indexed mode",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
				j.Spec.MaxFailedIndexes = ptr.To[int32](1)
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.backoffLimitPerIndex"),
				e(field.ErrorTypeInvalid, "spec.maxFailedIndexes"),
			},
		},
		{
			name: "maxFailedIndexes without backoffLimitPerIndex",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.MaxFailedIndexes = ptr.To[int32](1)
			}),
			want: []errKey{e(field.ErrorTypeRequired, "spec.backoffLimitPerIndex")},
		},
		{
			name: "unknown completion mode",
			job:  newJob(func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.CompletionMode("Sparse")) }),
			want: []errKey{e(field.ErrorTypeNotSupported, "spec.completionMode")},
		},
		{
			name: "bad managedBy",
			job:  newJob(func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("kueue") }),
			want: []errKey{e(field.ErrorTypeInvalid, "spec.managedBy")},
		},
		{
			name: "pod failure policy problems",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
					{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: ptr.To("nope"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{0, 3, 2, 2},
					}},
					{Action: batchv1.PodFailurePolicyActionFailIndex, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "Ready", Status: "Maybe"}}},
					{Action: "Retry"},
				}}
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].onExitCodes.containerName"),
				e(field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].onExitCodes.values[0]"),
				e(field.ErrorTypeDuplicate, "spec.podFailurePolicy.rules[0].onExitCodes.values[3]"),
				e(field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].onExitCodes.values"),
				e(field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[1].action"),
				e(field.ErrorTypeNotSupported, "spec.podFailurePolicy.rules[1].onPodConditions[0].status"),
				e(field.ErrorTypeNotSupported, "spec.podFailurePolicy.rules[2].action"),
				e(field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[2]"),
				e(field.ErrorTypeNotSupported, "spec.podReplacementPolicy"),
				e(field.ErrorTypeInvalid, "spec.template.spec.restartPolicy"),
			},
		},
		{
			name: "success policy",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](5)
				j.Spec.Parallelism = ptr.To[int32](5)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
					{SucceededIndexes: ptr.To("0,2-4"), SucceededCount: ptr.To[int32](3)},
					{SucceededIndexes: ptr.To("3,1")},
					{SucceededIndexes: ptr.To("1-2"), SucceededCount: ptr.To[int32](3)},
					{},
					{SucceededCount: ptr.To[int32](6)},
				}}
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.successPolicy.rules[1].succeededIndexes"),
				e(field.ErrorTypeInvalid, "spec.successPolicy.rules[2].succeededCount"),
				e(field.ErrorTypeRequired, "spec.successPolicy.rules[3]"),
				e(field.ErrorTypeInvalid, "spec.successPolicy.rules[4].succeededCount"),
			},
		},
		{
			name: "success policy needs indexed mode",
			job: newJob(func(j *batchv1.Job) {
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
			}),
			want: []errKey{e(field.ErrorTypeInvalid, "spec.successPolicy")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidateJob(tc.job), tc.want...)
		})
	}
}

func TestValidateJobUpdate(t *testing.T) {
	old := newJob(nil)

	t.Run("running job template is immutable", func(t *testing.T) {
		upd := old.DeepCopy()
		upd.Spec.Template.Spec.Containers[0].Image = "perl:5.36"
		expectErrs(t, ValidateJobUpdate(upd, old), e(field.ErrorTypeInvalid, "spec.template"))
	})
	t.Run("mutable fields", func(t *testing.T) {
		upd := old.DeepCopy()
		upd.Spec.Parallelism = ptr.To[int32](4)
		upd.Spec.Suspend = ptr.To(true)
		upd.Spec.ActiveDeadlineSeconds = ptr.To[int64](100)
		upd.Spec.BackoffLimit = ptr.To[int32](2)
		upd.Labels = map[string]string{"x": "y"}
		expectErrs(t, ValidateJobUpdate(upd, old))
	})
	t.Run("immutable fields", func(t *testing.T) {
		upd := old.DeepCopy()
		upd.Spec.Completions = ptr.To[int32](3)
		upd.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		upd.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		upd.Spec.ManagedBy = ptr.To("example.com/queue")
		expectErrs(t, ValidateJobUpdate(upd, old),
			// With the (new) Indexed mode, completions may only move with parallelism.
			e(field.ErrorTypeInvalid, "spec.completions"),
			e(field.ErrorTypeInvalid, "spec.selector"),
			e(field.ErrorTypeInvalid, "spec.completionMode"),
			e(field.ErrorTypeInvalid, "spec.managedBy"))
	})
	t.Run("non-indexed completions immutable", func(t *testing.T) {
		upd := old.DeepCopy()
		upd.Spec.Completions = ptr.To[int32](3)
		expectErrs(t, ValidateJobUpdate(upd, old), e(field.ErrorTypeInvalid, "spec.completions"))
	})
	t.Run("indexed completions scale with parallelism", func(t *testing.T) {
		idx := newJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](4)
			j.Spec.Parallelism = ptr.To[int32](4)
		})
		both := idx.DeepCopy()
		both.Spec.Completions = ptr.To[int32](2)
		both.Spec.Parallelism = ptr.To[int32](2)
		expectErrs(t, ValidateJobUpdate(both, idx))
		alone := idx.DeepCopy()
		alone.Spec.Completions = ptr.To[int32](2)
		expectErrs(t, ValidateJobUpdate(alone, idx), e(field.ErrorTypeInvalid, "spec.completions"))
	})
	t.Run("suspended job allows scheduling and resource changes", func(t *testing.T) {
		suspended := newJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
		upd := suspended.DeepCopy()
		upd.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		upd.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		upd.Spec.Template.Annotations = map[string]string{"queue": "a"}
		upd.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		expectErrs(t, ValidateJobUpdate(upd, suspended))

		image := suspended.DeepCopy()
		image.Spec.Template.Spec.Containers[0].Image = "perl:5.36"
		expectErrs(t, ValidateJobUpdate(image, suspended), e(field.ErrorTypeInvalid, "spec.template.spec"))

		started := suspended.DeepCopy()
		started.Status.StartTime = &metav1.Time{Time: time.Now()}
		started.Status.Active = 1
		expectErrs(t, ValidateJobUpdate(upd, started), e(field.ErrorTypeInvalid, "spec.template"))
	})
}

func finishedJob(mutate func(*batchv1.Job)) *batchv1.Job {
	j := newJob(nil)
	now := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Minute))
	j.Status = batchv1.JobStatus{
		StartTime: &now, CompletionTime: &later, Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue},
		},
	}
	if mutate != nil {
		mutate(j)
	}
	return j
}

func TestValidateJobStatusUpdate(t *testing.T) {
	running := newJob(nil)
	start := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	running.Status = batchv1.JobStatus{StartTime: &start, Active: 1, Ready: ptr.To[int32](0)}

	tests := []struct {
		name string
		old  *batchv1.Job
		new  *batchv1.Job
		want []errKey
	}{
		{name: "completes properly", old: running, new: finishedJob(nil)},
		{
			name: "complete without success criteria and completion time",
			old:  running,
			new: finishedJob(func(j *batchv1.Job) {
				j.Status.Conditions = j.Status.Conditions[1:]
				j.Status.CompletionTime = nil
			}),
			want: []errKey{
				e(field.ErrorTypeInvalid, "status.conditions"),
				e(field.ErrorTypeRequired, "status.completionTime"),
			},
		},
		{
			name: "finished with active pods",
			old:  running,
			new:  finishedJob(func(j *batchv1.Job) { j.Status.Active = 1 }),
			want: []errKey{e(field.ErrorTypeInvalid, "status.active")},
		},
		{
			name: "failed without failure target",
			old:  running,
			new: func() *batchv1.Job {
				j := running.DeepCopy()
				j.Status.Active = 0
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
				return j
			}(),
			want: []errKey{e(field.ErrorTypeInvalid, "status.conditions")},
		},
		{
			name: "terminal condition cannot be undone",
			old:  finishedJob(nil),
			new: finishedJob(func(j *batchv1.Job) {
				j.Status.Conditions = j.Status.Conditions[:1]
				j.Status.CompletionTime = nil
			}),
			want: []errKey{e(field.ErrorTypeInvalid, "status.conditions")},
		},
		{
			name: "counters go down",
			old:  finishedJob(func(j *batchv1.Job) { j.Status.Failed = 2 }),
			new:  finishedJob(func(j *batchv1.Job) { j.Status.Succeeded = 0; j.Status.Failed = 1 }),
			want: []errKey{
				e(field.ErrorTypeInvalid, "status.succeeded"),
				e(field.ErrorTypeInvalid, "status.failed"),
			},
		},
		{
			name: "start time changes on a running job",
			old:  running,
			new: func() *batchv1.Job {
				j := running.DeepCopy()
				other := metav1.NewTime(start.Add(time.Hour))
				j.Status.StartTime = &other
				return j
			}(),
			want: []errKey{e(field.ErrorTypeInvalid, "status.startTime")},
		},
		{
			name: "more ready than active and bad uncounted pods",
			old:  running,
			new: func() *batchv1.Job {
				j := running.DeepCopy()
				j.Status.Ready = ptr.To[int32](2)
				j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a", ""}, Failed: []types.UID{"a"}}
				return j
			}(),
			want: []errKey{
				e(field.ErrorTypeInvalid, "status.ready"),
				e(field.ErrorTypeInvalid, "status.uncountedTerminatedPods.succeeded[1]"),
				e(field.ErrorTypeDuplicate, "status.uncountedTerminatedPods.failed[0]"),
			},
		},
		{
			name: "completed indexes on non-indexed job",
			old:  running,
			new: func() *batchv1.Job {
				j := running.DeepCopy()
				j.Status.CompletedIndexes = "0"
				return j
			}(),
			want: []errKey{e(field.ErrorTypeInvalid, "status.completedIndexes")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidateJobStatusUpdate(tc.new, tc.old), tc.want...)
		})
	}
}

func TestValidateIndexedJobStatus(t *testing.T) {
	old := newJob(func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](6)
		j.Spec.Parallelism = ptr.To[int32](2)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	})
	start := metav1.Now()
	old.Status.StartTime = &start
	good := old.DeepCopy()
	good.Status.CompletedIndexes = "0-2,4"
	good.Status.FailedIndexes = ptr.To("3")
	good.Status.Succeeded = 4
	good.Status.Failed = 1
	expectErrs(t, ValidateJobStatusUpdate(good, old))

	bad := old.DeepCopy()
	bad.Status.CompletedIndexes = "0-2,7"
	bad.Status.FailedIndexes = ptr.To("2")
	expectErrs(t, ValidateJobStatusUpdate(bad, old),
		e(field.ErrorTypeInvalid, "status.completedIndexes"),
		e(field.ErrorTypeInvalid, "status.failedIndexes"))
}

func validCronJob() *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default", ResourceVersion: "1"},
		Spec: batchv1.CronJobSpec{
			Schedule:    "30 2 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate()}},
		},
	}
	DefaultCronJob(cj)
	return cj
}

func TestValidateCronJob(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   []errKey
	}{
		{name: "valid", mutate: func(*batchv1.CronJob) {}},
		{name: "macro and zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@daily"; cj.Spec.TimeZone = ptr.To("Europe/Berlin") }},
		{
			name:   "missing schedule",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.schedule")},
		},
		{
			name:   "unparseable schedule",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.schedule")},
		},
		{
			name:   "TZ in schedule",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=UTC 0 * * * *" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.schedule")},
		},
		{
			name:   "unknown zone",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus_Mons") },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.timeZone")},
		},
		{
			name:   "local zone",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Local") },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.timeZone")},
		},
		{
			name:   "empty zone",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("") },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.timeZone")},
		},
		{
			name:   "bad concurrency policy",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.concurrencyPolicy")},
		},
		{
			name: "negative limits",
			mutate: func(cj *batchv1.CronJob) {
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](-1)
				cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](-1)
				cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](-1)
			},
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.startingDeadlineSeconds"),
				e(field.ErrorTypeInvalid, "spec.successfulJobsHistoryLimit"),
				e(field.ErrorTypeInvalid, "spec.failedJobsHistoryLimit"),
			},
		},
		{
			name: "selector in job template",
			mutate: func(cj *batchv1.CronJob) {
				cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
				cj.Spec.JobTemplate.Spec.ManualSelector = ptr.To(true)
			},
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.jobTemplate.spec.selector"),
				e(field.ErrorTypeNotSupported, "spec.jobTemplate.spec.manualSelector"),
			},
		},
		{
			name: "job template restart policy",
			mutate: func(cj *batchv1.CronJob) {
				cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			want: []errKey{e(field.ErrorTypeRequired, "spec.jobTemplate.spec.template.spec.restartPolicy")},
		},
		{
			name:   "name too long",
			mutate: func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("n", 53) },
			want:   []errKey{e(field.ErrorTypeInvalid, "metadata.name")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cj := validCronJob()
			tc.mutate(cj)
			expectErrs(t, ValidateCronJob(cj), tc.want...)
		})
	}
}

func TestValidateCronJobUpdate(t *testing.T) {
	legacy := validCronJob()
	legacy.Name = strings.Repeat("n", 60)
	legacy.Spec.Schedule = "TZ=UTC 0 * * * *"
	edit := legacy.DeepCopy()
	edit.Spec.Schedule = "TZ=UTC 30 * * * *"
	edit.Spec.Suspend = ptr.To(true)
	expectErrs(t, ValidateCronJobUpdate(edit, legacy))

	both := legacy.DeepCopy()
	both.Spec.TimeZone = ptr.To("UTC")
	expectErrs(t, ValidateCronJobUpdate(both, legacy), e(field.ErrorTypeInvalid, "spec.schedule"))

	fresh := validCronJob()
	addTZ := fresh.DeepCopy()
	addTZ.Spec.Schedule = "TZ=UTC 0 * * * *"
	expectErrs(t, ValidateCronJobUpdate(addTZ, fresh), e(field.ErrorTypeInvalid, "spec.schedule"))

	expectErrs(t, ValidateCronJobStatusUpdate(fresh.DeepCopy(), fresh))
}
