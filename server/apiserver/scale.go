package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/k1s/k1s/server/registry/scale"
)

func selectorString(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return ""
	}
	return s.String()
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// scaleAccessors are the workloads with a scale subresource.
var scaleAccessors = map[schema.GroupResource]scale.Accessor{
	appsv1.Resource("deployments"): {
		Get: func(obj runtime.Object) (int32, int32, string) {
			d := obj.(*appsv1.Deployment)
			return replicas(d.Spec.Replicas), d.Status.Replicas, selectorString(d.Spec.Selector)
		},
		Set: func(obj runtime.Object, n int32) { obj.(*appsv1.Deployment).Spec.Replicas = &n },
	},
	appsv1.Resource("replicasets"): {
		Get: func(obj runtime.Object) (int32, int32, string) {
			rs := obj.(*appsv1.ReplicaSet)
			return replicas(rs.Spec.Replicas), rs.Status.Replicas, selectorString(rs.Spec.Selector)
		},
		Set: func(obj runtime.Object, n int32) { obj.(*appsv1.ReplicaSet).Spec.Replicas = &n },
	},
	appsv1.Resource("statefulsets"): {
		Get: func(obj runtime.Object) (int32, int32, string) {
			ss := obj.(*appsv1.StatefulSet)
			return replicas(ss.Spec.Replicas), ss.Status.Replicas, selectorString(ss.Spec.Selector)
		},
		Set: func(obj runtime.Object, n int32) { obj.(*appsv1.StatefulSet).Spec.Replicas = &n },
	},
	corev1.Resource("replicationcontrollers"): {
		Get: func(obj runtime.Object) (int32, int32, string) {
			rc := obj.(*corev1.ReplicationController)
			return replicas(rc.Spec.Replicas), rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector).String()
		},
		Set: func(obj runtime.Object, n int32) { obj.(*corev1.ReplicationController).Spec.Replicas = &n },
	},
}
