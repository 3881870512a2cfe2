package quota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

var servicesGroupResource = corev1.Resource("services")

var serviceObjectCount = generic.ObjectCountQuotaResourceNameFor(servicesGroupResource)

var serviceResourceNames = []corev1.ResourceName{
	serviceObjectCount,
	corev1.ResourceServices,
	corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers,
}

// serviceEvaluator measures the quota usage of services.
type serviceEvaluator struct {
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = (*serviceEvaluator)(nil)

// NewServiceEvaluator returns the evaluator for services. f lists
// services for UsageStats and may be nil when only admission uses it.
func NewServiceEvaluator(f quota.ListerForResourceFunc) quota.Evaluator {
	return &serviceEvaluator{list: listFunc(f, corev1.SchemeGroupVersion.WithResource("services"))}
}

// GroupResource returns the resource the evaluator measures.
func (e *serviceEvaluator) GroupResource() schema.GroupResource { return servicesGroupResource }

// Constraints has nothing to require of this resource.
func (e *serviceEvaluator) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Handles is true for creates and updates (the type may change) of
// services proper.
func (e *serviceEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	return a.GetSubresource() == "" && (op == admission.Create || op == admission.Update)
}

// Matches reports whether the quota limits a resource of item and item is in all its scopes.
func (e *serviceEvaluator) Matches(rq *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(rq, item, e.MatchingResources, generic.MatchesNoScopeFunc)
}

// MatchingResources returns the names in input that the evaluator measures.
func (e *serviceEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	return quota.Intersection(input, serviceResourceNames)
}

// MatchingScopes returns the scope selectors that item satisfies.
func (e *serviceEvaluator) MatchingScopes(runtime.Object, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return []corev1.ScopedResourceSelectorRequirement{}, nil
}

// UncoveredQuotaScopes returns the limited scopes no matched quota scope covers.
func (e *serviceEvaluator) UncoveredQuotaScopes([]corev1.ScopedResourceSelectorRequirement, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return []corev1.ScopedResourceSelectorRequirement{}, nil
}

// Usage returns the quota usage of item.
func (e *serviceEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	svc, ok := item.(*corev1.Service)
	if !ok || svc == nil {
		return corev1.ResourceList{}, fmt.Errorf("expected *v1.Service, got %T", item)
	}
	return ServiceUsage(svc), nil
}

// UsageStats sums the usage of the stored objects in a namespace that match the scopes.
func (e *serviceEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, e.list, generic.MatchesNoScopeFunc, e.Usage)
}

// ServiceUsage returns the quota usage of svc: one service, and its node
// ports and load balancer. A NodePort service uses one node port per port;
// a LoadBalancer service does too, unless it turns node port allocation
// off, when only the ports that name a node port count.
func ServiceUsage(svc *corev1.Service) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	result := corev1.ResourceList{
		serviceObjectCount:                   one,
		corev1.ResourceServices:              one,
		corev1.ResourceServicesNodePorts:     resource.Quantity{Format: resource.DecimalSI},
		corev1.ResourceServicesLoadBalancers: resource.Quantity{Format: resource.DecimalSI},
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		result[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(svc.Spec.Ports)), resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		nodePorts := len(svc.Spec.Ports)
		if svc.Spec.AllocateLoadBalancerNodePorts != nil && !*svc.Spec.AllocateLoadBalancerNodePorts {
			nodePorts = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					nodePorts++
				}
			}
		}
		result[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(nodePorts), resource.DecimalSI)
		result[corev1.ResourceServicesLoadBalancers] = one
	}
	return result
}
