// Package job owns the Job controller: it runs a Job's pods to completion
// as upstream kube-controller-manager's job-controller does.
//
// A Job creates pods from its template, up to spec.parallelism at once and
// no more than the completions still missing; in Indexed completion mode
// each pod carries its completion index (annotation and label
// batch.kubernetes.io/job-completion-index, hostname <job>-<index>,
// environment JOB_COMPLETION_INDEX) and status.completedIndexes lists the
// indexes done. Every pod carries the finalizer
// batch.kubernetes.io/job-tracking until the controller has counted it:
// finished pods are first recorded in status.uncountedTerminatedPods, their
// finalizer removed, and only then added to status.succeeded or
// status.failed, so pods deleted in the meantime are still counted once.
//
// Failed pods are replaced after an exponential back-off (10 s after the
// first failure, doubling with each further one up to 10 min, reset by a
// success); more failures than
// spec.backoffLimit fail the Job (BackoffLimitExceeded), as does running
// longer than spec.activeDeadlineSeconds (DeadlineExceeded). A failed Job
// first gets the FailureTarget condition, its remaining pods are deleted,
// and it becomes Failed once they are gone; a Job that reached its
// completions (or its successPolicy) gets SuccessCriteriaMet and then
// Complete. spec.podFailurePolicy (FailJob, FailIndex, Ignore, Count),
// spec.backoffLimitPerIndex with spec.maxFailedIndexes,
// spec.podReplacementPolicy and spec.suspend (pods deleted, the Suspended
// condition, startTime reset on resume) behave as upstream. Jobs whose
// spec.managedBy names another controller are left alone.
package job
