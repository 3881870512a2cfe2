package policy

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds defaulters for PodDisruptionBudget, its List and
// Eviction to s. policy/v1 has no defaulted fields, so they change nothing;
// they exist so that every kind has a defaulter.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&policyv1.PodDisruptionBudget{}, func(obj interface{}) {
		DefaultPodDisruptionBudget(obj.(*policyv1.PodDisruptionBudget))
	})
	s.AddTypeDefaultingFunc(&policyv1.PodDisruptionBudgetList{}, func(obj interface{}) {
		list := obj.(*policyv1.PodDisruptionBudgetList)
		for i := range list.Items {
			DefaultPodDisruptionBudget(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&policyv1.Eviction{}, func(obj interface{}) {
		DefaultEviction(obj.(*policyv1.Eviction))
	})
	return nil
}

// DefaultPodDisruptionBudget sets defaults on a PodDisruptionBudget. In
// policy/v1 nothing is defaulted: an unset unhealthyPodEvictionPolicy means
// IfHealthyBudget to the eviction logic, and an unset or empty selector
// selects no pods.
func DefaultPodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) {}

// DefaultEviction sets defaults on an Eviction. Nothing is defaulted.
func DefaultEviction(ev *policyv1.Eviction) {}
