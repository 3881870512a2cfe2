package statefulset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/history"
)

// maxBatch bounds one batch of parallel pod operations.
const maxBatch = 500

// UnknownStrategyReason is the event reason for an update strategy the
// controller does not implement (Recreate: its feature gate is off).
const UnknownStrategyReason = "UnknownStrategy"

// updateSet brings set's pods, revisions and status one step towards the
// desired state and returns the status it wrote.
func (c *Controller) updateSet(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, now time.Time) (*appsv1.StatefulSetStatus, error) {
	// A new revision changes the copy; keep the cached object intact.
	set = set.DeepCopy()
	revs, err := c.listRevisions(set)
	if err != nil {
		return nil, err
	}
	history.Sort(revs)
	current, update, status, err := c.performUpdate(ctx, set, pods, revs, now)
	truncErr := c.truncateHistory(ctx, set, pods, revs, current, update)
	if err != nil {
		return nil, errors.Join(err, truncErr)
	}
	return status, truncErr
}

func (c *Controller) performUpdate(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision, now time.Time) (current, update *appsv1.ControllerRevision, status *appsv1.StatefulSetStatus, err error) {
	logger := klog.FromContext(ctx)
	current, update, collisionCount, err := c.revisions(ctx, set, revs)
	if err != nil {
		return current, update, nil, err
	}
	status, err = c.updatePods(ctx, set, current, update, collisionCount, pods, now)
	if err != nil && status == nil {
		return current, update, nil, err
	}
	statusErr := c.updateStatus(ctx, set, status)
	if statusErr == nil {
		logger.V(4).Info("Updated status", "statefulSet", klog.KObj(set), "replicas", status.Replicas,
			"readyReplicas", status.ReadyReplicas, "currentReplicas", status.CurrentReplicas, "updatedReplicas", status.UpdatedReplicas)
	}
	switch {
	case err != nil && statusErr != nil:
		logger.Error(statusErr, "Could not update status", "statefulSet", klog.KObj(set))
		return current, update, status, err
	case err != nil:
		return current, update, status, err
	case statusErr != nil:
		return current, update, status, statusErr
	}
	logger.V(4).Info("StatefulSet revisions", "statefulSet", klog.KObj(set), "currentRevision", status.CurrentRevision, "updateRevision", status.UpdateRevision)
	return current, update, status, nil
}

// slowStart runs fn for indexes 0..n-1 in concurrent batches that start
// at one and double (up to maxBatch) while every call succeeds. It returns
// the successes and the errors of the first failing batch.
func slowStart(n int, fn func(int) error) (int, error) {
	successes, next := 0, 0
	for batch := min(n, 1); batch > 0; batch = min(2*batch, n-next, maxBatch) {
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			wg.Go(func() { errs[i] = fn(next + i) })
		}
		wg.Wait()
		next += batch
		err := errors.Join(errs...)
		for _, e := range errs {
			if e == nil {
				successes++
			}
		}
		if err != nil {
			return successes, err
		}
	}
	return successes, nil
}

// runForAll calls fn for each pod index: in order, stopping at the first
// that asks to stop or fails, when monotonic; otherwise all at once in
// slow-start batches, stopping on failure.
func runForAll(n int, fn func(int) (bool, error), monotonic bool) (bool, error) {
	if monotonic {
		for i := range n {
			if stop, err := fn(i); stop || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	if _, err := slowStart(n, func(i int) error { _, err := fn(i); return err }); err != nil {
		return true, err
	}
	return false, nil
}

type replicaCounts struct {
	replicas, ready, available, current, updated int32
}

// countReplicas tallies pods for status: created ones, running-and-ready,
// available, and (not terminating) of the current and update revisions.
func countReplicas(pods []*corev1.Pod, minReadySeconds int32, current, update *appsv1.ControllerRevision, now time.Time) replicaCounts {
	var rc replicaCounts
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		if isCreated(pod) {
			rc.replicas++
		}
		if isRunningAndReady(pod) {
			rc.ready++
			if isRunningAndAvailable(pod, minReadySeconds, now) {
				rc.available++
			}
		}
		if isCreated(pod) && !isTerminating(pod) {
			if podRevision(pod) == current.Name {
				rc.current++
			}
			if podRevision(pod) == update.Name {
				rc.updated++
			}
		}
	}
	return rc
}

func setCounts(status *appsv1.StatefulSetStatus, minReadySeconds int32, current, update *appsv1.ControllerRevision, now time.Time, lists ...[]*corev1.Pod) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas, status.CurrentReplicas, status.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, l := range lists {
		rc := countReplicas(l, minReadySeconds, current, update, now)
		status.Replicas += rc.replicas
		status.ReadyReplicas += rc.ready
		status.AvailableReplicas += rc.available
		status.CurrentReplicas += rc.current
		status.UpdatedReplicas += rc.updated
	}
}

