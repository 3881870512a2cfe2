package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRecreate takes one step of a Recreate rollout: old ReplicaSets to
// 0; once none of their pods runs, the new ReplicaSet (created only then)
// to spec.replicas; then status, and cleanup when complete.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledDown, err := c.scaleDownOldReplicaSetsForRecreate(ctx, filterActive(oldRSs), d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if oldPodsRunning(newRS, oldRSs, pods) {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if newRS == nil {
		newRS, oldRSs, err = c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
		if err != nil {
			return err
		}
		allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, desired(d), d, false); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (c *Controller) scaleDownOldReplicaSetsForRecreate(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	scaled := false
	for i, rs := range oldRSs {
		if replicasOf(rs) == 0 {
			continue
		}
		ok, updated, err := c.scaleReplicaSet(ctx, rs, 0, d, false)
		if err != nil {
			return false, err
		}
		if ok {
			oldRSs[i] = updated
			scaled = true
		}
	}
	return scaled, nil
}

// oldPodsRunning reports whether an old ReplicaSet still counts pods or
// has a pod that is not terminal (Unknown counts as running).
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) bool {
	if actualReplicas(oldRSs) > 0 {
		return true
	}
	for uid, list := range pods {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range list {
			if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
