package resource

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/k1s/k1s/internal/apis/core"
)

// celFeatures are the CEL environment's gates at their v1.37 defaults:
// consumable capacity (beta) on, list-typed attributes (alpha) off.
var celFeatures = dracel.Features{EnableConsumableCapacity: true}

// ValidateResourceClaim validates a ResourceClaim on create.
func ValidateResourceClaim(c *resourcev1.ResourceClaim) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeviceClaim(&c.Spec.Devices, field.NewPath("spec", "devices"), false)...)
}

// ValidateResourceClaimUpdate validates an update: the spec is immutable.
func ValidateResourceClaimUpdate(c, old *resourcev1.ResourceClaim) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(c.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidateResourceClaimStatusUpdate validates a status update: consumers
// are named once and only while allocated (and none added once the claim
// is being deleted), an allocation is immutable once made, device status
// only for allocated devices.
func ValidateResourceClaimStatusUpdate(c, old *resourcev1.ResourceClaim) field.ErrorList {
	errs := validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)
	names := gatherRequestNames(&c.Spec.Devices)
	st, oldSt, p := &c.Status, &old.Status, field.NewPath("status")
	errs = append(errs, validateSet(st.ReservedFor, resourcev1.ResourceClaimReservedForMaxSize, validateConsumerReference,
		func(r resourcev1.ResourceClaimConsumerReference) types.UID { return r.UID }, p.Child("reservedFor"))...)
	allocated := sets.New[string]()
	if st.Allocation != nil {
		for _, r := range st.Allocation.Devices.Results {
			allocated.Insert(deviceKey(r.Driver, r.Pool, r.Device, (*string)(r.ShareID)))
		}
	}
	errs = append(errs, validateSet(st.Devices, -1,
		func(d resourcev1.AllocatedDeviceStatus, p *field.Path) field.ErrorList {
			return validateDeviceStatus(d, p, allocated)
		},
		func(d resourcev1.AllocatedDeviceStatus) string {
			return deviceKey(d.Driver, d.Pool, d.Device, d.ShareID)
		},
		p.Child("devices"))...)
	if len(st.ReservedFor) > 0 {
		if st.Allocation == nil {
			errs = append(errs, field.Forbidden(p.Child("reservedFor"), "may not be specified when `allocated` is not set"))
		} else if c.DeletionTimestamp != nil {
			if sets.New(st.ReservedFor...).Difference(sets.New(oldSt.ReservedFor...)).Len() > 0 {
				errs = append(errs, field.Forbidden(p.Child("reservedFor"), "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
			}
		}
	}
	switch {
	case oldSt.Allocation != nil && st.Allocation != nil:
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(st.Allocation, oldSt.Allocation, p.Child("allocation"))...)
	case st.Allocation != nil:
		errs = append(errs, validateAllocationResult(st.Allocation, p.Child("allocation"), names)...)
	}
	return errs
}

// ValidateResourceClaimTemplate validates a ResourceClaimTemplate on create.
func ValidateResourceClaimTemplate(t *resourcev1.ResourceClaimTemplate) field.ErrorList {
	errs := validateObjectMeta(&t.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	mp := field.NewPath("spec", "metadata")
	errs = append(errs, metav1validation.ValidateLabels(t.Spec.Labels, mp.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(t.Spec.Annotations, mp.Child("annotations"))...)
	errs = append(errs, validateTemplateMetaEmpty(t, mp)...)
	return append(errs, validateDeviceClaim(&t.Spec.Spec.Devices, field.NewPath("spec", "spec", "devices"), false)...)
}

// validateTemplateMetaEmpty rejects the template metadata fields a claim
// made from it gets from the system (upstream's ValidateTemplateObjectMeta).
func validateTemplateMetaEmpty(t *resourcev1.ResourceClaimTemplate, p *field.Path) field.ErrorList {
	m := &t.Spec.ObjectMeta
	var errs field.ErrorList
	forbid := func(set bool, name string) {
		if set {
			errs = append(errs, field.Forbidden(p.Child(name), "must not be set in a template"))
		}
	}
	forbid(m.Name != "", "name")
	forbid(m.GenerateName != "", "generateName")
	forbid(m.Namespace != "", "namespace")
	forbid(m.UID != "", "uid")
	forbid(m.ResourceVersion != "", "resourceVersion")
	forbid(m.Generation != 0, "generation")
	forbid(!m.CreationTimestamp.IsZero(), "creationTimestamp")
	forbid(m.DeletionTimestamp != nil, "deletionTimestamp")
	forbid(m.DeletionGracePeriodSeconds != nil, "deletionGracePeriodSeconds")
	forbid(len(m.OwnerReferences) > 0, "ownerReferences")
	forbid(len(m.Finalizers) > 0, "finalizers")
	forbid(len(m.ManagedFields) > 0, "managedFields")
	return errs
}

// ValidateResourceClaimTemplateUpdate validates an update: the spec is
// immutable.
func ValidateResourceClaimTemplateUpdate(t, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
	errs := validateObjectMetaUpdate(&t.ObjectMeta, &old.ObjectMeta)
	return append(errs, apimachineryvalidation.ValidateImmutableField(t.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidateDeviceClass validates a DeviceClass on create.
func ValidateDeviceClass(c *resourcev1.DeviceClass) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeviceClassSpec(&c.Spec, nil, field.NewPath("spec"))...)
}

// ValidateDeviceClassUpdate validates an update. Selectors and configs
// that did not change are not compiled or parsed again.
func ValidateDeviceClassUpdate(c, old *resourcev1.DeviceClass) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, validateDeviceClassSpec(&c.Spec, &old.Spec, field.NewPath("spec"))...)
}

func validateDeviceClassSpec(s, old *resourcev1.DeviceClassSpec, p *field.Path) field.ErrorList {
	storedSelectors := old != nil && apiequality.Semantic.DeepEqual(s.Selectors, old.Selectors)
	errs := validateSlice(s.Selectors, resourcev1.DeviceSelectorsMaxSize, func(sel resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
		return validateSelector(sel, p, &claimOpts{stored: storedSelectors})
	}, p.Child("selectors"))
	storedConfig := old != nil && apiequality.Semantic.DeepEqual(s.Config, old.Config)
	errs = append(errs, validateSlice(s.Config, resourcev1.DeviceConfigMaxSize, func(c resourcev1.DeviceClassConfiguration, p *field.Path) field.ErrorList {
		return validateDeviceConfiguration(c.DeviceConfiguration, p, storedConfig)
	}, p.Child("config"))...)
	if n := s.ExtendedResourceName; n != nil && !core.IsExtendedResourceName(corev1.ResourceName(*n)) {
		errs = append(errs, field.Invalid(p.Child("extendedResourceName"), *n, "must be a valid extended resource name"))
	}
	return errs
}

// claimOpts carries what the checks of one device claim share.
type claimOpts struct {
	// stored: the expressions were accepted before; not compiled again.
	stored bool
}

// requestNames maps each request to its sub-requests' names (nil when it
// has none).
type requestNames map[string]sets.Set[string]

func (r requestNames) has(ref string) bool {
	parts := strings.Split(ref, "/")
	if len(parts) > 2 {
		return false
	}
	subs, ok := r[parts[0]]
	if !ok {
		return false
	}
	return len(parts) == 1 || subs.Has(parts[1])
}

func gatherRequestNames(d *resourcev1.DeviceClaim) requestNames {
	out := requestNames{}
	for _, r := range d.Requests {
		if len(r.FirstAvailable) == 0 {
			out[r.Name] = nil
			continue
		}
		subs := sets.New[string]()
		for _, s := range r.FirstAvailable {
			subs.Insert(s.Name)
		}
		out[r.Name] = subs
	}
	return out
}

func validateDeviceClaim(d *resourcev1.DeviceClaim, p *field.Path, stored bool) field.ErrorList {
	names := gatherRequestNames(d)
	opts := &claimOpts{stored: stored}
	errs := validateSet(d.Requests, resourcev1.DeviceRequestsMaxSize,
		func(r resourcev1.DeviceRequest, p *field.Path) field.ErrorList {
			return validateDeviceRequest(r, p, opts)
		},
		func(r resourcev1.DeviceRequest) string { return r.Name }, p.Child("requests"))
	errs = append(errs, validateSlice(d.Constraints, resourcev1.DeviceConstraintsMaxSize,
		func(c resourcev1.DeviceConstraint, p *field.Path) field.ErrorList {
			return validateDeviceConstraint(c, p, names)
		},
		p.Child("constraints"))...)
	errs = append(errs, validateSlice(d.Config, resourcev1.DeviceConfigMaxSize,
		func(c resourcev1.DeviceClaimConfiguration, p *field.Path) field.ErrorList {
			errs := validateRequestRefs(c.Requests, p.Child("requests"), names)
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, p, stored)...)
		}, p.Child("config"))...)
	return errs
}