// processReplica brings the pod at index i of replicas to its desired
// state: deletes it if it finished (to be recreated), creates it (with its
// claims) if missing, creates missing claims of a pending pod, and fixes
// identity, storage and claim owners. It asks to stop (in monotonic mode)
// while the pod is not yet running, ready and available.
func (c *Controller) processReplica(ctx context.Context, set, updateSet *appsv1.StatefulSet, monotonic bool, replicas []*corev1.Pod, i int, now time.Time) (bool, error) {
	logger := klog.FromContext(ctx)
	pod := replicas[i]
	if isTerminal(pod) {
		// A finished pod is deleted and created afresh on a later sync.
		if pod.DeletionTimestamp == nil {
			if err := c.podControl.deletePod(ctx, set, pod); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if !isCreated(pod) {
		stale, err := c.podControl.claimIsStale(set, pod)
		if err != nil || stale {
			// Wait until the old claim is gone.
			return true, err
		}
		if err := c.podControl.createPod(ctx, set, pod); err != nil {
			return true, err
		}
		if monotonic {
			return true, nil
		}
	}
	if isPending(pod) {
		logger.V(4).Info("StatefulSet is triggering PVC creation for pending Pod", "statefulSet", klog.KObj(set), "pod", klog.KObj(pod))
		if err := c.podControl.createMissingClaims(ctx, set, pod); err != nil {
			return true, err
		}
	}
	if monotonic {
		switch {
		case isTerminating(pod):
			logger.V(4).Info("StatefulSet is waiting for Pod to Terminate", "statefulSet", klog.KObj(set), "pod", klog.KObj(pod))
			return true, nil
		case !isRunningAndReady(pod):
			logger.V(4).Info("StatefulSet is waiting for Pod to be Running and Ready", "statefulSet", klog.KObj(set), "pod", klog.KObj(pod))
			return true, nil
		case !isRunningAndAvailable(pod, set.Spec.MinReadySeconds, now):
			logger.V(4).Info("StatefulSet is waiting for Pod to be Available", "statefulSet", klog.KObj(set), "pod", klog.KObj(pod))
			return true, nil
		}
	}
	retentionOK, err := c.podControl.claimsMatchRetention(ctx, updateSet, pod)
	if err != nil {
		// Let updatePod report it if the pod needs an update anyway.
		retentionOK = true
	}
	if identityMatches(set, pod) && storageMatches(set, pod) && retentionOK {
		return false, nil
	}
	if err := c.podControl.updatePod(ctx, updateSet, pod.DeepCopy()); err != nil {
		return true, err
	}
	return false, nil
}

// processCondemned deletes the condemned pod at index i (ordinals beyond
// the range, highest first). In monotonic mode it waits for pods to
// terminate and, unless this pod is the first unhealthy one, for all to
// be running, ready and available.
func (c *Controller) processCondemned(ctx context.Context, set *appsv1.StatefulSet, firstUnhealthy *corev1.Pod, monotonic bool, condemned []*corev1.Pod, i int, now time.Time) (bool, error) {
	logger := klog.FromContext(ctx)
	pod := condemned[i]
	if isTerminating(pod) {
		if monotonic {
			logger.V(4).Info("StatefulSet is waiting for Pod to Terminate prior to scale down", "statefulSet", klog.KObj(set), "pod", klog.KObj(pod))
			return true, nil
		}
		return false, nil
	}
	if monotonic && pod != firstUnhealthy {
		if !isRunningAndReady(pod) {
			logger.V(4).Info("StatefulSet is waiting for Pod to be Running and Ready prior to scale down", "statefulSet", klog.KObj(set), "pod", klog.KObj(firstUnhealthy))
			return true, nil
		}
		if !isRunningAndAvailable(pod, set.Spec.MinReadySeconds, now) {
			logger.V(4).Info("StatefulSet is waiting for Pod to be Available prior to scale down", "statefulSet", klog.KObj(set), "pod", klog.KObj(firstUnhealthy))
			return true, nil
		}
	}
	logger.V(2).Info("Pod of StatefulSet is terminating for scale down", "statefulSet", klog.KObj(set), "pod", klog.KObj(pod))
	return true, c.podControl.deletePod(ctx, set, pod)
}

// updatePods is one step of the StatefulSet algorithm: sort pods into the
// ordinal range (replicas, planning missing ones at the right revision)
// and beyond it (condemned); bring each replica up, in order and one at a
// time for OrderedReady; fix claim owners of condemned pods and delete
// them, highest ordinal first; then roll pods of older revisions from the
// highest ordinal down to the partition.
func (c *Controller) updatePods(ctx context.Context, set *appsv1.StatefulSet, current, update *appsv1.ControllerRevision, collisionCount int32, pods []*corev1.Pod, now time.Time) (*appsv1.StatefulSetStatus, error) {
	logger := klog.FromContext(ctx)
	currentSet, err := ApplyRevision(set, current)
	if err != nil {
		return nil, err
	}
	updateSet, err := ApplyRevision(set, update)
	if err != nil {
		return nil, err
	}
	if set.Spec.UpdateStrategy.Type == appsv1.RecreateStatefulSetStrategyType {
		err := fmt.Errorf("statefulset %s/%s uses Recreate strategy but feature gate StatefulSetRecreateStrategy is disabled", set.Namespace, set.Name)
		c.recorder.Event(set, corev1.EventTypeWarning, UnknownStrategyReason, err.Error())
		return nil, err
	}

	status := &appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    current.Name,
		UpdateRevision:     update.Name,
		CollisionCount:     &collisionCount,
		Conditions:         append([]appsv1.StatefulSetCondition(nil), set.Status.Conditions...),
	}
	setCounts(status, set.Spec.MinReadySeconds, current, update, now, pods)

	start := startOrdinal(set)
	replicas := make([]*corev1.Pod, replicasOf(set))
	var condemned []*corev1.Pod
	for _, pod := range pods {
		switch o := ordinalOf(pod); {
		case inOrdinalRange(pod, set):
			replicas[o-start] = pod
		case o >= 0:
			condemned = append(condemned, pod)
		}
	}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = newVersionedPod(currentSet, updateSet, current.Name, update.Name, start+i)
		}
	}
	sort.SliceStable(condemned, func(i, j int) bool { return ordinalOf(condemned[i]) > ordinalOf(condemned[j]) })

	// The first unhealthy pod, counting replicas upward then condemned
	// from the lowest ordinal, may be deleted even in OrderedReady mode.
	var firstUnhealthy *corev1.Pod
	unavailable := 0
	for _, p := range replicas {
		if isUnavailable(p, set.Spec.MinReadySeconds, now) {
			unavailable++
			if firstUnhealthy == nil {
				firstUnhealthy = p
			}
		}
	}
	for i := len(condemned) - 1; i >= 0; i-- {
		if isUnavailable(condemned[i], set.Spec.MinReadySeconds, now) {
			unavailable++
			if firstUnhealthy == nil {
				firstUnhealthy = condemned[i]
			}
		}
	}
	if unavailable > 0 {
		logger.V(4).Info("StatefulSet has unavailable Pods", "statefulSet", klog.KObj(set), "unavailableReplicas", unavailable, "pod", klog.KObj(firstUnhealthy))
	}
	if set.DeletionTimestamp != nil {
		return status, nil
	}
	monotonic := !allowsBurst(set)
	recount := func() {
		setCounts(status, set.Spec.MinReadySeconds, current, update, now, replicas, condemned)
	}

	if stop, err := runForAll(len(replicas), func(i int) (bool, error) {
		return c.processReplica(ctx, set, updateSet, monotonic, replicas, i, now)
	}, monotonic); stop || err != nil {
		recount()
		return status, err
	}
	if stop, err := runForAll(len(condemned), func(i int) (bool, error) {
		ok, err := c.podControl.claimsMatchRetention(ctx, updateSet, condemned[i])
		if err != nil {
			return true, err
		}
		if !ok {
			if err := c.podControl.updateClaimsForRetention(ctx, updateSet, condemned[i]); err != nil {
				return true, err
			}
		}
		return false, nil
	}, monotonic); stop || err != nil {
		recount()
		return status, err
	}
	if stop, err := runForAll(len(condemned), func(i int) (bool, error) {
		return c.processCondemned(ctx, set, firstUnhealthy, monotonic, condemned, i, now)
	}, monotonic); stop || err != nil {
		recount()
		return status, err
	}
	recount()
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return status, nil
	}
	return c.rollingUpdate(ctx, set, replicas, update, status, now)
}

