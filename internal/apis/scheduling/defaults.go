package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the PriorityClass and PriorityClassList defaulters to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&schedulingv1.PriorityClass{}, func(obj interface{}) {
		DefaultPriorityClass(obj.(*schedulingv1.PriorityClass))
	})
	s.AddTypeDefaultingFunc(&schedulingv1.PriorityClassList{}, func(obj interface{}) {
		list := obj.(*schedulingv1.PriorityClassList)
		for i := range list.Items {
			DefaultPriorityClass(&list.Items[i])
		}
	})
	return nil
}

// DefaultPriorityClass sets preemptionPolicy to PreemptLowerPriority when
// unset.
func DefaultPriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		policy := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &policy
	}
}