func validateDeviceRequest(r resourcev1.DeviceRequest, p *field.Path, opts *claimOpts) field.ErrorList {
	errs := validateRequestName(r.Name, p.Child("name"))
	switch {
	case len(r.FirstAvailable) == 0 && r.Exactly == nil:
		errs = append(errs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case len(r.FirstAvailable) > 0 && r.Exactly != nil:
		errs = append(errs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case len(r.FirstAvailable) > 0:
		errs = append(errs, validateSet(r.FirstAvailable, resourcev1.FirstAvailableDeviceRequestMaxSize,
			func(s resourcev1.DeviceSubRequest, p *field.Path) field.ErrorList {
				errs := validateRequestName(s.Name, p.Child("name"))
				return append(errs, validateRequestBody(s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, s.Capacity, p, opts)...)
			},
			func(s resourcev1.DeviceSubRequest) string { return s.Name }, p.Child("firstAvailable"))...)
	default:
		e := r.Exactly
		errs = append(errs, validateRequestBody(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, e.Capacity, p.Child("exactly"), opts)...)
	}
	return errs
}

// validateRequestBody checks what exact requests and sub-requests share.
func validateRequestBody(class string, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64,
	tolerations []resourcev1.DeviceToleration, capacity *resourcev1.CapacityRequirements, p *field.Path, opts *claimOpts) field.ErrorList {
	var errs field.ErrorList
	if class == "" {
		errs = append(errs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		errs = append(errs, dnsSubdomain(class, p.Child("deviceClassName"))...)
	}
	errs = append(errs, validateSlice(selectors, resourcev1.DeviceSelectorsMaxSize,
		func(s resourcev1.DeviceSelector, p *field.Path) field.ErrorList { return validateSelector(s, p, opts) }, p.Child("selectors"))...)
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("allocationMode"), mode, []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
	errs = append(errs, validateSlice(tolerations, resourcev1.DeviceTolerationsMaxLength, validateDeviceToleration, p.Child("tolerations"))...)
	if capacity != nil {
		errs = append(errs, validateMap(capacity.Requests, -1, attributeMaxKeyLength, validateQualifiedName,
			func(apiresource.Quantity, *field.Path) field.ErrorList { return nil }, p.Child("capacity", "requests"))...)
	}
	return errs
}

func validateSelector(s resourcev1.DeviceSelector, p *field.Path, opts *claimOpts) field.ErrorList {
	if s.CEL == nil {
		return field.ErrorList{field.Required(p.Child("cel"), "")}
	}
	return validateCELExpression(s.CEL.Expression, p.Child("cel", "expression"), opts)
}

// validateCELExpression compiles a selector with upstream's DRA CEL
// environment; an expression stored before is not compiled again.
func validateCELExpression(expr string, p *field.Path, opts *claimOpts) field.ErrorList {
	if opts != nil && opts.stored {
		return nil
	}
	if len(expr) > resourcev1.CELSelectorExpressionMaxLength {
		return field.ErrorList{field.TooLong(p, "", resourcev1.CELSelectorExpressionMaxLength)}
	}
	envType := environment.NewExpressions
	res := dracel.GetCompiler(celFeatures).CompileCELExpression(expr, dracel.Options{EnvType: &envType})
	if res.Error != nil {
		return field.ErrorList{celError(p, expr, res.Error)}
	}
	if res.MaxCost > resourcev1.CELSelectorExpressionMaxCost {
		return field.ErrorList{field.Forbidden(p, "too complex, exceeds cost limit")}
	}
	return nil
}

func celError(p *field.Path, expr string, err error) *field.Error {
	var ce *apiservercel.Error
	if errors.As(err, &ce) {
		switch ce.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(p, ce.Detail)
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(p, expr, ce.Detail)
		case apiservercel.ErrorTypeInternal:
			return field.InternalError(p, ce)
		}
	}
	return field.InternalError(p, fmt.Errorf("unsupported error type: %w", err))
}

func validateDeviceConstraint(c resourcev1.DeviceConstraint, p *field.Path, names requestNames) field.ErrorList {
	errs := validateRequestRefs(c.Requests, p.Child("requests"), names)
	switch {
	case c.MatchAttribute != nil && c.DistinctAttribute != nil:
		errs = append(errs, field.Invalid(p, nil, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
	case c.MatchAttribute != nil:
		errs = append(errs, validateFullyQualifiedName(*c.MatchAttribute, p.Child("matchAttribute"))...)
	case c.DistinctAttribute != nil:
		errs = append(errs, validateFullyQualifiedName(*c.DistinctAttribute, p.Child("distinctAttribute"))...)
	default:
		errs = append(errs, field.Required(p, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
	}
	return errs
}

func validateRequestRefs(refs []string, p *field.Path, names requestNames) field.ErrorList {
	return validateSet(refs, resourcev1.DeviceRequestsMaxSize,
		func(ref string, p *field.Path) field.ErrorList { return validateRequestRef(ref, p, names) }, stringKey, p)
}

func validateRequestRef(ref string, p *field.Path, names requestNames) field.ErrorList {
	const msg = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
	parts := strings.Split(ref, "/")
	if len(parts) > 2 {
		return field.ErrorList{field.Invalid(p, ref, msg)}
	}
	var errs field.ErrorList
	for _, part := range parts {
		errs = append(errs, validateRequestName(part, p)...)
	}
	if !names.has(ref) {
		errs = append(errs, field.Invalid(p, ref, msg))
	}
	return errs
}

func validateDeviceConfiguration(c resourcev1.DeviceConfiguration, p *field.Path, stored bool) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	op := p.Child("opaque")
	errs := validateDriverName(c.Opaque.Driver, op.Child("driver"))
	return append(errs, validateRawExtension(c.Opaque.Parameters, op.Child("parameters"), stored, resourcev1.OpaqueParametersMaxLength)...)
}

var (
	deviceTolerationOperators = []resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}
	deviceTaintEffects        = sets.New(resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone)
)

func validateDeviceToleration(t resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	switch t.Operator {
	case resourcev1.DeviceTolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
		}
	case resourcev1.DeviceTolerationOpEqual:
		errs = append(errs, validateLabelValue(t.Value, p.Child("value"))...)
	case "":
		errs = append(errs, field.Required(p.Child("operator"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, deviceTolerationOperators))
	}
	if t.Effect != "" && !deviceTaintEffects.Has(t.Effect) {
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, sets.List(deviceTaintEffects)))
	}
	return errs
}

func validateConsumerReference(r resourcev1.ResourceClaimConsumerReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Resource == "" {
		errs = append(errs, field.Required(p.Child("resource"), ""))
	}
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if r.UID == "" {
		errs = append(errs, field.Required(p.Child("uid"), ""))
	}
	return errs
}

// validateAllocationResult checks a new allocation (a stored one is only
// compared).
func validateAllocationResult(a *resourcev1.AllocationResult, p *field.Path, names requestNames) field.ErrorList {
	dp := p.Child("devices")
	errs := validateSlice(a.Devices.Results, resourcev1.AllocationResultsMaxSize,
		func(r resourcev1.DeviceRequestAllocationResult, p *field.Path) field.ErrorList {
			errs := validateRequestRef(r.Request, p.Child("request"), names)
			errs = append(errs, validateDriverName(r.Driver, p.Child("driver"))...)
			errs = append(errs, validatePoolName(r.Pool, p.Child("pool"))...)
			errs = append(errs, validateDeviceName(r.Device, p.Child("device"))...)
			errs = append(errs, validateBindingConditions(r.BindingConditions, r.BindingFailureConditions, p)...)
			for i, t := range r.Tolerations {
				errs = append(errs, validateDeviceToleration(t, p.Child("tolerations").Index(i))...)
			}
			if r.ShareID != nil {
				errs = append(errs, validateUID(string(*r.ShareID), p.Child("shareID"))...)
			}
			return errs
		}, dp.Child("results"))
	errs = append(errs, validateSlice(a.Devices.Config, 2*resourcev1.DeviceConfigMaxSize,
		func(c resourcev1.DeviceAllocationConfiguration, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			switch c.Source {
			case "":
				errs = append(errs, field.Required(p.Child("source"), ""))
			case resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass:
			default:
				errs = append(errs, field.NotSupported(p.Child("source"), c.Source, []resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}))
			}
			errs = append(errs, validateRequestRefs(c.Requests, p.Child("requests"), names)...)
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, p, false)...)
		}, dp.Child("config"))...)
	if a.NodeSelector != nil {
		errs = append(errs, core.ValidateNodeSelector(a.NodeSelector, p.Child("nodeSelector"))...)
	}
	return errs
}

