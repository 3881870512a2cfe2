package autoscaling

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RegisterDefaults adds the Scale defaulter and the HorizontalPodAutoscaler
// defaulters of autoscaling/v1 and autoscaling/v2 (and their lists) to s.
// Scale has no defaulted fields; registering it keeps "every kind has a
// defaulter" true.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&autoscalingv1.Scale{}, func(obj interface{}) {
		DefaultScale(obj.(*autoscalingv1.Scale))
	})
	s.AddTypeDefaultingFunc(&autoscalingv1.HorizontalPodAutoscaler{}, func(obj interface{}) {
		DefaultHorizontalPodAutoscalerV1(obj.(*autoscalingv1.HorizontalPodAutoscaler))
	})
	s.AddTypeDefaultingFunc(&autoscalingv1.HorizontalPodAutoscalerList{}, func(obj interface{}) {
		l := obj.(*autoscalingv1.HorizontalPodAutoscalerList)
		for i := range l.Items {
			DefaultHorizontalPodAutoscalerV1(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&autoscalingv2.HorizontalPodAutoscaler{}, func(obj interface{}) {
		DefaultHorizontalPodAutoscaler(obj.(*autoscalingv2.HorizontalPodAutoscaler))
	})
	s.AddTypeDefaultingFunc(&autoscalingv2.HorizontalPodAutoscalerList{}, func(obj interface{}) {
		l := obj.(*autoscalingv2.HorizontalPodAutoscalerList)
		for i := range l.Items {
			DefaultHorizontalPodAutoscaler(&l.Items[i])
		}
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
