package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// syncRolloutStatus writes the status of a rolling-out Deployment,
// including the Progressing condition against progressDeadlineSeconds and
// the ReplicaFailure condition taken from the ReplicaSets, and requeues the
// Deployment for its deadline when nothing changed.
func (c *Controller) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := c.calculateStatus(allRSs, newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			setCondition(&st, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSAvailableReason, subject+" has successfully progressed."))
		case deploymentProgressing(d, &st):
			// Progress refreshes lastUpdateTime even with the same reason.
			cond := c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReplicaSetUpdatedReason, subject+" is progressing.")
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, cond)
		case c.timedOut(d, &st):
			setCondition(&st, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, TimedOutReason, subject+" has timed out progressing."))
		}
	}
	if failures := replicaFailures(allRSs, newRS); len(failures) > 0 {
		setCondition(&st, failures[0])
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	if reflect.DeepEqual(d.Status, st) {
		c.requeueStuckDeployment(ctx, d, st)
		return nil
	}
	d.Status = st
	return c.updateStatus(ctx, d)
}

// timedOut reports whether the Progressing condition in st is older than
// progressDeadlineSeconds (or already says so).
func (c *Controller) timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	cond := getCondition(*st, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason == NewRSAvailableReason {
		return false
	}
	if cond.Reason == TimedOutReason {
		return true
	}
	deadline := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(c.clock.Now())
}

// replicaFailures turns the ReplicaSets' ReplicaFailure conditions into
// Deployment conditions, the new ReplicaSet's first.
func replicaFailures(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	conv := func(rs *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
		var out []appsv1.DeploymentCondition
		if rs == nil {
			return nil
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				out = append(out, appsv1.DeploymentCondition{
					Type: appsv1.DeploymentConditionType(c.Type), Status: c.Status,
					LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime,
					Reason: c.Reason, Message: c.Message,
				})
			}
		}
		return out
	}
	if out := conv(newRS); len(out) > 0 {
		return out
	}
	var out []appsv1.DeploymentCondition
	for _, rs := range allRSs {
		out = append(out, conv(rs)...)
	}
	return out
}

// requeueStuckDeployment schedules a sync for when a rollout without
// progress reaches its deadline. It returns the delay, 0 for at once
// (rate-limited) or -1 for none.
func (c *Controller) requeueStuckDeployment(ctx context.Context, d *appsv1.Deployment, st appsv1.DeploymentStatus) time.Duration {
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil {
		return -1
	}
	if deploymentComplete(d, &st) || cur.Reason == TimedOutReason {
		return -1
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(c.clock.Now())
	if after < time.Second {
		klog.FromContext(ctx).V(4).Info("Queueing deployment for a progress check now", "deployment", klog.KObj(d))
		c.queue.AddRateLimited(key(d))
		return 0
	}
	klog.FromContext(ctx).V(4).Info("Queueing deployment for a progress check", "deployment", klog.KObj(d), "after", after)
	// A second more so the check does not land just before the deadline.
	c.queue.AddAfter(key(d), after+time.Second)
	return after
}
