package deployment

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

func (c *Controller) now() metav1.Time { return metav1.NewTime(c.clock.Now()) }

// newCondition is a condition stamped now.
func (c *Controller) newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, msg string) appsv1.DeploymentCondition {
	now := c.now()
	return appsv1.DeploymentCondition{Type: t, Status: status, LastUpdateTime: now, LastTransitionTime: now, Reason: reason, Message: msg}
}

// updateStatus writes d's status and keeps d's resourceVersion current so
// that a later write in the same sync does not conflict.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update deployment %s/%s status: %w", d.Namespace, d.Name, err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// syncStatusOnly only recomputes the status (the Deployment is being
// deleted).
func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// syncScale handles a scaling event or a paused Deployment: it resizes the
// ReplicaSets without rolling out.
func (c *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused && rollbackTo(d) == nil {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition (Unknown, DeploymentPaused or DeploymentResumed) unless the
// deadline was already exceeded.
func (c *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == TimedOutReason {
		return nil
	}
	pausedCond := cond != nil && cond.Reason == PausedDeployReason
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedDeployReason, "Deployment is paused"))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ResumedDeployReason, "Deployment is resumed"))
	default:
		return nil
	}
	return c.updateStatus(ctx, d)
}

// getAllReplicaSetsAndSyncRevision returns the new ReplicaSet (created if
// missing and create is set; nil otherwise) and all old ones, with the
// revisions of the new ReplicaSet and the Deployment brought up to date.
func (c *Controller) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	_, oldRSs := findOldReplicaSets(d, rsList)
	newRS, err := c.getNewReplicaSet(ctx, d, rsList, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

// getNewReplicaSet returns the ReplicaSet whose template is the
// Deployment's. An existing one gets the Deployment's annotations, the next
// revision if an old ReplicaSet has a higher one (a rollback), and the
// Deployment's minReadySeconds; its revision goes to the Deployment. A
// missing one is created when create is set, sized as the strategy allows.
// Updated ReplicaSets replace their entry in rsList.
func (c *Controller) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	logger := klog.FromContext(ctx)
	existing := findNewReplicaSet(d, rsList)
	newRevision := maxRevision(oldRSs) + 1

	if existing != nil {
		rsCopy := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rsCopy, newRevision, true)
		if annotationsChanged || rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := c.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("update replica set %s/%s: %w", rsCopy.Namespace, rsCopy.Name, err)
			}
			for i := range rsList {
				if rsList[i].UID == updated.UID {
					rsList[i] = updated
				}
			}
			return updated, nil
		}
		needsUpdate := setDeploymentRevision(d, rsCopy.Annotations[RevisionAnnotation])
		// First sight of a new ReplicaSet for a Deployment that never had
		// a Progressing condition.
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, FoundNewRSReason,
				fmt.Sprintf("Found new replica set %q", rsCopy.Name)))
			needsUpdate = true
		}
		if needsUpdate {
			if err := c.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rsCopy, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := controllerutil.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash

	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            replicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        ptr.To[int32](0),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	n, err := newRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), newRS)
	if err != nil {
		return nil, err
	}
	newRS.Spec.Replicas = ptr.To(n)
	setNewReplicaSetAnnotations(d, newRS, newRevision, false)

	alreadyExists := false
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newRS, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		rs, getErr := c.rsLister.ReplicaSets(newRS.Namespace).Get(newRS.Name)
		if getErr != nil {
			return nil, getErr
		}
		// Ours with our template: a stale cache, not a collision.
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			created, err = rs, nil
			break
		}
		// A hash collision: count it, so the next hash differs, and retry.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = ptr.To[int32](0)
		}
		*d.Status.CollisionCount++
		if uErr := c.updateStatus(ctx, d); uErr == nil {
			logger.V(2).Info("Hash collision, bumped collisionCount", "deployment", klog.KObj(d), "collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, FailedRSCreateReason, msg))
			// The creation error is the one to report.
			_ = c.updateStatus(ctx, d)
		}
		c.recorder.Eventf(d, corev1.EventTypeWarning, FailedRSCreateReason, "%s", msg)
		return nil, err
	}
	if !alreadyExists && n > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	needsUpdate := setDeploymentRevision(d, strconv.FormatInt(newRevision, 10))
	if !alreadyExists && hasProgressDeadline(d) {
		setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewReplicaSetReason,
			fmt.Sprintf("Created new replica set %q", created.Name)))
		needsUpdate = true
	}
	if needsUpdate {
		if err := c.updateStatus(ctx, d); err != nil {
			return created, err
		}
	}
	return created, nil
}

