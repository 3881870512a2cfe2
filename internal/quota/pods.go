package quota

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"
)

var podsGroupResource = corev1.Resource("pods")

// podObjectCount is count/pods: every stored pod, terminal or not.
var podObjectCount = generic.ObjectCountQuotaResourceNameFor(podsGroupResource)

// podResourceNames are the fixed quota resources the pod evaluator tracks.
var podResourceNames = []corev1.ResourceName{
	podObjectCount,
	corev1.ResourcePods,
	corev1.ResourceCPU,
	corev1.ResourceMemory,
	corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU,
	corev1.ResourceRequestsMemory,
	corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU,
	corev1.ResourceLimitsMemory,
	corev1.ResourceLimitsEphemeralStorage,
}

// podResourcePrefixes are prefixes of further quota resources the pod
// evaluator tracks (one name per huge page size).
var podResourcePrefixes = []string{corev1.ResourceHugePagesPrefix, corev1.ResourceRequestsHugePagesPrefix}

// requiredPerContainer are the quota resources that, when a matching quota
// limits them, every container must request or limit explicitly. This is
// a historical rule kept for compatibility and not extended to newer
// resources.
var requiredPerContainer = sets.New[string](
	string(corev1.ResourceCPU),
	string(corev1.ResourceMemory),
	string(corev1.ResourceRequestsCPU),
	string(corev1.ResourceRequestsMemory),
	string(corev1.ResourceLimitsCPU),
	string(corev1.ResourceLimitsMemory),
)

// podEvaluator measures the quota usage of pods.
type podEvaluator struct {
	list  generic.ListFuncByNamespace
	clock clock.PassiveClock
}

var _ quota.Evaluator = (*podEvaluator)(nil)

// NewPodEvaluator returns the evaluator for pods. f lists pods for
// UsageStats and may be nil when only admission uses the evaluator; clk
// decides whether a deleting pod is past its grace period.
func NewPodEvaluator(f quota.ListerForResourceFunc, clk clock.PassiveClock) quota.Evaluator {
	return &podEvaluator{list: listFunc(f, corev1.SchemeGroupVersion.WithResource("pods")), clock: clk}
}

// listFunc is generic.ListResourceUsingListerFunc that fails instead of
// panicking when no lister func was given.
func listFunc(f quota.ListerForResourceFunc, gvr schema.GroupVersionResource) generic.ListFuncByNamespace {
	if f == nil {
		return func(string) ([]runtime.Object, error) {
			return nil, fmt.Errorf("no lister for %s: evaluator built for admission only", gvr.GroupResource())
		}
	}
	return generic.ListResourceUsingListerFunc(f, gvr)
}

// GroupResource returns the resource the evaluator measures.
func (e *podEvaluator) GroupResource() schema.GroupResource { return podsGroupResource }

