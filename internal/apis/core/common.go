package core

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Name rules per kind, as upstream applies them.
var (
	nameIsSubdomain = apivalidation.NameIsDNSSubdomain
	nameIsLabel     = apivalidation.NameIsDNSLabel
)

const (
	msgNegative      = apivalidation.IsNegativeErrorMsg
	msgImmutable     = apivalidation.FieldImmutableErrorMsg
	msgNotPositive   = "must be greater than zero"
	msgNotInteger    = "must be an integer"
	msgFileMode      = "must be a number between 0 and 0777 (octal), both inclusive"
	msgEmptyDirMode  = "must be a number between 0 and 01777 (octal), both inclusive"
	msgOneVolumeType = "may not specify more than 1 volume type"
	msgQuotaResource = "must be a standard resource for quota"

	// maxConfigSize is the largest total data size of a ConfigMap or Secret.
	maxConfigSize = corev1.MaxSecretSize
)

// strictIPs mirrors the StrictIPCIDRValidation gate, on by default in v1.37.
const strictIPs = true

// validateMeta checks object metadata on create, plus the extra finalizer
// rule upstream adds for core kinds.
func validateMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(meta, namespaced, nameFn, fldPath)
	for i, f := range meta.Finalizers {
		errs = append(errs, validateKubeFinalizerName(f, fldPath.Child("finalizers").Index(i))...)
	}
	return errs
}

// validateMetaUpdate checks a metadata update.
func validateMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, fldPath)
	for i, f := range newMeta.Finalizers {
		errs = append(errs, validateKubeFinalizerName(f, fldPath.Child("finalizers").Index(i))...)
	}
	return errs
}

var standardFinalizers = sets.New(
	string(corev1.FinalizerKubernetes),
	metav1.FinalizerOrphanDependents,
	metav1.FinalizerDeleteDependents,
)

// validateKubeFinalizerName rejects unqualified finalizer names that are not
// one of the well-known ones.
func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers.Has(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

func dnsLabel(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func dnsSubdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func qualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// nameErrs turns the messages of a name function into Invalid errors.
func nameErrs(fn apivalidation.ValidateNameFunc, value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range fn(value, false) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func nonNegative(value int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(value, fldPath)
}

func positive(value int64, fldPath *field.Path) field.ErrorList {
	if value <= 0 {
		return field.ErrorList{field.Invalid(fldPath, value, msgNotPositive)}
	}
	return nil
}

func nonNegativeQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), msgNegative)}
	}
	return nil
}

func positiveQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), msgNotPositive)}
	}
	return nil
}

func validIP(fldPath *field.Path, value string, oldValues []string) field.ErrorList {
	return validation.IsValidIPForLegacyField(fldPath, value, strictIPs, oldValues)
}

func validCIDR(fldPath *field.Path, value string, oldValues []string) field.ErrorList {
	return validation.IsValidCIDRForLegacyField(fldPath, value, strictIPs, oldValues)
}

func immutable(newVal, oldVal interface{}, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

// Resource name helpers.

var standardContainerResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage)

var standardQuotaResources = sets.New(
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
)

var standardResources = standardQuotaResources.Clone().Insert(corev1.ResourceStorage)

var integerResources = sets.New(
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
)

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isQuotaHugePages(name corev1.ResourceName) bool {
	return isHugePages(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// isNativeResource: unprefixed names and *kubernetes.io/ names.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}

func isIntegerResource(name corev1.ResourceName) bool {
	return integerResources.Has(name) || isExtendedResource(name)
}

// validateResourceName: a qualified name that is either standard or prefixed.
func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := qualifiedName(string(name), fldPath)
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !standardResources.Has(name) && !isQuotaHugePages(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// validateContainerResourceName: standard container resources, hugepages or
// extended resources.
func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !standardContainerResources.Has(name) && !isHugePages(name) {
			errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResource(name) {
		errs = append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func validateQuotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") && !standardQuotaResources.Has(name) && !isQuotaHugePages(name) {
		errs = append(errs, field.Invalid(fldPath, name, msgQuotaResource))
	}
	return errs
}

// validateResourceQuantity: non-negative, and whole for integer resources.
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	errs := nonNegativeQuantity(q, fldPath)
	if isIntegerResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), msgNotInteger))
	}
	return errs
}

// hugePageSize parses the page size out of a hugepages-<size> resource name.
func hugePageSize(name corev1.ResourceName) (resource.Quantity, error) {
	if !isHugePages(name) {
		return resource.Quantity{}, fmt.Errorf("resource %q is not a hugepages resource", name)
	}
	return resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
}

// toMap converts obj to its JSON object form.
func toMap(obj interface{}, out map[string]interface{}) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("marshal %T: %w", obj, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("unmarshal %T: %w", obj, err)
	}
	return nil
}
