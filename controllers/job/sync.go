package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// removeFinalizerPatch is the strategic merge patch that drops the
// tracking finalizer from a pod.
var removeFinalizerPatch = func() []byte {
	b, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
		},
	})
	if err != nil {
		panic(err) // a constant structure
	}
	return b
}()

// syncState is what one sync of a Job has learnt and decided.
type syncState struct {
	job  *batchv1.Job
	pods []*corev1.Pod
	// active are the pods neither terminated nor being deleted.
	active []*corev1.Pod
	// finished is the condition the Job is heading for, if any: an
	// interim FailureTarget or SuccessCriteriaMet, or the final Failed or
	// Complete one.
	finished *batchv1.JobCondition
	// succeeded and failed are the counters including pods not yet
	// recorded in status.
	succeeded, failed int32
	// prevSucceededIndexes are the indexes in status.completedIndexes;
	// succeededIndexes adds the pods that succeeded since.
	prevSucceededIndexes, succeededIndexes indexSet
	// failedIndexes (only with backoffLimitPerIndex) are the indexes out
	// of retries.
	failedIndexes *indexSet
	// backoff is the backoff record including the pods finished since
	// the last sync.
	backoff backoffRecord
	// finalizersGoing are the pods whose finalizer removal is still to be
	// observed: already counted.
	finalizersGoing map[types.UID]bool
	// uncountedSucceeded and uncountedFailed mirror
	// status.uncountedTerminatedPods as read.
	uncountedSucceeded, uncountedFailed map[types.UID]bool
	// delayedPerIndex is, per index, the failed pod whose finalizer stays
	// until its replacement exists (it carries the failure count).
	delayedPerIndex map[int]*corev1.Pod
	terminating     int32
	ready           int32
}

func isFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// managedElsewhere reports whether spec.managedBy hands the Job to another
// controller.
func managedElsewhere(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName
}

func isSuspended(job *batchv1.Job) bool {
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// onlyReplaceFailed reports podReplacementPolicy Failed: pods being deleted
// are replaced only once they have failed.
func onlyReplaceFailed(job *batchv1.Job) bool {
	return job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed
}

// isPodFailed reports whether the pod counts as failed: phase Failed, or
// (unless only failed pods are replaced) being deleted before it
// succeeded, since such a pod may never reach a terminal phase.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

func findCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func trueCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	if c := findCondition(job.Status.Conditions, t); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type:               t,
		Status:             status,
		LastProbeTime:      metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

// setCondition sets the condition of type t, appending it unless status is
// False (a missing condition already means that). It reports a change.
func setCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(conds, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return conds, false
		}
		*c = *newCondition(t, status, reason, message, now)
		return conds, true
	}
	if status == corev1.ConditionFalse {
		return conds, false
	}
	return append(conds, *newCondition(t, status, reason, message, now)), true
}

func (c *Controller) failureTarget(reason, message string) *batchv1.JobCondition {
	return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, reason, message, c.clock.Now())
}