// maxUnavailable is the rolling update's maxUnavailable resolved against
// replicas (default 1, percentages rounded down, at least 1).
func maxUnavailable(v *intstr.IntOrString, replicas int) (int, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(v, intstr.FromInt32(1)), replicas, false)
	if err != nil {
		return 0, err
	}
	return max(n, 1), nil
}

// rollingUpdate deletes pods of older revisions (to be recreated at the
// update revision by a later sync), from the highest ordinal down to the
// partition, while fewer than maxUnavailable replicas are unavailable.
// With Parallel management, unavailable old pods are replaced at once.
func (c *Controller) rollingUpdate(ctx context.Context, set *appsv1.StatefulSet, replicas []*corev1.Pod, update *appsv1.ControllerRevision, status *appsv1.StatefulSetStatus, now time.Time) (*appsv1.StatefulSetStatus, error) {
	logger := klog.FromContext(ctx)
	partition, maxUnavail := 0, 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		var err error
		if maxUnavail, err = maxUnavailable(ru.MaxUnavailable, replicasOf(set)); err != nil {
			return status, err
		}
	}
	minReady := set.Spec.MinReadySeconds
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	old := func(p *corev1.Pod) bool { return podRevision(p) != update.Name }

	unavailable, unavailableOld := 0, 0
	for _, p := range replicas {
		if isUnavailable(p, minReady, now) {
			unavailable++
			if parallel && old(p) && !isTerminating(p) {
				unavailableOld++
			}
		}
	}
	if unavailable >= maxUnavail && unavailableOld == 0 {
		if unavailable > maxUnavail {
			logger.V(4).Info("StatefulSet has more unavailable pods than maxUnavailable", "statefulSet", klog.KObj(set),
				"unavailablePods", unavailable, "maxUnavailable", maxUnavail)
		}
		return status, nil
	}
	del := func(p *corev1.Pod, msg string) error {
		logger.V(2).Info(msg, "statefulSet", klog.KObj(set), "pod", klog.KObj(p))
		if err := c.podControl.deletePod(ctx, set, p); err != nil {
			return err
		}
		status.CurrentReplicas--
		return nil
	}
	if parallel {
		// Old pods that are not serving anyway go first, whatever the
		// budget.
		for i := len(replicas) - 1; i >= partition; i-- {
			p := replicas[i]
			if old(p) && !isRunningAndAvailable(p, minReady, now) && !isTerminating(p) {
				if err := del(p, "StatefulSet terminating unavailable Pod for update"); err != nil {
					return status, err
				}
			}
		}
		budget := maxUnavail - unavailable
		for i := len(replicas) - 1; i >= partition && budget > 0; i-- {
			p := replicas[i]
			if old(p) && !isUnavailable(p, minReady, now) {
				if err := del(p, "StatefulSet terminating Pod for update"); err != nil {
					return status, err
				}
				budget--
			}
		}
		return status, nil
	}
	budget := maxUnavail - unavailable
	for i := len(replicas) - 1; i >= partition && budget > 0; i-- {
		p := replicas[i]
		if old(p) && !isTerminating(p) {
			if err := del(p, "StatefulSet terminating Pod for update"); err != nil {
				return status, err
			}
			budget--
		}
	}
	return status, nil
}

