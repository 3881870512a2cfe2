package certificates

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/objectmeta"
)

// validateObjectMeta is objectmeta.Validate.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	return objectmeta.Validate(meta, namespaced, nameFn)
}

// validateObjectMetaUpdate is objectmeta.ValidateUpdate.
func validateObjectMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta) field.ErrorList {
	return objectmeta.ValidateUpdate(newMeta, oldMeta)
}