// sync brings the Job key one step closer to its spec: it claims its pods,
// decides whether the Job has failed or succeeded, creates or deletes pods
// when its expectations are met, and records finished pods in its status
// (removing their tracking finalizers).
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	if ns == "" || name == "" {
		return fmt.Errorf("invalid job key %q: namespace or name missing", key)
	}
	shared, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Job has been deleted", "job", key)
		c.expectations.DeleteExpectations(key)
		c.finalizers.forget(key)
		c.backoff.remove(key)
		return nil
	}
	if err != nil {
		return err
	}
	if managedElsewhere(shared) {
		logger.V(2).Info("Skipping Job managed by another controller", "job", klog.KObj(shared), "managedBy", *shared.Spec.ManagedBy)
		return nil
	}
	job := shared.DeepCopy()
	if isFinished(job) {
		c.backoff.remove(key)
		c.finished.Delete(job.UID)
		return nil
	}
	if _, ok := c.finished.Load(job.UID); ok {
		logger.V(2).Info("Skipping Job marked finished whose update is not seen yet", "job", key)
		return nil
	}
	if mode := job.Spec.CompletionMode; mode != nil && *mode != batchv1.NonIndexedCompletion && *mode != batchv1.IndexedCompletion {
		c.recorder.Event(job, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}

	// Read the expectations before the pods: a pod that shows up in
	// between only delays the work to the next sync.
	satisfied := c.expectations.SatisfiedExpectations(key)
	pods, err := c.podsForJob(ctx, job)
	if err != nil {
		return err
	}
	st := &syncState{
		job:                job,
		pods:               pods,
		active:             controllerutil.FilterActivePods(pods),
		uncountedSucceeded: uidSet(job.Status.UncountedTerminatedPods.Succeeded),
		uncountedFailed:    uidSet(job.Status.UncountedTerminatedPods.Failed),
		finalizersGoing:    c.finalizers.expected(key),
		terminating:        controllerutil.CountTerminatingPods(pods),
	}
	for _, p := range st.active {
		if controllerutil.IsPodReady(p) {
			st.ready++
		}
	}
	active := int32(len(st.active))
	newSucceeded, newFailed := st.newlyFinished()
	st.succeeded = job.Status.Succeeded + int32(len(newSucceeded)) + int32(len(st.uncountedSucceeded))
	st.failed = job.Status.Failed + int32(countedFailures(job, newFailed)) + int32(len(st.uncountedFailed))

	if job.Status.StartTime == nil && !isSuspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(c.clock.Now()))
	}
	st.backoff = c.backoff.get(key).next(newSucceeded, newFailed)

	// Decide the end state, in upstream's order: a verdict of an earlier
	// sync stands; then failures (pod failure policy, backoff limit,
	// deadline, failed indexes); then success (success policy, and below
	// the completions).
	st.finished = trueCondition(job, batchv1.JobSuccessCriteriaMet)
	if st.finished == nil {
		if target := trueCondition(job, batchv1.JobFailureTarget); target != nil {
			st.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, target.Reason, target.Message, c.clock.Now())
		} else if msg, ok := failJobMessage(job, pods); ok {
			st.finished = c.failureTarget(batchv1.JobReasonPodFailurePolicy, msg)
		}
	}
	if st.finished == nil {
		switch {
		case st.failed > backoffLimit(job) || pastBackoffLimitOnFailure(job, pods):
			st.finished = c.failureTarget(batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
		case c.pastActiveDeadline(job):
			st.finished = c.failureTarget(batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
		case job.Spec.ActiveDeadlineSeconds != nil && !isSuspended(job):
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(job.Status.StartTime.Time)
			logger.V(2).Info("Job has an active deadline; will sync again then", "job", key, "after", left)
			c.queue.AddAfter(key, left)
		}
	}
	if isIndexed(job) {
		completions := int(*job.Spec.Completions)
		st.prevSucceededIndexes, st.succeededIndexes = succeededIndexes(job, pods)
		st.succeeded = int32(st.succeededIndexes.total())
		if hasBackoffLimitPerIndex(job) {
			st.failedIndexes = failedIndexes(job, pods)
			if st.finished == nil {
				failedCount := st.failedIndexes.total()
				switch {
				case job.Spec.MaxFailedIndexes != nil && failedCount > int(*job.Spec.MaxFailedIndexes):
					st.finished = c.failureTarget(batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes")
				case failedCount > 0 && failedCount+st.succeededIndexes.total() >= completions:
					st.finished = c.failureTarget(batchv1.JobReasonFailedIndexes, "Job has failed indexes")
				}
			}
			st.delayedPerIndex = st.podsWithDelayedDeletion()
		}
		if st.finished == nil {
			if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, *job.Spec.Completions, st.succeededIndexes); ok {
				st.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonSuccessPolicy, msg, c.clock.Now())
			}
		}
	}

	var manageErr error
	suspendChanged := false
	if st.finished != nil {
		// The Job is done: its remaining pods go. It is declared finished
		// only once none is left and no creation is outstanding.
		deletedReady, deleted, err := c.deleteActivePods(ctx, job, st.active)
		if deleted != active || !satisfied {
			st.finished = nil
		}
		active -= deleted
		st.terminating += deleted
		st.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			active, manageErr = c.manage(ctx, st)
			managed = true
		}
		var complete bool
		if job.Spec.Completions == nil {
			// Any success completes a Job without completions, once the
			// other pods have ended.
			complete = st.succeeded > 0 && active == 0
		} else {
			complete = st.succeeded >= *job.Spec.Completions && active == 0
		}
		switch {
		case complete:
			st.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached,
				"Reached expected number of succeeded pods", c.clock.Now())
		case managed && isSuspended(job):
			var changed bool
			job.Status.Conditions, changed = setCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", c.clock.Now())
			if changed {
				suspendChanged = true
				c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
				// The deadline counts active time only; a suspended
				// Job has none (its scheduling directives may change).
				job.Status.StartTime = nil
			}
		case managed:
			var changed bool
			job.Status.Conditions, changed = setCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", c.clock.Now())
			if changed {
				suspendChanged = true
				c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
				// activeDeadlineSeconds counts from the resumption.
				job.Status.StartTime = ptr.To(metav1.NewTime(c.clock.Now()))
			}
		}
	}

	needsUpdate := suspendChanged || active != job.Status.Active ||
		!ptr.Equal(&st.ready, job.Status.Ready) || !ptr.Equal(&st.terminating, job.Status.Terminating)
	job.Status.Active = active
	job.Status.Ready = ptr.To(st.ready)
	job.Status.Terminating = ptr.To(st.terminating)
	if err := c.trackStatus(ctx, st, needsUpdate); err != nil {
		return fmt.Errorf("tracking status of job %s: %w", key, err)
	}
	return manageErr
}

