package batch

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	batchv1 "k8s.io/api/batch/v1"
)

// statusChecks selects the status rules to apply. Most rules only run when
// the fields they look at changed, so that a status that became inconsistent
// because of a spec change (for example scaling an Indexed Job down) can
// still be updated by the controller.
type statusChecks struct {
	decreasingSucceeded, decreasingFailed, disablingTerminal                  bool
	invalidCompletedIndexes, invalidFailedIndexes, overlappingIndexes         bool
	completedIndexesNonIndexed, failedIndexesWithoutPerIndexLimit             bool
	failedWithoutFailureTarget, completeWithoutSuccessCriteria                bool
	finishedWithActive, finishedWithoutStartTime, finishedWithUncounted       bool
	startTimeChangeUnsuspended, completionBeforeStart, mutatingCompletionTime bool
	completeWithoutCompletionTime, completionTimeWithoutComplete              bool
	completeAndFailed, completeAndFailureTarget, moreReadyThanActive          bool
	finishedWithTerminating                                                   bool
}

func statusChecksFor(job, old *batchv1.Job) statusChecks {
	ns, os := &job.Status, &old.Status
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	finishedChanged := jobFinished(old) != jobFinished(job)
	completeChanged := conditionTrue(os.Conditions, batchv1.JobComplete) != conditionTrue(ns.Conditions, batchv1.JobComplete)
	failedChanged := conditionTrue(os.Conditions, batchv1.JobFailed) != conditionTrue(ns.Conditions, batchv1.JobFailed)
	failureTargetChanged := conditionTrue(os.Conditions, batchv1.JobFailureTarget) != conditionTrue(ns.Conditions, batchv1.JobFailureTarget)
	successCriteriaChanged := conditionTrue(os.Conditions, batchv1.JobSuccessCriteriaMet) != conditionTrue(ns.Conditions, batchv1.JobSuccessCriteriaMet)
	completedIdxChanged := os.CompletedIndexes != ns.CompletedIndexes
	failedIdxChanged := !equality.Semantic.DeepEqual(os.FailedIndexes, ns.FailedIndexes)
	activeChanged := os.Active != ns.Active
	startChanged := !equality.Semantic.DeepEqual(os.StartTime, ns.StartTime)
	completionChanged := !equality.Semantic.DeepEqual(os.CompletionTime, ns.CompletionTime)
	uncountedChanged := !equality.Semantic.DeepEqual(os.UncountedTerminatedPods, ns.UncountedTerminatedPods)
	readyChanged := !equality.Semantic.DeepEqual(os.Ready, ns.Ready)
	terminatingChanged := !equality.Semantic.DeepEqual(os.Terminating, ns.Terminating)
	suspendedWithZeroCompletions := job.Spec.Suspend != nil && *job.Spec.Suspend && job.Spec.Completions != nil && *job.Spec.Completions == 0
	resuming := conditionTrue(os.Conditions, batchv1.JobSuspended) && conditionFalse(ns.Conditions, batchv1.JobSuspended)
	scalableIndexed := indexed && equality.Semantic.DeepEqual(job.Spec.Completions, job.Spec.Parallelism)
	return statusChecks{
		decreasingSucceeded:               !scalableIndexed,
		decreasingFailed:                  true,
		disablingTerminal:                 true,
		invalidCompletedIndexes:           completedIdxChanged,
		invalidFailedIndexes:              failedIdxChanged,
		completedIndexesNonIndexed:        completedIdxChanged,
		failedIndexesWithoutPerIndexLimit: failedIdxChanged,
		overlappingIndexes:                failedIdxChanged || completedIdxChanged,
		failedWithoutFailureTarget:        failedChanged || failedIdxChanged,
		completeWithoutSuccessCriteria:    completeChanged || successCriteriaChanged,
		finishedWithActive:                finishedChanged || activeChanged,
		finishedWithoutStartTime:          (finishedChanged || startChanged) && !suspendedWithZeroCompletions,
		finishedWithUncounted:             finishedChanged || uncountedChanged,
		startTimeChangeUnsuspended:        startChanged && !resuming,
		completionBeforeStart:             startChanged || completionChanged,
		mutatingCompletionTime:            true,
		completionTimeWithoutComplete:     completeChanged || completionChanged,
		completeWithoutCompletionTime:     completeChanged || completionChanged,
		completeAndFailed:                 completeChanged || failedChanged,
		completeAndFailureTarget:          completeChanged || failureTargetChanged,
		moreReadyThanActive:               readyChanged || activeChanged,
		finishedWithTerminating:           finishedChanged || terminatingChanged,
	}
}

