package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/informers"
	"k8s.io/utils/clock"
)

// legacyCountNames are the object counts that also have a name without
// the count/ prefix, from before count/<resource>.<group> existed.
var legacyCountNames = map[schema.GroupVersionResource]corev1.ResourceName{
	corev1.SchemeGroupVersion.WithResource("configmaps"):             corev1.ResourceConfigMaps,
	corev1.SchemeGroupVersion.WithResource("secrets"):                corev1.ResourceSecrets,
	corev1.SchemeGroupVersion.WithResource("replicationcontrollers"): corev1.ResourceReplicationControllers,
	corev1.SchemeGroupVersion.WithResource("resourcequotas"):         corev1.ResourceQuotas,
}

// DefaultCountedResources returns the resources, besides pods, services,
// claims and the four with legacy names, that NewRegistry gives an
// object-count evaluator, so that CalculateStatus can measure
// count/<resource>.<group> for them. Admission counts any other resource
// too, but its usage can then only be measured by an evaluator added to
// the registry.
func DefaultCountedResources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
		corev1.SchemeGroupVersion.WithResource("limitranges"),
		corev1.SchemeGroupVersion.WithResource("podtemplates"),
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: "apps", Version: "v1", Resource: "replicasets"},
		{Group: "apps", Version: "v1", Resource: "statefulsets"},
		{Group: "apps", Version: "v1", Resource: "daemonsets"},
		{Group: "batch", Version: "v1", Resource: "jobs"},
		{Group: "batch", Version: "v1", Resource: "cronjobs"},
	}
}

// NewEvaluators returns the pod, service and claim evaluators, the
// object-count evaluators with legacy names, and one object-count
// evaluator per counted resource. f provides listers for UsageStats and may
// be nil for admission-only use; clk is the pod evaluator's clock.
func NewEvaluators(f quota.ListerForResourceFunc, clk clock.PassiveClock, counted []schema.GroupVersionResource) []quota.Evaluator {
	evaluators := []quota.Evaluator{
		NewPodEvaluator(f, clk),
		NewServiceEvaluator(f),
		NewPVCEvaluator(f),
	}
	for gvr, legacy := range legacyCountNames {
		evaluators = append(evaluators, generic.NewObjectCountEvaluator(gvr.GroupResource(), listFunc(f, gvr), legacy))
	}
	for _, gvr := range counted {
		evaluators = append(evaluators, generic.NewObjectCountEvaluator(gvr.GroupResource(), listFunc(f, gvr), ""))
	}
	return evaluators
}

// NewRegistry returns a registry of NewEvaluators(f, real clock,
// DefaultCountedResources()). The registry is safe for concurrent use.
// Admission adds evaluators to it for resources it first sees.
func NewRegistry(f quota.ListerForResourceFunc) quota.Registry {
	return generic.NewRegistry(NewEvaluators(f, clock.RealClock{}, DefaultCountedResources()))
}

// ListerFuncForFactory returns listers from the factory's generic
// informers; a lister fails until its informer has synced. Informers are
// registered on first use, so the caller must start the factory again
// (Start is idempotent) after the first UsageStats of a resource, or ask
// factory.ForResource for the resources it needs before starting it.
func ListerFuncForFactory(factory informers.SharedInformerFactory) quota.ListerForResourceFunc {
	return generic.ListerFuncForResourceFunc(factory.ForResource)
}

// ignoredResources are never quota-ed: virtual resources that are not
// stored, and events.
var ignoredResources = []schema.GroupResource{
	{Resource: "bindings"},
	{Resource: "componentstatuses"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
}

// IgnoredResources returns a fresh set of the resources quota ignores.
func IgnoredResources() map[schema.GroupResource]struct{} {
	out := make(map[schema.GroupResource]struct{}, len(ignoredResources))
	for _, gr := range ignoredResources {
		out[gr] = struct{}{}
	}
	return out
}

// NewConfiguration returns the quota configuration of the registry's
// evaluators and IgnoredResources.
func NewConfiguration(registry quota.Registry) quota.Configuration {
	return generic.NewConfiguration(registry.List(), IgnoredResources())
}