func backoffLimit(job *batchv1.Job) int32 {
	return ptr.Deref(job.Spec.BackoffLimit, 6)
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, u := range uids {
		out[u] = true
	}
	return out
}

// podsForJob returns the pods the Job controls, after adopting matching
// orphans (adding the tracking finalizer) and releasing pods that no
// longer match. The pods are the cache's, except adopted ones, which are
// copies showing the finalizer.
func (c *Controller) podsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("job %s/%s selector: %w", job.Namespace, job.Name, err)
	}
	candidates, err := controllerutil.FilterPodsByOwner(c.podIndexer, job, controllerKind.Kind, true)
	if err != nil {
		return nil, err
	}
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != job.UID {
			return nil, fmt.Errorf("original Job %s/%s is gone: got uid %v, wanted %v", job.Namespace, job.Name, fresh.UID, job.UID)
		}
		return fresh, nil
	})
	rm := controllerutil.NewPodRefManager(c.podControl, job, sel, controllerKind, canAdopt, batchv1.JobTrackingFinalizer)
	pods, err := rm.ClaimPods(ctx, candidates)
	for i, p := range pods {
		// An adopted pod: the patch added the finalizer, the cache does
		// not show it yet.
		if metav1.GetControllerOfNoCopy(p) == nil && !hasTrackingFinalizer(p) {
			cp := p.DeepCopy()
			cp.Finalizers = append(cp.Finalizers, batchv1.JobTrackingFinalizer)
			pods[i] = cp
		}
	}
	return pods, err
}

// newlyFinished returns the pods that succeeded or failed and that the
// status does not account for yet.
func (st *syncState) newlyFinished() (succeeded, failed []*corev1.Pod) {
	for _, p := range st.trackedPods() {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if !st.uncountedSucceeded[p.UID] {
				succeeded = append(succeeded, p)
			}
		case isPodFailed(p, st.job):
			if !st.uncountedFailed[p.UID] {
				failed = append(failed, p)
			}
		}
	}
	return succeeded, failed
}

// trackedPods are the pods the status may still have to count: those with
// the tracking finalizer whose removal is not under way and, for Indexed
// Jobs, with one of the Job's indexes.
func (st *syncState) trackedPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || st.finalizersGoing[p.UID] {
			continue
		}
		if isIndexed(st.job) && validIndex(st.job, p) == noIndex {
			continue
		}
		out = append(out, p)
	}
	return out
}

// countedFailures is how many of the failed pods count towards the backoff
// limit.
func countedFailures(job *batchv1.Job, failed []*corev1.Pod) int {
	n := 0
	for _, p := range failed {
		if matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).countFailed {
			n++
		}
	}
	return n
}

// failJobMessage returns the message of the first FailJob rule a failed
// pod matches.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !isPodFailed(p, job) {
			continue
		}
		if m := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); m.failJobMessage != "" {
			return m.failJobMessage, true
		}
	}
	return "", false
}

// pastBackoffLimitOnFailure reports, for restartPolicy OnFailure, whether
// the container restarts of the running and pending pods reach the backoff
// limit (exceed it, for a limit of 0).
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range p.Status.InitContainerStatuses {
			restarts += s.RestartCount
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	if limit := backoffLimit(job); limit > 0 {
		return restarts >= limit
	}
	return restarts > 0
}

