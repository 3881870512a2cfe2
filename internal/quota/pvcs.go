package quota

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/utils/ptr"
)

var pvcsGroupResource = corev1.Resource("persistentvolumeclaims")

var pvcObjectCount = generic.ObjectCountQuotaResourceNameFor(pvcsGroupResource)

// StorageClassSuffix joins a storage class name and a claim quota resource
// into a per-class quota resource, e.g.
// gold.storageclass.storage.k8s.io/requests.storage.
const StorageClassSuffix = ".storageclass.storage.k8s.io/"

// pvcResourceNames are the claim quota resources that can also be scoped
// to a storage class.
var pvcResourceNames = []corev1.ResourceName{
	corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceRequestsStorage,
}

// ResourceByStorageClass returns the quota resource name of name charged
// to storageClass.
func ResourceByStorageClass(storageClass string, name corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(storageClass + StorageClassSuffix + string(name))
}

// pvcEvaluator measures the quota usage of PersistentVolumeClaims.
type pvcEvaluator struct {
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = (*pvcEvaluator)(nil)

// NewPVCEvaluator returns the evaluator for PersistentVolumeClaims. f
// lists claims for UsageStats and may be nil when only admission uses it.
func NewPVCEvaluator(f quota.ListerForResourceFunc) quota.Evaluator {
	return &pvcEvaluator{list: listFunc(f, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"))}
}

// GroupResource returns the resource the evaluator measures.
func (e *pvcEvaluator) GroupResource() schema.GroupResource { return pvcsGroupResource }

// Constraints has nothing to require of this resource.
func (e *pvcEvaluator) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Handles is true for creates and updates of claims proper, and for status
// updates that change the allocated storage or the volume attributes
// classes (both change the usage).
func (e *pvcEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	switch a.GetSubresource() {
	case "":
		return op == admission.Create || op == admission.Update
	case "status":
		pvc, err1 := toPVC(a.GetObject())
		old, err2 := toPVC(a.GetOldObject())
		return err1 == nil && err2 == nil && PVCUsageChanged(pvc, old)
	}
	return false
}

// Matches reports whether the quota limits a resource of item and item is in all its scopes.
func (e *pvcEvaluator) Matches(rq *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(rq, item, e.MatchingResources, pvcMatchesScope)
}

// MatchingResources returns the names in input that the evaluator measures.
func (e *pvcEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	var result []corev1.ResourceName
	for _, name := range input {
		if name == pvcObjectCount || quota.Contains(pvcResourceNames, name) {
			result = append(result, name)
			continue
		}
		for _, r := range pvcResourceNames {
			if strings.HasSuffix(string(name), StorageClassSuffix+string(r)) {
				result = append(result, name)
				break
			}
		}
	}
	return result
}

// MatchingScopes returns the scope selectors that item satisfies.
func (e *pvcEvaluator) MatchingScopes(item runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return matchingScopes(item, selectors, pvcMatchesScope)
}

// UncoveredQuotaScopes returns the limited scopes no matched quota scope covers.
func (e *pvcEvaluator) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return uncoveredScopes(limited, matched), nil
}

// Usage returns the quota usage of item.
func (e *pvcEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	pvc, err := toPVC(item)
	if err != nil {
		return corev1.ResourceList{}, err
	}
	return PVCUsage(pvc), nil
}

// UsageStats sums the usage of the stored objects in a namespace that match the scopes.
func (e *pvcEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, e.list, pvcMatchesScope, e.Usage)
}

func toPVC(obj runtime.Object) (*corev1.PersistentVolumeClaim, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || pvc == nil {
		return nil, fmt.Errorf("expected *v1.PersistentVolumeClaim, got %T", obj)
	}
	return pvc, nil
}

// storageClassOf returns the claim's storage class, the beta annotation
// taking precedence over spec.storageClassName as upstream.
func storageClassOf(pvc *corev1.PersistentVolumeClaim) string {
	if class, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return ptr.Deref(pvc.Spec.StorageClassName, "")
}

// PVCUsage returns the quota usage of pvc: one claim and its storage,
// also charged to its storage class when it has one. The storage is the
// larger of the request and the allocated size (an expansion that failed
// still holds what was allocated), rounded up to whole bytes.
func PVCUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	result := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims: one,
		pvcObjectCount:                        one,
	}
	class := storageClassOf(pvc)
	if class != "" {
		result[ResourceByStorageClass(class, corev1.ResourcePersistentVolumeClaims)] = one
	}
	if storage, ok := pvcStorage(pvc); ok {
		result[corev1.ResourceRequestsStorage] = storage
		if class != "" {
			result[ResourceByStorageClass(class, corev1.ResourceRequestsStorage)] = storage
		}
	}
	return result
}

func pvcStorage(pvc *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	requested, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, false
	}
	storage := requested.DeepCopy()
	if allocated, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && allocated.Cmp(storage) > 0 {
		storage = allocated.DeepCopy()
	}
	// Count whole bytes, which quota validation requires.
	storage.RoundUp(0)
	return storage, true
}

// PVCUsageChanged reports whether a claim status update changes its quota
// usage or scope: its allocated storage or its volume attributes classes.
func PVCUsageChanged(pvc, old *corev1.PersistentVolumeClaim) bool {
	a, aok := pvc.Status.AllocatedResources[corev1.ResourceStorage]
	b, bok := old.Status.AllocatedResources[corev1.ResourceStorage]
	if aok != bok || a.Cmp(b) != 0 {
		return true
	}
	return !volumeAttributesClasses(pvc).Equal(volumeAttributesClasses(old))
}

// volumeAttributesClasses returns the volume attributes classes a claim
// names in its spec, its status, and a modification in progress.
func volumeAttributesClasses(pvc *corev1.PersistentVolumeClaim) sets.Set[string] {
	names := sets.New[string]()
	if n := ptr.Deref(pvc.Spec.VolumeAttributesClassName, ""); n != "" {
		names.Insert(n)
	}
	if n := ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, ""); n != "" {
		names.Insert(n)
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		names.Insert(m.TargetVolumeAttributesClassName)
	}
	return names
}

func pvcMatchesScope(selector corev1.ScopedResourceSelectorRequirement, object runtime.Object) (bool, error) {
	pvc, err := toPVC(object)
	if err != nil {
		return false, err
	}
	if selector.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	return scopeSelectorMatches(selector, sets.List(volumeAttributesClasses(pvc)))
}