func validateDeviceStatus(d resourcev1.AllocatedDeviceStatus, p *field.Path, allocated sets.Set[string]) field.ErrorList {
	errs := validateDriverName(d.Driver, p.Child("driver"))
	errs = append(errs, validatePoolName(d.Pool, p.Child("pool"))...)
	errs = append(errs, validateDeviceName(d.Device, p.Child("device"))...)
	if d.ShareID != nil {
		errs = append(errs, validateUID(*d.ShareID, p.Child("shareID"))...)
	}
	if key := deviceKey(d.Driver, d.Pool, d.Device, d.ShareID); !allocated.Has(key) {
		errs = append(errs, field.Invalid(p, key, "must be an allocated device in the claim"))
	}
	if len(d.Conditions) > resourcev1.AllocatedDeviceStatusMaxConditions {
		errs = append(errs, field.TooMany(p.Child("conditions"), len(d.Conditions), resourcev1.AllocatedDeviceStatusMaxConditions))
	}
	errs = append(errs, metav1validation.ValidateConditions(d.Conditions, p.Child("conditions"))...)
	if d.Data != nil && len(d.Data.Raw) > 0 {
		errs = append(errs, validateRawExtension(*d.Data, p.Child("data"), false, resourcev1.AllocatedDeviceStatusDataMaxLength)...)
	}
	if n := d.NetworkData; n != nil {
		np := p.Child("networkData")
		if len(n.InterfaceName) > resourcev1.NetworkDeviceDataInterfaceNameMaxLength {
			errs = append(errs, field.TooLong(np.Child("interfaceName"), "", resourcev1.NetworkDeviceDataInterfaceNameMaxLength))
		}
		if len(n.HardwareAddress) > resourcev1.NetworkDeviceDataHardwareAddressMaxLength {
			errs = append(errs, field.TooLong(np.Child("hardwareAddress"), "", resourcev1.NetworkDeviceDataHardwareAddressMaxLength))
		}
		errs = append(errs, validateSet(n.IPs, resourcev1.NetworkDeviceDataMaxIPs,
			func(addr string, p *field.Path) field.ErrorList { return validation.IsValidInterfaceAddress(p, addr) },
			stringKey, np.Child("ips"))...)
	}
	return errs
}