// Constraints requires, for each cpu or memory quota resource in required,
// that every container and init container sets it, unless the pod sets
// pod-level resources.
func (e *podEvaluator) Constraints(required []corev1.ResourceName, item runtime.Object) error {
	pod, err := toPod(item)
	if err != nil {
		return err
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	needed := sets.New(quota.ToSet(required).UnsortedList()...).Intersection(requiredPerContainer)
	if needed.Len() == 0 {
		return nil
	}
	missing := map[string]sets.Set[string]{}
	check := func(c *corev1.Container) {
		have := sets.New[string]()
		for name := range computeUsage(c.Resources.Requests, c.Resources.Limits) {
			have.Insert(string(name))
		}
		for _, name := range needed.Difference(have).UnsortedList() {
			if missing[name] == nil {
				missing[name] = sets.New[string]()
			}
			missing[name].Insert(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := sets.List(sets.KeySet(missing))
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(sets.List(missing[name]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// Handles is true for pod creates, for pod updates that move the pod in or
// out of the Terminating scope, and for pods/resize updates.
func (e *podEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	switch a.GetSubresource() {
	case "":
		if op == admission.Update {
			pod, err1 := toPod(a.GetObject())
			old, err2 := toPod(a.GetOldObject())
			return err1 == nil && err2 == nil && IsTerminating(pod) != IsTerminating(old)
		}
		return op == admission.Create
	case "resize":
		return op == admission.Update
	}
	return false
}

// Matches reports whether the quota limits a resource of item and item is in all its scopes.
func (e *podEvaluator) Matches(rq *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(rq, item, e.MatchingResources, podMatchesScope)
}

// MatchingResources returns the names in input that the evaluator measures.
func (e *podEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	result := quota.Intersection(input, podResourceNames)
	for _, name := range input {
		if quota.ContainsPrefix(podResourcePrefixes, name) || isExtendedQuotaName(name) {
			result = append(result, name)
		}
	}
	return result
}

// MatchingScopes returns the scope selectors that item satisfies.
func (e *podEvaluator) MatchingScopes(item runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return matchingScopes(item, selectors, podMatchesScope)
}

// UncoveredQuotaScopes returns the limited scopes no matched quota scope covers.
func (e *podEvaluator) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return uncoveredScopes(limited, matched), nil
}

// Usage returns the quota usage of item.
func (e *podEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	pod, err := toPod(item)
	if err != nil {
		return corev1.ResourceList{}, err
	}
	return PodUsage(pod, e.clock.Now()), nil
}

// UsageStats sums the usage of the stored objects in a namespace that match the scopes.
func (e *podEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, e.list, podMatchesScope, e.Usage)
}

// PodUsage returns the quota usage of pod at time now: count/pods always,
// and the compute resources and "pods" only while PodCountsCompute.
// Requests and limits are the pod's effective ones (init containers as the
// larger of each and the sum of the rest, sidecars added, pod overhead and
// pod-level resources included, in-progress resizes at their larger value).
func PodUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	result := corev1.ResourceList{podObjectCount: *resource.NewQuantity(1, resource.DecimalSI)}
	if !PodCountsCompute(pod, now) {
		return result
	}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	requests := resourcehelper.PodRequests(pod, opts)
	limits := resourcehelper.PodLimits(pod, opts)
	return quota.Add(result, computeUsage(requests, limits))
}

// PodCountsCompute reports whether pod is charged for compute quota at
// time now: not when it has finished (Succeeded or Failed) nor when it is
// being deleted and its grace period has run out (a lost node's pods would
// otherwise hold quota forever).
func PodCountsCompute(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Add(grace)) {
			return false
		}
	}
	return true
}

// computeUsage turns requests and limits into quota resources.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	result := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	for _, r := range []struct {
		name, shorthandAndRequest, request, limit corev1.ResourceName
	}{
		{corev1.ResourceCPU, corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			result[r.shorthandAndRequest] = q
			result[r.request] = q
		}
		if q, ok := limits[r.name]; ok {
			result[r.limit] = q
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			result[name] = q
			result[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		case isExtendedResourceName(name):
			// Extended resources cannot be overcommitted, so only their
			// requests are quota-ed.
			result[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		}
	}
	return result
}

// isNativeResource reports whether name is in the kubernetes.io domain,
// which unqualified names are too.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName reports whether a container resource name is an
// extended resource (outside kubernetes.io) that can be quota-ed as
// requests.<name>.
func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isExtendedQuotaName reports whether a quota resource name is
// requests.<extended resource>.
func isExtendedQuotaName(name corev1.ResourceName) bool {
	return !isNativeResource(name) && strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

func toPod(obj runtime.Object) (*corev1.Pod, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		return nil, fmt.Errorf("expected *v1.Pod, got %T", obj)
	}
	return pod, nil
}

// IsTerminating reports whether pod is in the Terminating quota scope: it
// has an activeDeadlineSeconds.
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// IsBestEffort reports whether pod is in the BestEffort quota scope: its
// QoS class is BestEffort.
func IsBestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	hasCompute := func(l corev1.ResourceList) bool {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[name]; ok && !q.IsZero() {
				return true
			}
		}
		return false
	}
	if pod.Spec.Resources != nil && (hasCompute(pod.Spec.Resources.Requests) || hasCompute(pod.Spec.Resources.Limits)) {
		return false
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if hasCompute(c.Resources.Requests) || hasCompute(c.Resources.Limits) {
				return false
			}
		}
	}
	return true
}

