package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"
)

// rolloutRolling takes one step of a rolling update: grow the new
// ReplicaSet within maxSurge, else shrink old ones within maxUnavailable,
// else (when complete) clean up old revisions; then write the status.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledUp, err := c.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := c.reconcileOldReplicaSets(ctx, allRSs, filterActive(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// reconcileNewReplicaSet sizes the new ReplicaSet: down to spec.replicas
// if above, up as far as maxSurge allows if below.
func (c *Controller) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch {
	case replicasOf(newRS) == desired(d):
		return false, nil
	case replicasOf(newRS) > desired(d):
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, desired(d), d, false)
		return scaled, err
	}
	n, err := newRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, n, d, false)
	return scaled, err
}

// reconcileOldReplicaSets shrinks the old ReplicaSets as far as
// maxUnavailable allows, unavailable pods of the new ReplicaSet counted
// against it: first their unhealthy pods, then available ones.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	logger := klog.FromContext(ctx)
	if sumReplicas(oldRSs) == 0 {
		return false, nil
	}
	minAvailable := desired(d) - maxUnavailable(d)
	newUnavailable := replicasOf(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := sumReplicas(allRSs) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	// Unhealthy old pods go first: they cost no availability and would
	// otherwise block the rollout.
	oldRSs, cleaned, err := c.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		// Upstream swallows this; the next sync tries again.
		logger.V(2).Info("Failed to scale down unhealthy old replicas", "deployment", klog.KObj(d), "err", err)
		return false, nil
	}
	allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaled, err := c.scaleDownOldReplicaSetsForRollingUpdate(ctx, allRSs, oldRSs, d)
	if err != nil {
		logger.V(2).Info("Failed to scale down old replica sets", "deployment", klog.KObj(d), "err", err)
		return false, nil
	}
	logger.V(4).Info("Scaled down old replica sets", "deployment", klog.KObj(d), "unhealthy", cleaned, "available", scaled)
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthyReplicas removes up to maxCleanup unavailable replicas
// from the old ReplicaSets, oldest first.
func (c *Controller) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) ([]*appsv1.ReplicaSet, int32, error) {
	sort.Sort(byCreation(oldRSs))
	var total int32
	for i, rs := range oldRSs {
		if total >= maxCleanup {
			break
		}
		if replicasOf(rs) == 0 || replicasOf(rs) == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxCleanup-total, replicasOf(rs)-rs.Status.AvailableReplicas)
		target := replicasOf(rs) - n
		if target > replicasOf(rs) {
			return nil, 0, fmt.Errorf("cleaning up unhealthy replicas: invalid scale down of %s/%s from %d to %d", rs.Namespace, rs.Name, replicasOf(rs), target)
		}
		_, updated, err := c.scaleReplicaSet(ctx, rs, target, d, false)
		if err != nil {
			return nil, total, err
		}
		total += n
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// scaleDownOldReplicaSetsForRollingUpdate removes available old replicas
// while more than minAvailable pods are available, oldest ReplicaSet
// first.
func (c *Controller) scaleDownOldReplicaSetsForRollingUpdate(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := desired(d) - maxUnavailable(d)
	available := availableReplicas(allRSs)
	if available <= minAvailable {
		return 0, nil
	}
	sort.Sort(byCreation(oldRSs))
	want := available - minAvailable
	var total int32
	for _, rs := range oldRSs {
		if total >= want {
			break
		}
		if replicasOf(rs) == 0 {
			continue
		}
		n := min(replicasOf(rs), want-total)
		if _, _, err := c.scaleReplicaSet(ctx, rs, replicasOf(rs)-n, d, false); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
