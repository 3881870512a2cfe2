package replicaset

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// calculateStatus is rs's status for its active and terminating pods at
// now, with the ReplicaFailure condition set after a failed create or
// delete and removed after a clean sync; terminatingReplicas only when the
// owners' status has it.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time, withTerminating bool) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	var fullyLabeled, ready, available int32
	template := labels.SelectorFromSet(rs.Spec.Template.Labels)
	for _, p := range active {
		if template.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if controllerutil.IsPodReady(p) {
			ready++
			if controllerutil.IsPodAvailable(p, rs.Spec.MinReadySeconds, metav1.NewTime(now)) {
				available++
			}
		}
	}
	failure := GetCondition(rs.Status, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ""
		if diff := len(active) - int(replicas(rs)); diff < 0 {
			reason = controllerutil.FailedCreatePodReason
		} else if diff > 0 {
			reason = controllerutil.FailedDeletePodReason
		}
		SetCondition(&status, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		RemoveCondition(&status, appsv1.ReplicaSetReplicaFailure)
	}
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = nil
	if withTerminating {
		status.TerminatingReplicas = ptr.To(int32(len(terminating)))
	}
	return status
}

// updateStatus writes status unless rs already has it and its generation
// is observed, retrying once on a fresh copy. It returns the ReplicaSet as
// written (rs itself when nothing was written).
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if rs.Status.Replicas == status.Replicas &&
		rs.Status.FullyLabeledReplicas == status.FullyLabeledReplicas &&
		rs.Status.ReadyReplicas == status.ReadyReplicas &&
		rs.Status.AvailableReplicas == status.AvailableReplicas &&
		ptr.Equal(rs.Status.TerminatingReplicas, status.TerminatingReplicas) &&
		rs.Generation == rs.Status.ObservedGeneration &&
		reflect.DeepEqual(rs.Status.Conditions, status.Conditions) {
		return rs, nil
	}
	// The generation acted on, not whatever a retry's fresh copy has.
	status.ObservedGeneration = rs.Generation
	var err error
	for attempt := 0; ; attempt++ {
		klog.FromContext(ctx).V(4).Info("Updating status", "replicaSet", klog.KObj(rs),
			"replicas", status.Replicas, "need", replicas(rs), "ready", status.ReadyReplicas,
			"available", status.AvailableReplicas, "observedGeneration", status.ObservedGeneration)
		rs.Status = status
		var updated *appsv1.ReplicaSet
		updated, err = c.owners.UpdateStatus(ctx, rs)
		if err == nil {
			return updated, nil
		}
		if attempt >= 1 {
			return nil, err
		}
		fresh, getErr := c.owners.Get(ctx, rs.Namespace, rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		rs = fresh
	}
}

// GetCondition returns a copy of the condition of type t, or nil.
func GetCondition(status appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for _, c := range status.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// SetCondition puts cond into status, replacing one of its type, unless
// one with the same status and reason is already there.
func SetCondition(status *appsv1.ReplicaSetStatus, cond appsv1.ReplicaSetCondition) {
	if cur := GetCondition(*status, cond.Type); cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		return
	}
	RemoveCondition(status, cond.Type)
	status.Conditions = append(status.Conditions, cond)
}

// RemoveCondition drops the condition of type t from status.
func RemoveCondition(status *appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) {
	var out []appsv1.ReplicaSetCondition
	for _, c := range status.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	status.Conditions = out
}