// podMatchesScope reports whether the pod in object is in a scope.
func podMatchesScope(selector corev1.ScopedResourceSelectorRequirement, object runtime.Object) (bool, error) {
	pod, err := toPod(object)
	if err != nil {
		return false, err
	}
	switch selector.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return IsBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !IsBestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		var names []string
		if pod.Spec.PriorityClassName != "" {
			names = []string{pod.Spec.PriorityClassName}
		}
		return scopeSelectorMatches(selector, names)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod), nil
	}
	return false, nil
}

// scopeSelectorMatches evaluates a scope selector requirement against the
// values an object has for that scope (none, or several): it matches if
// one value does, or, with no value, if the requirement accepts absence.
func scopeSelectorMatches(req corev1.ScopedResourceSelectorRequirement, values []string) (bool, error) {
	if req.Operator == corev1.ScopeSelectorOpExists {
		return len(values) > 0, nil
	}
	sel, err := scopeRequirementSelector(req)
	if err != nil {
		// A requirement the API refuses now (a value that is no label
		// value) but that was stored anyway: objects that no reading of
		// it matches are out of its scope; the others cannot be
		// evaluated, and admission refuses them naming the quota.
		if !couldMatch(req, values) {
			return false, nil
		}
		return false, fmt.Errorf("failed to parse and convert selector: %w", err)
	}
	key := string(req.ScopeName)
	if len(values) == 0 {
		return sel.Matches(labels.Set{}), nil
	}
	for _, v := range values {
		if sel.Matches(labels.Set{key: v}) {
			return true, nil
		}
	}
	return false, nil
}

// couldMatch reports whether req matches values when its values are
// compared as plain strings.
func couldMatch(req corev1.ScopedResourceSelectorRequirement, values []string) bool {
	in := slices.ContainsFunc(values, func(v string) bool { return slices.Contains(req.Values, v) })
	switch req.Operator {
	case corev1.ScopeSelectorOpIn:
		return in
	case corev1.ScopeSelectorOpNotIn:
		return !in
	case corev1.ScopeSelectorOpDoesNotExist:
		return len(values) == 0
	}
	return true
}

// scopeRequirementSelector turns a scope requirement into a label selector
// on a key named after the scope.
func scopeRequirementSelector(req corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	var op selection.Operator
	switch req.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, fmt.Errorf("%q is not a valid scope selector operator", req.Operator)
	}
	r, err := labels.NewRequirement(string(req.ScopeName), op, slices.Clone(req.Values))
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

// matchingScopes returns the selectors that item matches.
func matchingScopes(item runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement, match generic.MatchesScopeFunc) ([]corev1.ScopedResourceSelectorRequirement, error) {
	matched := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range selectors {
		ok, err := match(s, item)
		if err != nil {
			return []corev1.ScopedResourceSelectorRequirement{}, fmt.Errorf("error on matching scope %v: %w", s, err)
		}
		if ok {
			matched = append(matched, s)
		}
	}
	return matched, nil
}

// uncoveredScopes returns the limited scopes that no matched quota scope
// names.
func uncoveredScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) []corev1.ScopedResourceSelectorRequirement {
	out := []corev1.ScopedResourceSelectorRequirement{}
	for _, l := range limited {
		covered := slices.ContainsFunc(matched, func(m corev1.ScopedResourceSelectorRequirement) bool {
			return m.ScopeName == l.ScopeName
		})
		if !covered {
			out = append(out, l)
		}
	}
	return out
}

// usesCrossNamespaceAffinity reports whether any pod (anti-)affinity term
// of pod selects pods in other namespaces.
func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	if pod.Spec.Affinity == nil {
		return false
	}
	crosses := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	check := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) bool {
		for i := range required {
			if crosses(&required[i]) {
				return true
			}
		}
		for i := range preferred {
			if crosses(&preferred[i].PodAffinityTerm) {
				return true
			}
		}
		return false
	}
	if a := pod.Spec.Affinity.PodAffinity; a != nil && check(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	if a := pod.Spec.Affinity.PodAntiAffinity; a != nil && check(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	return false
}
