package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// manage creates or deletes pods so that the Job runs as many as it should
// now, and returns the number of active pods afterwards. It either creates
// or deletes in one call, never both; deletions win.
func (c *Controller) manage(ctx context.Context, st *syncState) (int32, error) {
	logger := klog.FromContext(ctx)
	job := st.job
	key := jobKey(job)
	active := int32(len(st.active))

	deleteSome := func(pods []*corev1.Pod) (int32, error) {
		c.expectations.ExpectDeletions(key, len(pods))
		ready, deleted, err := c.deletePods(ctx, job, key, pods)
		st.terminating += deleted
		st.ready -= ready
		return active - deleted, err
	}
	if isSuspended(job) {
		logger.V(4).Info("Deleting the active pods of a suspended Job", "job", klog.KObj(job), "active", active)
		return deleteSome(podsToRemove(job, st.active, len(st.active)))
	}

	parallelism := ptr.Deref(job.Spec.Parallelism, 1)
	var want int32
	switch {
	case job.Spec.Completions == nil && st.succeeded > 0:
		// A success ends a Job without completions: let the pods
		// running finish, start no more.
		want = active
	case job.Spec.Completions == nil:
		want = parallelism
	default:
		want = min(max(*job.Spec.Completions-st.succeeded, 0), parallelism)
	}

	rm := podsToRemove(job, st.active, int(max(active-want, 0)))
	if len(rm) > maxPodCreateDeletePerSync {
		rm = rm[:maxPodCreateDeletePerSync]
	}
	if len(rm) > 0 {
		logger.V(4).Info("Too many pods running for Job", "job", klog.KObj(job), "deleting", len(rm), "target", want)
		return deleteSome(rm)
	}

	var terminating int32
	if onlyReplaceFailed(job) {
		// Pods being deleted still hold their place until they fail.
		terminating = st.terminating
	}
	diff := want - terminating - active
	if diff <= 0 {
		return active, nil
	}
	if !hasBackoffLimitPerIndex(job) {
		if left := st.backoff.remaining(c.clock.Now(), c.failureBackoff, c.maxFailureBackoff); left > 0 {
			logger.V(4).Info("Delaying pod creation after failures", "job", klog.KObj(job), "after", left)
			c.enqueueBatched(job, left)
			return active, nil
		}
	}
	diff = min(diff, maxPodCreateDeletePerSync)

	var indexes []int
	if isIndexed(job) {
		indexes = st.firstPendingIndexes(int(diff))
		if hasBackoffLimitPerIndex(job) {
			var left time.Duration
			indexes, left = c.indexesReadyToCreate(indexes, st.delayedPerIndex)
			if left > 0 {
				logger.V(4).Info("Delaying pod creation after index failures", "job", klog.KObj(job), "after", left)
				c.enqueueBatched(job, left)
				return active, nil
			}
		}
		diff = int32(len(indexes))
	}
	if diff == 0 {
		return active, nil
	}

	logger.V(4).Info("Too few pods running for Job", "job", klog.KObj(job), "want", want, "creating", diff)
	c.expectations.ExpectCreations(key, int(diff))
	template := job.Spec.Template.DeepCopy()
	if isIndexed(job) {
		addIndexEnv(template)
	}
	if !slices.Contains(template.Finalizers, batchv1.JobTrackingFinalizer) {
		template.Finalizers = append(template.Finalizers, batchv1.JobTrackingFinalizer)
	}
	ref := metav1.NewControllerRef(job, controllerKind)
	active += diff

	var (
		mu   sync.Mutex
		errs []error
	)
	// Create in batches of 1, 2, 4, ...: when the first creations fail
	// (quota, admission), the rest is not attempted.
	for batch := min(diff, slowStartInitialBatchSize); diff > 0; batch = min(2*batch, diff) {
		errsBefore := len(errs)
		var wg sync.WaitGroup
		for range batch {
			ix := noIndex
			if len(indexes) > 0 {
				ix, indexes = indexes[0], indexes[1:]
			}
			wg.Go(func() {
				t, generateName := template, ""
				if ix != noIndex {
					t = template.DeepCopy()
					setIndex(t, job.Name, ix)
					generateName = indexedGenerateName(job.Name, ix)
					if hasBackoffLimitPerIndex(job) {
						setIndexFailureCounts(t, job, st.delayedPerIndex[ix])
					}
				}
				err := c.podControl.CreatePodsWithGenerateName(ctx, job.Namespace, t, job, ref, generateName)
				if err == nil {
					return
				}
				// The informer will not see this pod.
				c.expectations.CreationObserved(key)
				mu.Lock()
				defer mu.Unlock()
				active--
				// A terminating namespace refuses every pod; that is
				// not the Job's failure.
				if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		diff -= batch
		if len(errs) > errsBefore && diff > 0 {
			logger.V(2).Info("Pod creation failed; skipping the rest for now", "job", klog.KObj(job), "skipped", diff)
			active -= diff
			c.expectations.LowerExpectations(key, int(diff), 0)
			break
		}
	}
	return active, errors.Join(errs...)
}

// podsToRemove picks the active pods to delete: for Indexed Jobs those with
// no valid index or a duplicated index, then, if that is fewer than
// atLeast, the first pods in deletion order.
func podsToRemove(job *batchv1.Job, active []*corev1.Pod, atLeast int) []*corev1.Pod {
	var rm, keep []*corev1.Pod
	if isIndexed(job) {
		rm, keep = surplusIndexPods(active, int(*job.Spec.Completions))
	} else {
		keep = slices.Clone(active)
	}
	if len(rm) < atLeast {
		sort.Sort(controllerutil.ActivePods(keep))
		rm = append(rm, keep[:atLeast-len(rm)]...)
	}
	return rm
}

// surplusIndexPods splits pods into those to remove (no index, an index
// beyond completions, or all but the best of several pods of one index)
// and the rest.
func surplusIndexPods(pods []*corev1.Pod, completions int) (rm, keep []*corev1.Pod) {
	byIndex := map[int][]*corev1.Pod{}
	for _, p := range pods {
		ix := completionIndex(p)
		if ix == noIndex || ix >= completions {
			rm = append(rm, p)
			continue
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	for _, ix := range keys(mapKeys(byIndex)) {
		group := byIndex[ix]
		if len(group) > 1 {
			// The pod that would be deleted last stays.
			sort.Sort(controllerutil.ActivePods(group))
			rm = append(rm, group[:len(group)-1]...)
		}
		keep = append(keep, group[len(group)-1])
	}
	return rm, keep
}

func mapKeys(m map[int][]*corev1.Pod) map[int]bool {
	out := make(map[int]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// firstPendingIndexes returns up to count of the lowest indexes that have
// neither succeeded, nor failed for good, nor an active pod (nor, with
// podReplacementPolicy Failed, a terminating one).
func (st *syncState) firstPendingIndexes(count int) []int {
	if count <= 0 {
		return nil
	}
	busy := st.succeededIndexes.withIndexes(keys(indexesOf(st.active)))
	if onlyReplaceFailed(st.job) {
		busy = busy.withIndexes(keys(indexesOf(controllerutil.FilterTerminatingPods(st.pods))))
	}
	if st.failedIndexes != nil {
		busy = busy.union(*st.failedIndexes)
	}
	completions := int(*st.job.Spec.Completions)
	out := make([]int, 0, count)
	next := 0
	for _, sp := range append(slices.Clone(busy), span{completions, completions}) {
		for ; next < sp.first && next < completions && len(out) < count; next++ {
			out = append(out, next)
		}
		if len(out) == count || next >= completions {
			break
		}
		next = max(next, sp.last+1)
	}
	return out
}

// indexesReadyToCreate keeps the indexes whose per-index back-off has
// passed; when none has, it returns the shortest wait instead.
func (c *Controller) indexesReadyToCreate(indexes []int, lastFailed map[int]*corev1.Pod) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	now := c.clock.Now()
	for _, ix := range indexes {
		var left time.Duration
		if p := lastFailed[ix]; p != nil {
			left = remainingBackoff(now, c.failureBackoff, c.maxFailureBackoff, indexAllFailures(p)+1, finishTime(p))
		}
		switch {
		case left == 0:
			ready = append(ready, ix)
		case wait == 0 || left < wait:
			wait = left
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}

// setIndexFailureCounts carries the failure counts of the index over to
// the pod replacing replaced (nil: the index's first pod).
func setIndexFailureCounts(t *corev1.PodTemplateSpec, job *batchv1.Job, replaced *corev1.Pod) {
	var failures, ignored int32
	if replaced != nil {
		failures = indexFailures(replaced)
		ignored = annotationInt32(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
		if matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).countFailed {
			failures++
		} else {
			ignored++
		}
	}
	t.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
	if ignored > 0 {
		t.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
	}
}

// canRemoveFinalizer reports whether the pod's tracking finalizer may go:
// the Job is being deleted or finishing, the pod succeeded, or it failed
// and is not the pod an index replacement still has to learn its failure
// count from.
func (st *syncState) canRemoveFinalizer(p *corev1.Pod, failed bool) bool {
	if st.job.DeletionTimestamp != nil || st.finished != nil || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if hasBackoffLimitPerIndex(st.job) {
		if ix := completionIndex(p); ix != noIndex {
			if d, ok := st.delayedPerIndex[ix]; ok && d.UID == p.UID {
				return false
			}
		}
	}
	return true
}

// trackStatus records the finished pods in the status and removes their
// finalizers, in this order:
//  1. add the pods to status.uncountedTerminatedPods (and the interim
//     FailureTarget or SuccessCriteriaMet condition) and write the status;
//  2. remove the pods' finalizers;
//  3. move the pods whose finalizer is gone from the uncounted lists to
//     the succeeded and failed counters;
//  4. add the final Complete or Failed condition once nothing is left
//     uncounted or terminating, and write the status.
//
// At most maxUncountedPods pods are handled per sync.
func (c *Controller) trackStatus(ctx context.Context, st *syncState, needsFlush bool) error {
	job := st.job
	indexed := isIndexed(job)
	if indexed {
		sortByIndex(st.pods)
	}
	withFinalizer := map[string]bool{}
	for _, p := range st.pods {
		if hasTrackingFinalizer(p) && !st.finalizersGoing[p.UID] {
			withFinalizer[string(p.UID)] = true
		}
	}
	if moveUncounted(&job.Status, withFinalizer) {
		needsFlush = true
	}

	uncounted := job.Status.UncountedTerminatedPods
	var toRemove []*corev1.Pod
	var newSucceeded []int
	full := false
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || st.finalizersGoing[p.UID] {
			continue // counted by an earlier sync
		}
		failed := isPodFailed(p, job)
		if !st.canRemoveFinalizer(p, failed) {
			continue
		}
		toRemove = append(toRemove, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !st.uncountedFailed[p.UID]:
			if indexed {
				// The index alone prevents double counting.
				if ix := validIndex(job, p); ix != noIndex && !st.prevSucceededIndexes.has(ix) {
					newSucceeded = append(newSucceeded, ix)
					needsFlush = true
				}
			} else if !st.uncountedSucceeded[p.UID] {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				needsFlush = true
			}
		case failed || (st.finished != nil && st.finished.Type != batchv1.JobSuccessCriteriaMet):
			// A failing Job counts every unfinished pod as failed.
			if st.uncountedFailed[p.UID] || (indexed && validIndex(job, p) == noIndex) {
				break
			}
			if matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).countFailed {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				needsFlush = true
			}
		}
		if len(newSucceeded)+len(uncounted.Succeeded)+len(uncounted.Failed) >= maxUncountedPods {
			// The next sync (our own status update triggers it) goes on.
			full = true
			break
		}
	}
	if indexed {
		st.succeededIndexes = st.succeededIndexes.withIndexes(newSucceeded)
		completed := st.succeededIndexes.String()
		if completed != job.Status.CompletedIndexes {
			needsFlush = true
		}
		job.Status.Succeeded = int32(st.succeededIndexes.total())
		job.Status.CompletedIndexes = completed
		var failedStr *string
		if st.failedIndexes != nil {
			failedStr = ptr.To(st.failedIndexes.String())
		}
		if !ptr.Equal(job.Status.FailedIndexes, failedStr) {
			job.Status.FailedIndexes = failedStr
			needsFlush = true
		}
	}
	now := c.clock.Now()
	if st.finished != nil && st.finished.Type == batchv1.JobFailureTarget {
		job.Status.Conditions = append(job.Status.Conditions, *st.finished)
		needsFlush = true
		st.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, st.finished.Reason, st.finished.Message, now)
	}
	if st.finished != nil && st.finished.Type == batchv1.JobSuccessCriteriaMet {
		if trueCondition(job, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *st.finished)
			needsFlush = true
		}
		st.finished = newCondition(batchv1.JobComplete, corev1.ConditionTrue, st.finished.Reason, st.finished.Message, now)
	}

	needsFlush, err := c.flushAndRemoveFinalizers(ctx, st, toRemove, withFinalizer, needsFlush)
	if err != nil {
		return err
	}
	done := !full && c.enactFinished(ctx, st)
	if !needsFlush && !done {
		return nil
	}
	updated, err := c.updateStatus(ctx, st.job)
	if err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	if done {
		c.recordFinished(updated, st.finished)
		c.finished.Store(updated.UID, struct{}{})
	}
	return nil
}

// flushAndRemoveFinalizers writes the status when it has changes (pods
// newly uncounted, interim conditions), then removes the finalizers of
// toRemove and moves the pods that lost them to the counters. It returns
// whether the status has changes left to write.
func (c *Controller) flushAndRemoveFinalizers(ctx context.Context, st *syncState, toRemove []*corev1.Pod, withFinalizer map[string]bool, needsFlush bool) (bool, error) {
	key := jobKey(st.job)
	if needsFlush {
		updated, err := c.updateStatus(ctx, st.job)
		if err != nil {
			return needsFlush, fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		st.job = updated
		c.backoff.set(key, st.backoff)
		needsFlush = false
	}
	var rmErr error
	if len(toRemove) > 0 {
		var removed []bool
		removed, rmErr = c.removeFinalizers(ctx, key, toRemove)
		for i, p := range toRemove {
			if removed[i] {
				delete(withFinalizer, string(p.UID))
			}
		}
	}
	if moveUncounted(&st.job.Status, withFinalizer) {
		needsFlush = true
	}
	if rmErr != nil && needsFlush {
		// Save the progress made before returning the error.
		if _, err := c.updateStatus(ctx, st.job); err != nil {
			return needsFlush, fmt.Errorf("removing uncounted pods from status: %w", err)
		}
	}
	return needsFlush, rmErr
}

// moveUncounted moves the uncounted pods whose finalizer is gone to the
// succeeded and failed counters, reporting a change.
func moveUncounted(status *batchv1.JobStatus, withFinalizer map[string]bool) bool {
	u := status.UncountedTerminatedPods
	changed := false
	if keep := keepUIDs(u.Succeeded, withFinalizer); len(keep) != len(u.Succeeded) {
		status.Succeeded += int32(len(u.Succeeded) - len(keep))
		u.Succeeded = keep
		changed = true
	}
	if keep := keepUIDs(u.Failed, withFinalizer); len(keep) != len(u.Failed) {
		status.Failed += int32(len(u.Failed) - len(keep))
		u.Failed = keep
		changed = true
	}
	return changed
}

func keepUIDs[T ~string](uids []T, in map[string]bool) []T {
	var out []T
	for _, u := range uids {
		if in[string(u)] {
			out = append(out, u)
		}
	}
	return out
}

// removeFinalizers removes the tracking finalizer of the pods
// concurrently, reporting per pod whether it is gone (a deleted pod counts
// as done).
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	for _, p := range pods {
		c.finalizers.expect(key, p.UID)
	}
	removed := make([]bool, len(pods))
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for i, p := range pods {
		wg.Go(func() {
			err := c.podControl.PatchPod(ctx, p.Namespace, p.Name, removeFinalizerPatch)
			if err != nil {
				// No update will show the removal.
				c.finalizers.observed(key, p.UID)
				if !apierrors.IsNotFound(err) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("remove tracking finalizer of pod %s/%s: %w", p.Namespace, p.Name, err))
					mu.Unlock()
					return
				}
			}
			removed[i] = true
		})
	}
	wg.Wait()
	return removed, errors.Join(errs...)
}

// enactFinished sets the final Complete or Failed condition (and
// completionTime) once no pod is left uncounted or terminating; it reports
// whether it did.
func (c *Controller) enactFinished(ctx context.Context, st *syncState) bool {
	if st.finished == nil {
		return false
	}
	job := st.job
	if u := job.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		klog.FromContext(ctx).V(4).Info("Job not yet finished: pods uncounted", "job", klog.KObj(job), "condition", st.finished.Type)
		return false
	}
	if st.terminating > 0 {
		klog.FromContext(ctx).V(4).Info("Job not yet finished: pods terminating", "job", klog.KObj(job), "condition", st.finished.Type, "terminating", st.terminating)
		return false
	}
	f := st.finished
	job.Status.Conditions, _ = setCondition(job.Status.Conditions, f.Type, f.Status, f.Reason, f.Message, f.LastTransitionTime.Time)
	if f.Type == batchv1.JobComplete {
		job.Status.CompletionTime = ptr.To(f.LastTransitionTime)
	}
	return true
}

// recordFinished emits the events of a Job that just finished.
func (c *Controller) recordFinished(job *batchv1.Job, cond *batchv1.JobCondition) {
	if cond.Type != batchv1.JobComplete {
		c.recorder.Event(job, corev1.EventTypeWarning, cond.Reason, cond.Message)
		return
	}
	if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
		c.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
	}
	c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
}

// updateStatus writes the Job's status.
func (c *Controller) updateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	updated, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return updated, nil
}
