package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var deploymentPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Ready", "string", "Ready pods out of desired replicas."),
		col("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		col("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
		wideCol("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, d *appsv1.Deployment) []interface{} {
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		return []interface{}{
			d.Name,
			fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, deref32(d.Spec.Replicas)),
			int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas),
			since(now, d.CreationTimestamp), names, images, selector,
		}
	}),
}

var replicaSetPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		col("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		col("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
		wideCol("Selector", "string", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, rs *appsv1.ReplicaSet) []interface{} {
		names, images := containerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{
			rs.Name, int64(deref32(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			since(now, rs.CreationTimestamp), names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
		}
	}),
}

var statefulSetPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Ready", "string", "Ready pods out of desired replicas."),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
	},
	rows: eachObject(func(now time.Time, ss *appsv1.StatefulSet) []interface{} {
		names, images := containerCells(ss.Spec.Template.Spec.Containers)
		return []interface{}{
			ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, deref32(ss.Spec.Replicas)),
			since(now, ss.CreationTimestamp), names, images,
		}
	}),
}

var daemonSetPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
		col("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
		col("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
		col("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
		col("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
		col("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
		wideCol("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, ds *appsv1.DaemonSet) []interface{} {
		st := ds.Status
		names, images := containerCells(ds.Spec.Template.Spec.Containers)
		return []interface{}{
			ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
			int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable),
			labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector), since(now, ds.CreationTimestamp),
			names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
		}
	}),
}

var controllerRevisionPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Controller", "string", "The object that owns and controls this revision."),
		col("Revision", "string", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
		ageColumn(),
	},
	rows: func(now time.Time, objs []runtime.Object, fromList bool) ([]metav1.TableRow, error) {
		// Parsed up front: a bad controller apiVersion fails the request,
		// as upstream's does.
		for _, o := range objs {
			if cr, ok := o.(*appsv1.ControllerRevision); ok {
				if ref := metav1.GetControllerOf(cr); ref != nil {
					if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
						return nil, fmt.Errorf("controller revision %s: %w", cr.Name, err)
					}
				}
			}
		}
		return eachObject(func(now time.Time, cr *appsv1.ControllerRevision) []interface{} {
			return []interface{}{cr.Name, revisionController(cr), cr.Revision, since(now, cr.CreationTimestamp)}
		})(now, objs, fromList)
	},
}

// revisionController renders the controller reference as
// "kind.group/name" in lower case ("daemonset.apps/fluentd"), or <none>.
func revisionController(cr *appsv1.ControllerRevision) string {
	ref := metav1.GetControllerOf(cr)
	if ref == nil {
		return none
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return none
	}
	gk := gv.WithKind(ref.Kind).GroupKind()
	if gk.Empty() {
		return ref.Name
	}
	return strings.ToLower(gk.String()) + "/" + ref.Name
}
