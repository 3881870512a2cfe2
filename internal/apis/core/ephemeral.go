package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePodEphemeralContainersUpdate validates an update through the
// pods/ephemeralcontainers subresource: the pod as a whole (the new
// ephemeral containers included), no static pod, and existing ephemeral
// containers neither removed nor changed (the list's order may change).
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	errs := validateMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validatePodMetaAndSpec(newPod)...)
	if _, ok := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(newPod.Spec.EphemeralContainers))
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		c, ok := byName[old.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		case !equality.Semantic.DeepEqual(old, *c):
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n", old.Name)))
		}
	}
	return errs
}
