package autoscaling

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RegisterDefaults adds the Scale defaulter to s. Scale has no defaulted
// fields; registering it keeps "every kind has a defaulter" true.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&autoscalingv1.Scale{}, func(obj interface{}) {
		DefaultScale(obj.(*autoscalingv1.Scale))
	})
	return nil
}

// DefaultScale sets defaults on a Scale. Nothing is defaulted.
func DefaultScale(s *autoscalingv1.Scale) {}

// ValidateScale validates a Scale written to a scale subresource:
// managedFields must be well formed and spec.replicas non-negative.
func ValidateScale(s *autoscalingv1.Scale) field.ErrorList {
	errs := metav1validation.ValidateManagedFields(s.ManagedFields, field.NewPath("metadata", "managedFields"))
	return append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(s.Spec.Replicas), field.NewPath("spec", "replicas"))...)
}

// ValidateScaleUpdate validates an update through a scale subresource. The
// rules are those of ValidateScale; old is accepted for symmetry with the
// other Validate<Kind>Update functions.
func ValidateScaleUpdate(s, old *autoscalingv1.Scale) field.ErrorList {
	return ValidateScale(s)
}