func validateBindingConditions(conds, failures []string, p *field.Path) field.ErrorList {
	errs := validateSlice(conds, resourcev1.BindingConditionsMaxSize, metav1validation.ValidateLabelName, p.Child("bindingConditions"))
	errs = append(errs, validateSlice(failures, resourcev1.BindingFailureConditionsMaxSize, metav1validation.ValidateLabelName, p.Child("bindingFailureConditions"))...)
	seen := sets.New[string]()
	for i, c := range conds {
		if seen.Has(c) {
			errs = append(errs, field.Duplicate(p.Child("bindingConditions").Index(i), c))
		}
		seen.Insert(c)
	}
	seenFail := sets.New[string]()
	for i, c := range failures {
		if seenFail.Has(c) {
			errs = append(errs, field.Duplicate(p.Child("bindingFailureConditions").Index(i), c))
		}
		seenFail.Insert(c)
		if seen.Has(c) {
			errs = append(errs, field.Invalid(p.Child("bindingFailureConditions").Index(i), c, "bindingFailureConditions must not overlap with bindingConditions"))
		}
	}
	if len(conds) == 0 && len(failures) > 0 {
		errs = append(errs, field.Invalid(p.Child("bindingConditions"), conds, "bindingConditions are required to use bindingFailureConditions"))
	}
	if len(failures) == 0 && len(conds) > 0 {
		errs = append(errs, field.Invalid(p.Child("bindingFailureConditions"), failures, "bindingFailureConditions are required to use bindingConditions"))
	}
	return errs
}
