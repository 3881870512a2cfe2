// Package objectmeta validates the metadata of objects of the API groups
// other than core: apimachinery's checks plus the Kubernetes rule on
// finalizer names. Each group's package validates through it.
package objectmeta

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var metadataPath = field.NewPath("metadata")

// Validate runs apimachinery's object metadata checks and then the
// Kubernetes rule that a finalizer without a domain prefix must be one of
// the standard finalizers.
func Validate(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, metadataPath)
	return append(errs, validateFinalizerNames(meta.Finalizers)...)
}

// ValidateUpdate is the update counterpart of Validate.
func ValidateUpdate(newMeta, oldMeta *metav1.ObjectMeta) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, metadataPath)
	return append(errs, validateFinalizerNames(newMeta.Finalizers)...)
}

func validateFinalizerNames(finalizers []string) field.ErrorList {
	var errs field.ErrorList
	for i, name := range finalizers {
		if strings.Contains(name, "/") {
			continue
		}
		switch name {
		case string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents:
		default:
			errs = append(errs, field.Invalid(metadataPath.Child("finalizers").Index(i), name,
				"name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}
