package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// rollback serves the deprecated rollback annotation (set by old clients
// through extensions/v1beta1 rollback; kubectl rollout undo patches the
// template instead): the Deployment gets the template and annotations of
// the ReplicaSet with the asked revision (0: the previous one), and the
// annotation is cleared in any case.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	to := *rollbackTo(d)
	if to == 0 {
		if to = lastRevision(allRSs); to == 0 {
			c.recorder.Eventf(d, corev1.EventTypeWarning, RollbackRevisionNotFound, "%s", "Unable to find last revision.")
			return c.clearRollbackTo(ctx, d)
		}
	}
	for _, rs := range allRSs {
		if rs == nil {
			continue
		}
		v, err := revision(rs)
		if err != nil || v != to {
			continue
		}
		if equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			c.recorder.Eventf(d, corev1.EventTypeWarning, RollbackTemplateUnchanged, "The rollback revision contains the same template as current deployment %q", d.Name)
			return c.clearRollbackTo(ctx, d)
		}
		klog.FromContext(ctx).V(4).Info("Rolling back deployment", "deployment", klog.KObj(d), "revision", to)
		d.Spec.Template.ObjectMeta = *rs.Spec.Template.ObjectMeta.DeepCopy()
		d.Spec.Template.Spec = *rs.Spec.Template.Spec.DeepCopy()
		delete(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		setAnnotationsFromReplicaSet(d, rs)
		if err := c.clearRollbackTo(ctx, d); err != nil {
			return err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, RollbackDone, "Rolled back deployment %q to revision %d", d.Name, to)
		return nil
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, RollbackRevisionNotFound, "%s", "Unable to find the revision to rollback to.")
	return c.clearRollbackTo(ctx, d)
}

// clearRollbackTo removes the rollback annotation and writes d.
func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, appsv1.DeprecatedRollbackTo)
	if _, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}
