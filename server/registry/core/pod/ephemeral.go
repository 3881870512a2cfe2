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

// PrepareEphemeralContainersUpdate keeps of an update through
// pods/ephemeralcontainers only spec.ephemeralContainers: the rest of the
// spec, the status and the metadata the status subresources keep come from
// the stored pod. The generation moves on when the containers change.
func PrepareEphemeralContainersUpdate(_ context.Context, obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	ephemeral := pod.Spec.EphemeralContainers
	pod.Spec = oldPod.Spec
	pod.Spec.EphemeralContainers = ephemeral
	pod.Status = oldPod.Status
	metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &oldPod.ObjectMeta)
	if !equality.Semantic.DeepEqual(ephemeral, oldPod.Spec.EphemeralContainers) {
		pod.Generation++
	}
}

// ValidateEphemeralContainersUpdate is the validation of
// pods/ephemeralcontainers (apicore.ValidatePodEphemeralContainersUpdate).
func ValidateEphemeralContainersUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apicore.ValidatePodEphemeralContainersUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
}
