package pod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apicore "github.com/k1s/k1s/internal/apis/core"
)

// PrepareResizeUpdate keeps of an update through pods/resize only the
// resources and resize policies of the pod's containers and init
// containers: the rest of the spec, the status and the metadata the
// status subresources keep come from the stored pod. The generation moves
// on when they change (the agent reports it as observedGeneration once
// it resized the containers).
func PrepareResizeUpdate(_ context.Context, obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	spec := *oldPod.Spec.DeepCopy()
	take := func(into []corev1.Container, from []corev1.Container) {
		for i := range into {
			for j := range from {
				if from[j].Name == into[i].Name {
					into[i].Resources = from[j].Resources
					into[i].ResizePolicy = from[j].ResizePolicy
				}
			}
		}
	}
	take(spec.Containers, pod.Spec.Containers)
	take(spec.InitContainers, pod.Spec.InitContainers)
	pod.Spec = spec
	pod.Status = oldPod.Status
	metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &oldPod.ObjectMeta)
	if !equality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		pod.Generation++
	}
}

// ValidateResizeUpdate is the validation of pods/resize
// (apicore.ValidatePodResize).
func ValidateResizeUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apicore.ValidatePodResize(obj.(*corev1.Pod), old.(*corev1.Pod))
}