func jobFinished(job *batchv1.Job) bool {
	return conditionTrue(job.Status.Conditions, batchv1.JobComplete) || conditionTrue(job.Status.Conditions, batchv1.JobFailed)
}

// ValidateJobStatusUpdate validates a write to the status subresource of a
// Job. Besides non-negative counters it enforces the consistency rules
// upstream applies since Jobs may be managed by external controllers
// (managedBy): terminal conditions cannot be undone, counters do not go
// back, finished Jobs have a start time and no active or terminating pods,
// Complete needs SuccessCriteriaMet and a completionTime, Failed needs
// FailureTarget, and index lists are well formed.
func ValidateJobStatusUpdate(job, old *batchv1.Job) field.ErrorList {
	errs := validateObjectMetaUpdate(&job.ObjectMeta, &old.ObjectMeta)
	chk := statusChecksFor(job, old)
	p := field.NewPath("status")
	st, ost := &job.Status, &old.Status
	conds := p.Child("conditions")
	omit := field.OmitValueType{}

	errs = append(errs, nonNegative32(&st.Active, p.Child("active"))...)
	errs = append(errs, nonNegative32(&st.Succeeded, p.Child("succeeded"))...)
	errs = append(errs, nonNegative32(&st.Failed, p.Child("failed"))...)
	errs = append(errs, nonNegative32(st.Ready, p.Child("ready"))...)
	errs = append(errs, nonNegative32(st.Terminating, p.Child("terminating"))...)
	if u := st.UncountedTerminatedPods; u != nil {
		up := p.Child("uncountedTerminatedPods")
		seen := map[types.UID]bool{}
		check := func(list []types.UID, lp *field.Path) {
			for i, uid := range list {
				switch {
				case uid == "":
					errs = append(errs, field.Invalid(lp.Index(i), uid, "must not be empty"))
				case seen[uid]:
					errs = append(errs, field.Duplicate(lp.Index(i), uid))
				default:
					seen[uid] = true
				}
			}
		}
		check(u.Succeeded, up.Child("succeeded"))
		check(u.Failed, up.Child("failed"))
	}

	complete := conditionTrue(st.Conditions, batchv1.JobComplete)
	failed := conditionTrue(st.Conditions, batchv1.JobFailed)
	failureTarget := conditionTrue(st.Conditions, batchv1.JobFailureTarget)
	successMet := conditionTrue(st.Conditions, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed

	if chk.completeAndFailed && complete && failed {
		errs = append(errs, field.Invalid(conds, omit, "cannot set Complete=True and Failed=true conditions"))
	}
	if chk.completeAndFailureTarget && complete && failureTarget {
		errs = append(errs, field.Invalid(conds, omit, "cannot set Complete=True and FailureTarget=true conditions"))
	}
	if chk.completionTimeWithoutComplete && st.CompletionTime != nil && !complete {
		errs = append(errs, field.Invalid(p.Child("completionTime"), st.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	if chk.completeWithoutCompletionTime && st.CompletionTime == nil && complete {
		errs = append(errs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if chk.completionBeforeStart && st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Before(st.StartTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), st.CompletionTime, "must be equal to or after `startTime`"))
	}
	if chk.failedWithoutFailureTarget && failed && !failureTarget {
		errs = append(errs, field.Invalid(conds, omit, "cannot set Failed=True condition without the FailureTarget=true condition"))
	}
	if chk.completeWithoutSuccessCriteria && complete && !successMet {
		errs = append(errs, field.Invalid(conds, omit, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"))
	}
	if chk.finishedWithActive && st.Active > 0 && finished {
		errs = append(errs, field.Invalid(p.Child("active"), st.Active, "active>0 is invalid for finished job"))
	}
	if chk.finishedWithoutStartTime && st.StartTime == nil && finished {
		errs = append(errs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	if u := st.UncountedTerminatedPods; chk.finishedWithUncounted && finished && u != nil && len(u.Failed)+len(u.Succeeded) > 0 {
		errs = append(errs, field.Invalid(p.Child("uncountedTerminatedPods"), u, "must be empty for finished job"))
	}
	completions := job.Spec.Completions
	if chk.invalidCompletedIndexes && completions != nil {
		if _, err := parseIndexes(st.CompletedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("completedIndexes"), st.CompletedIndexes, "error parsing completedIndexes: "+err.Error()))
		}
	}
	if chk.invalidFailedIndexes && completions != nil && job.Spec.BackoffLimitPerIndex != nil && st.FailedIndexes != nil {
		if _, err := parseIndexes(*st.FailedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("failedIndexes"), st.FailedIndexes, "error parsing failedIndexes: "+err.Error()))
		}
	}
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	if chk.completedIndexesNonIndexed && st.CompletedIndexes != "" && !indexed {
		errs = append(errs, field.Invalid(p.Child("completedIndexes"), st.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	if chk.failedIndexesWithoutPerIndexLimit && job.Spec.BackoffLimitPerIndex == nil && st.FailedIndexes != nil {
		errs = append(errs, field.Invalid(p.Child("failedIndexes"), *st.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if chk.overlappingIndexes && completions != nil && st.FailedIndexes != nil {
		if idx, overlap := indexesOverlap(st.CompletedIndexes, *st.FailedIndexes, *completions); overlap {
			errs = append(errs, field.Invalid(p.Child("failedIndexes"), *st.FailedIndexes,
				"failedIndexes and completedIndexes overlap at index: "+itoa(idx)))
		}
	}
	if chk.finishedWithTerminating && st.Terminating != nil && *st.Terminating > 0 && finished {
		errs = append(errs, field.Invalid(p.Child("terminating"), st.Terminating, "terminating>0 is invalid for finished job"))
	}
	if chk.moreReadyThanActive && st.Ready != nil && *st.Ready > st.Active {
		errs = append(errs, field.Invalid(p.Child("ready"), *st.Ready, "cannot set more ready pods than active"))
	}
	if successMet && failed {
		errs = append(errs, field.Invalid(conds, omit, "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
	}
	if successMet && failureTarget {
		errs = append(errs, field.Invalid(conds, omit, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
	}
	if job.Spec.SuccessPolicy != nil && !successMet && complete {
		errs = append(errs, field.Invalid(conds, omit, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
	}

	// Transitions from the stored status.
	if chk.disablingTerminal {
		for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
			if conditionTrue(ost.Conditions, t) && !conditionTrue(st.Conditions, t) {
				errs = append(errs, field.Invalid(conds, omit, "cannot disable the terminal "+string(t)+"=True condition"))
			}
		}
	}
	if chk.decreasingFailed && st.Failed < ost.Failed {
		errs = append(errs, field.Invalid(p.Child("failed"), st.Failed, "cannot decrease the failed counter"))
	}
	if chk.decreasingSucceeded && st.Succeeded < ost.Succeeded {
		errs = append(errs, field.Invalid(p.Child("succeeded"), st.Succeeded, "cannot decrease the succeeded counter"))
	}
	if chk.mutatingCompletionTime && st.CompletionTime != nil && ost.CompletionTime != nil && !st.CompletionTime.Equal(ost.CompletionTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), st.CompletionTime, "field is immutable"))
	}
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if chk.startTimeChangeUnsuspended && ost.StartTime != nil && !equality.Semantic.DeepEqual(ost.StartTime, st.StartTime) && !suspended {
		errs = append(errs, field.Invalid(p.Child("startTime"), st.StartTime, "field is immutable for unsuspended job once set"))
	}
	if conditionTrue(ost.Conditions, batchv1.JobSuccessCriteriaMet) && !successMet {
		errs = append(errs, field.Invalid(conds, omit, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if conditionTrue(ost.Conditions, batchv1.JobComplete) && !conditionTrue(ost.Conditions, batchv1.JobSuccessCriteriaMet) && successMet {
		errs = append(errs, field.Invalid(conds, omit, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return errs
}

func itoa(v int32) string { return strconv.FormatInt(int64(v), 10) }