// pastActiveDeadline reports whether the unsuspended Job has been active
// for activeDeadlineSeconds.
func (c *Controller) pastActiveDeadline(job *batchv1.Job) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	return c.clock.Since(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// succeededIndexes returns the indexes in status.completedIndexes and
// those plus the indexes of succeeded pods not yet counted.
func succeededIndexes(job *batchv1.Job, pods []*corev1.Pod) (prev, all indexSet) {
	completions := int(*job.Spec.Completions)
	prev = parseIndexSet(job.Status.CompletedIndexes, completions)
	var add []int
	for _, p := range pods {
		if ix := validIndex(job, p); ix != noIndex && p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) {
			add = append(add, ix)
		}
	}
	return prev, prev.withIndexes(add)
}

// failedIndexes returns status.failedIndexes plus the indexes whose pods
// have used up backoffLimitPerIndex (or hit a FailIndex rule).
func failedIndexes(job *batchv1.Job, pods []*corev1.Pod) *indexSet {
	completions := int(*job.Spec.Completions)
	var prev indexSet
	if job.Status.FailedIndexes != nil {
		prev = parseIndexSet(*job.Status.FailedIndexes, completions)
	}
	var add []int
	for _, p := range pods {
		if ix := validIndex(job, p); ix != noIndex && hasTrackingFinalizer(p) && isIndexFailed(job, p) {
			add = append(add, ix)
		}
	}
	out := prev.withIndexes(add)
	return &out
}

// isIndexFailed reports whether the failed pod ends its index: a FailIndex
// rule matched, or the counted failure exhausts backoffLimitPerIndex.
func isIndexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	m := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if m.action != nil && *m.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return m.countFailed && indexFailures(p) >= *job.Spec.BackoffLimitPerIndex
}

// podsWithDelayedDeletion returns, per index still to be retried, its
// latest failed pod: its finalizer stays until the replacement, which
// inherits its failure counts, has been created.
func (st *syncState) podsWithDelayedDeletion() map[int]*corev1.Pod {
	activeIx := indexesOf(st.active)
	out := map[int]*corev1.Pod{}
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || st.finalizersGoing[p.UID] || !isPodFailed(p, st.job) {
			continue
		}
		ix := validIndex(st.job, p)
		if ix == noIndex || st.succeededIndexes.has(ix) || st.indexFailed(ix) || activeIx[ix] {
			continue
		}
		prev, ok := out[ix]
		if !ok || (indexAllFailures(prev) <= indexAllFailures(p) && !finishTime(p).Before(finishTime(prev))) {
			out[ix] = p
		}
	}
	return out
}

// indexFailed reports whether ix is among the failed indexes.
func (st *syncState) indexFailed(ix int) bool {
	return st.failedIndexes != nil && st.failedIndexes.has(ix)
}

// deleteActivePods deletes the pods of a finished Job, leaving their
// finalizers for trackStatus. It returns how many (and how many ready)
// deletions succeeded.
func (c *Controller) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (ready, deleted int32, err error) {
	return c.deletePods(ctx, job, "", pods)
}

// deletePods deletes pods concurrently. With key set (pods the Job no
// longer wants) their finalizers are removed first and each failure
// lowers the Job's deletion expectations. A pod already gone counts as
// deleted.
func (c *Controller) deletePods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) (ready, deleted int32, err error) {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, p := range pods {
		wg.Go(func() {
			err := c.deletePod1(ctx, job, key != "", p)
			if err != nil && key != "" {
				// The informer will not report this deletion.
				c.expectations.DeletionObserved(key)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				return
			}
			deleted++
			if controllerutil.IsPodReady(p) {
				ready++
			}
		})
	}
	wg.Wait()
	return ready, deleted, errors.Join(errs...)
}

// deletePod1 deletes one pod, first removing its finalizer if asked to.
func (c *Controller) deletePod1(ctx context.Context, job *batchv1.Job, dropFinalizer bool, p *corev1.Pod) error {
	if dropFinalizer && hasTrackingFinalizer(p) {
		if err := c.podControl.PatchPod(ctx, p.Namespace, p.Name, removeFinalizerPatch); err != nil {
			if apierrors.IsNotFound(err) {
				return err
			}
			return fmt.Errorf("remove tracking finalizer of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return c.podControl.DeletePod(ctx, job.Namespace, p.Name, job)
}