// withLabel returns a copy of m with key set to value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}

// scale resizes the ReplicaSets to spec.replicas without rolling out: the
// one active (or newest) ReplicaSet takes all; a saturated new ReplicaSet
// leaves the old ones at 0; otherwise, during a rolling update, the change
// is spread over the active ReplicaSets in proportion to their sizes.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if only := findActiveOrLatest(newRS, oldRSs); only != nil {
		if replicasOf(only) == desired(d) {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, only, desired(d), d, false)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range filterActive(oldRSs) {
			if _, _, err := c.scaleReplicaSet(ctx, old, 0, d, false); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	all := filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	allowed := int32(0)
	if desired(d) > 0 {
		allowed = desired(d) + maxSurge(d)
	}
	toAdd := allowed - sumReplicas(all)
	switch {
	case toAdd > 0:
		// Growing: newer ReplicaSets first among equals.
		sort.Sort(bySizeNewer(all))
	case toAdd < 0:
		// Shrinking: older ReplicaSets first among equals.
		sort.Sort(bySizeOlder(all))
	}
	sizes := make(map[string]int32, len(all))
	var added int32
	for _, rs := range all {
		if toAdd != 0 {
			p := replicaSetProportion(rs, d, toAdd, added)
			sizes[rs.Name] = replicasOf(rs) + p
			added += p
		} else {
			sizes[rs.Name] = replicasOf(rs)
		}
	}
	for i, rs := range all {
		// Leftovers from rounding go to the largest.
		if i == 0 && toAdd != 0 {
			sizes[rs.Name] = max(sizes[rs.Name]+toAdd-added, 0)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[rs.Name], d, true); err != nil {
			return err
		}
	}
	return nil
}

// scaleReplicaSet sets rs's size to n and records the Deployment's desired
// and max replicas on it. Without force it does nothing when the size is
// already n. It returns whether the size changed and the ReplicaSet as
// written.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, n int32, d *appsv1.Deployment, force bool) (bool, *appsv1.ReplicaSet, error) {
	if !force && replicasOf(rs) == n {
		return false, rs, nil
	}
	maxReplicas := desired(d) + maxSurge(d)
	sizeChanged := replicasOf(rs) != n
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired(d), maxReplicas) {
		return false, rs, nil
	}
	from := replicasOf(rs)
	rsCopy := rs.DeepCopy()
	rsCopy.Spec.Replicas = ptr.To(n)
	setReplicasAnnotations(rsCopy, desired(d), maxReplicas)
	updated, err := c.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, fmt.Errorf("scale replica set %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if sizeChanged {
		dir := "up"
		if n < from {
			dir = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", dir, updated.Name, from, n)
	}
	return sizeChanged, updated, nil
}

// cleanupDeployment deletes the oldest old ReplicaSets beyond
// revisionHistoryLimit, only those scaled to and at 0 replicas and synced.
func (c *Controller) cleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := int32(len(alive)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}
	sort.Sort(byRevision(alive))
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || replicasOf(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		klog.FromContext(ctx).V(4).Info("Deleting old replica set", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
		if err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replica set %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// syncDeploymentStatus writes the status computed from the ReplicaSets if
// it differs.
func (c *Controller) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := c.calculateStatus(allRSs, newRS, d)
	if reflect.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return c.updateStatus(ctx, d)
}

// calculateStatus sums the ReplicaSets' counts and sets the Available
// condition.
func (c *Controller) calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := availableReplicas(allRSs)
	unavailable := max(sumReplicas(allRSs)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualReplicas(allRSs),
		UpdatedReplicas:     actualReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
		TerminatingReplicas: terminatingReplicas(allRSs),
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	if available >= desired(d)-maxUnavailable(d) {
		setCondition(&st, c.newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability."))
	} else {
		setCondition(&st, c.newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability."))
	}
	return st
}

// isScalingEvent reports whether spec.replicas differs from the desired
// replicas recorded on an active ReplicaSet.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range filterActive(append(oldRSs, newRS)) {
		if want, ok := annotationInt32(rs, DesiredReplicasAnnotation); ok && want != desired(d) {
			return true, nil
		}
	}
	return false, nil
}