// completeUpdate makes the update revision current once every replica
// runs it and is ready.
func completeUpdate(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) {
	r := int32(replicasOf(set))
	if status.UpdatedReplicas == r && status.ReadyReplicas == r && status.Replicas == r {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
}

// statusChanged reports whether status differs from set's (or observes a
// newer generation).
func statusChanged(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) bool {
	s := &set.Status
	return status.ObservedGeneration > s.ObservedGeneration ||
		status.Replicas != s.Replicas ||
		status.CurrentReplicas != s.CurrentReplicas ||
		status.ReadyReplicas != s.ReadyReplicas ||
		status.UpdatedReplicas != s.UpdatedReplicas ||
		status.CurrentRevision != s.CurrentRevision ||
		status.AvailableReplicas != s.AvailableReplicas ||
		status.UpdateRevision != s.UpdateRevision ||
		!reflect.DeepEqual(s.Conditions, status.Conditions)
}

// updateStatus completes a finished update and writes status if it
// changed, through the status subresource, retrying conflicts against the
// cached set.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) error {
	completeUpdate(set, status)
	if !statusChanged(set, status) {
		return nil
	}
	toUpdate := set.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		toUpdate.Status = *status
		_, err := c.client.AppsV1().StatefulSets(toUpdate.Namespace).UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if fresh, getErr := c.setLister.StatefulSets(set.Namespace).Get(set.Name); getErr == nil {
			toUpdate = fresh.DeepCopy()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	return nil
}
