package resource

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"gopkg.in/inf.v0"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// ValidateResourceSlice validates a ResourceSlice on create.
func ValidateResourceSlice(s *resourcev1.ResourceSlice) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateResourceSliceSpec(&s.Spec, nil, field.NewPath("spec"))...)
}

// ValidateResourceSliceUpdate validates an update: the driver, pool name
// and node name are immutable.
func ValidateResourceSliceUpdate(s, old *resourcev1.ResourceSlice) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateResourceSliceSpec(&s.Spec, &old.Spec, field.NewPath("spec"))...)
}

func validateResourceSliceSpec(s, old *resourcev1.ResourceSliceSpec, p *field.Path) field.ErrorList {
	errs := validateDriverName(s.Driver, p.Child("driver"))
	errs = append(errs, validatePoolName(s.Pool.Name, p.Child("pool", "name"))...)
	if s.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if s.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "generation"), s.Pool.Generation, "must be greater than or equal to zero"))
	}
	if old != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Pool.Name, old.Pool.Name, p.Child("pool", "name"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Driver, old.Driver, p.Child("driver"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.NodeName, old.NodeName, p.Child("nodeName"))...)
	}
	var set []string
	if s.NodeName != nil {
		if *s.NodeName != "" {
			set = append(set, "`nodeName`")
			errs = append(errs, validateNodeName(*s.NodeName, p.Child("nodeName"))...)
		} else {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *s.NodeName, "must be either unset or set to a non-empty string"))
		}
	}
	if s.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		errs = append(errs, core.ValidateNodeSelector(s.NodeSelector, p.Child("nodeSelector"))...)
		if len(s.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), s.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	onlyTrue := func(b *bool, name string) {
		if b == nil {
			return
		}
		if *b {
			set = append(set, "`"+name+"`")
		} else {
			errs = append(errs, field.Invalid(p.Child(name), *b, "must be either unset or set to true"))
		}
	}
	onlyTrue(s.AllNodes, "allNodes")
	onlyTrue(s.PerDeviceNodeSelection, "perDeviceNodeSelection")
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")),
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	if s.SharedCounters != nil && s.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	maxDevices := resourcev1.ResourceSliceMaxDevices
	if sliceUsesAdvancedFeatures(s) {
		maxDevices = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
	}
	errs = append(errs, validateSet(s.Devices, maxDevices, func(d resourcev1.Device, p *field.Path) field.ErrorList {
		return validateDevice(d, lookupDevice(old, d.Name), p, s.PerDeviceNodeSelection)
	}, func(d resourcev1.Device) string { return d.Name }, p.Child("devices"))...)
	errs = append(errs, validateSet(s.SharedCounters, resourcev1.ResourceSliceMaxCounterSets, validateCounterSet,
		func(c resourcev1.CounterSet) string { return c.Name }, p.Child("sharedCounters"))...)
	return errs
}

func sliceUsesAdvancedFeatures(s *resourcev1.ResourceSliceSpec) bool {
	for _, d := range s.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			return true
		}
		for _, a := range d.Attributes {
			if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
				return true
			}
		}
	}
	return false
}

func lookupDevice(s *resourcev1.ResourceSliceSpec, name string) *resourcev1.Device {
	if s == nil {
		return nil
	}
	for i := range s.Devices {
		if s.Devices[i].Name == name {
			return &s.Devices[i]
		}
	}
	return nil
}

func validateCounterSet(c resourcev1.CounterSet, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateCounterName(c.Name, p.Child("name"))...)
	}
	if len(c.Counters) == 0 {
		errs = append(errs, field.Required(p.Child("counters"), ""))
	} else {
		errs = append(errs, validateMap(c.Counters, resourcev1.ResourceSliceMaxCountersPerCounterSet, validation.DNS1123LabelMaxLength,
			validateCounterName, noCounterCheck, p.Child("counters"))...)
	}
	return errs
}

// noCounterCheck: any parsed quantity is a valid counter.
func noCounterCheck(resourcev1.Counter, *field.Path) field.ErrorList { return nil }

func validateDevice(d resourcev1.Device, old *resourcev1.Device, p *field.Path, perDevice *bool) field.ErrorList {
	errs := validateDeviceName(d.Name, p.Child("name"))
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	if n := attributeValueCount(d); n > resourcev1.ResourceSliceMaxAttributeValuesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attribute values must not exceed %d", resourcev1.ResourceSliceMaxAttributeValuesPerDevice)))
	}
	errs = append(errs, validateMap(d.Attributes, -1, attributeMaxKeyLength, validateQualifiedName, validateDeviceAttribute, p.Child("attributes"))...)
	if old == nil || !apiequality.Semantic.DeepEqual(old.Capacity, d.Capacity) {
		multi := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
		errs = append(errs, validateMap(d.Capacity, -1, attributeMaxKeyLength, validateQualifiedName,
			func(c resourcev1.DeviceCapacity, p *field.Path) field.ErrorList {
				return validateDeviceCapacity(c, multi, p)
			}, p.Child("capacity"))...)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(old.Taints, d.Taints) {
		errs = append(errs, validateSlice(d.Taints, resourcev1.DeviceTaintsMaxLength,
			func(t resourcev1.DeviceTaint, p *field.Path) field.ErrorList { return validateDeviceTaint(t, nil, p) }, p.Child("taints"))...)
	}
	errs = append(errs, validateSet(d.ConsumesCounters, resourcev1.ResourceSliceMaxDeviceCounterConsumptionsPerDevice, validateCounterConsumption,
		func(c resourcev1.DeviceCounterConsumption) string { return c.CounterSet }, p.Child("consumesCounters"))...)
	if perDevice != nil && *perDevice {
		var set []string
		if d.NodeName != nil {
			if *d.NodeName != "" {
				set = append(set, "`nodeName`")
				errs = append(errs, validateNodeName(*d.NodeName, p.Child("nodeName"))...)
			} else {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *d.NodeName, "must not be empty"))
			}
		}
		if d.NodeSelector != nil {
			set = append(set, "`nodeSelector`")
			errs = append(errs, core.ValidateNodeSelector(d.NodeSelector, p.Child("nodeSelector"))...)
		}
		if d.AllNodes != nil {
			if *d.AllNodes {
				set = append(set, "`allNodes`")
			} else {
				errs = append(errs, field.Invalid(p.Child("allNodes"), *d.AllNodes, "must be either unset or set to true"))
			}
		}
		const msg = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
		switch len(set) {
		case 0:
			errs = append(errs, field.Required(p, msg))
		case 1:
		default:
			errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), msg))
		}
	} else if d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil {
		errs = append(errs, field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
	}
	return append(errs, validateBindingConditions(d.BindingConditions, d.BindingFailureConditions, p)...)
}

func attributeValueCount(d resourcev1.Device) int {
	n := 0
	for _, a := range d.Attributes {
		if l := len(a.BoolValues) + len(a.IntValues) + len(a.StringValues) + len(a.VersionValues); l > 0 {
			n += l
		} else {
			n++
		}
	}
	return n
}

func validateCounterConsumption(c resourcev1.DeviceCounterConsumption, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.CounterSet == "" {
		errs = append(errs, field.Required(p.Child("counterSet"), ""))
	} else {
		errs = append(errs, validateCounterName(c.CounterSet, p.Child("counterSet"))...)
	}
	if len(c.Counters) == 0 {
		errs = append(errs, field.Required(p.Child("counters"), ""))
	} else {
		errs = append(errs, validateMap(c.Counters, resourcev1.ResourceSliceMaxCountersPerDeviceCounterConsumption, validation.DNS1123LabelMaxLength,
			validateCounterName, noCounterCheck, p.Child("counters"))...)
	}
	return errs
}

// capacityRequestPolicyDiscreteMaxOptions bounds validValues (upstream's
// internal constant).
const capacityRequestPolicyDiscreteMaxOptions = 10

// semverRe matches a semantic version (semver.org 2.0.0).
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

func validateDeviceAttribute(a resourcev1.DeviceAttribute, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if a.BoolValue != nil {
		n++
	}
	if a.IntValue != nil {
		n++
	}
	if a.StringValue != nil {
		n++
		errs = append(errs, validateAttributeString(*a.StringValue, p.Child("string"))...)
	}
	if a.VersionValue != nil {
		n++
		errs = append(errs, validateAttributeVersion(*a.VersionValue, p.Child("version"))...)
	}
	list := func(set bool, l int, name string, each func(i int) field.ErrorList) {
		if !set {
			return
		}
		n++
		if l == 0 {
			errs = append(errs, field.Invalid(p.Child(name), "[]", "must not be empty if specified"))
		}
		for i := 0; i < l; i++ {
			errs = append(errs, each(i)...)
		}
	}
	none := func(int) field.ErrorList { return nil }
	list(a.BoolValues != nil, len(a.BoolValues), "bools", none)
	list(a.IntValues != nil, len(a.IntValues), "ints", none)
	list(a.StringValues != nil, len(a.StringValues), "strings", func(i int) field.ErrorList {
		return validateAttributeString(a.StringValues[i], p.Child("strings").Index(i))
	})
	list(a.VersionValues != nil, len(a.VersionValues), "versions", func(i int) field.ErrorList {
		return validateAttributeVersion(a.VersionValues[i], p.Child("versions").Index(i))
	})
	switch n {
	case 0:
		errs = append(errs, field.Invalid(p, "", "exactly one value must be specified"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, a, "exactly one value must be specified"))
	}
	return errs
}

func validateAttributeString(v string, p *field.Path) field.ErrorList {
	if len(v) > resourcev1.DeviceAttributeMaxValueLength {
		return field.ErrorList{field.TooLong(p, "", resourcev1.DeviceAttributeMaxValueLength)}
	}
	return nil
}

func validateAttributeVersion(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !semverRe.MatchString(v) {
		errs = append(errs, field.Invalid(p, v, "must be a string compatible with semver.org spec 2.0.0"))
	}
	if len(v) > resourcev1.DeviceAttributeMaxValueLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceAttributeMaxValueLength))
	}
	return errs
}

// validateDeviceCapacity: a request policy only on a device that may be
// allocated more than once, then at most one of validValues and
// validRange, with a default that fits it.
func validateDeviceCapacity(c resourcev1.DeviceCapacity, multi bool, p *field.Path) field.ErrorList {
	pol := c.RequestPolicy
	if pol == nil {
		return nil
	}
	pp := p.Child("requestPolicy")
	if !multi {
		return field.ErrorList{field.Forbidden(pp, "allowMultipleAllocations must be true")}
	}
	if len(pol.ValidValues) > 0 && pol.ValidRange != nil {
		return field.ErrorList{field.Forbidden(pp, `exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time`)}
	}
	switch {
	case len(pol.ValidValues) > 0:
		if pol.Default == nil {
			return field.ErrorList{field.Required(pp.Child("default"), "required when validValues is defined")}
		}
		return validateValidValues(*pol.Default, c.Value, pol.ValidValues, pp.Child("validValues"))
	case pol.ValidRange != nil:
		if pol.Default == nil {
			return field.ErrorList{field.Required(pp.Child("default"), "required when validRange is defined")}
		}
		return validateValidRange(*pol.Default, c.Value, *pol.ValidRange, pp.Child("validRange"))
	}
	return nil
}

func validateValidValues(def, max apiresource.Quantity, values []apiresource.Quantity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(values); i++ {
		if values[i].Cmp(values[i+1]) > 0 {
			errs = append(errs, field.Invalid(p.Index(i+1), values[i+1].String(), "values must be sorted in ascending order"))
		}
	}
	found := false
	errs = append(errs, validateSet(values, capacityRequestPolicyDiscreteMaxOptions, func(q apiresource.Quantity, p *field.Path) field.ErrorList {
		if q.Cmp(def) == 0 {
			found = true
		}
		if q.Cmp(max) > 0 {
			return field.ErrorList{field.Invalid(p, q.String(), fmt.Sprintf("option is larger than capacity value: %s", max.String()))}
		}
		return nil
	}, func(q apiresource.Quantity) string { return q.AsDec().String() }, p)...)
	if !found {
		errs = append(errs, field.Invalid(p, def.String(), "default value is not valid according to the requestPolicy"))
	}
	return errs
}

func validateValidRange(def, max apiresource.Quantity, r resourcev1.CapacityRequestPolicyRange, p *field.Path) field.ErrorList {
	if r.Min == nil {
		return field.ErrorList{field.Required(p.Child("min"), "required when validRange is defined")}
	}
	var errs field.ErrorList
	if r.Min.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(p.Child("min"), r.Min.String(), fmt.Sprintf("min is larger than capacity value: %s", max.String())))
	}
	if def.Cmp(*r.Min) < 0 {
		errs = append(errs, field.Invalid(p.Child("default"), def.String(), fmt.Sprintf("default is less than min: %s", r.Min.String())))
	}
	if r.Max != nil {
		if r.Min.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(p.Child("max"), r.Min.String(), fmt.Sprintf("min is larger than max: %s", r.Max.String())))
		}
		if r.Max.Cmp(max) > 0 {
			errs = append(errs, field.Invalid(p.Child("max"), r.Max.String(), fmt.Sprintf("max is larger than capacity value: %s", max.String())))
		}
		if def.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(p.Child("default"), def.String(), fmt.Sprintf("default is more than max: %s", r.Max.String())))
		}
	}
	if r.Step == nil {
		return errs
	}
	if r.Step.Sign() <= 0 {
		return append(errs, field.Invalid(p.Child("step"), r.Step.String(), "must be greater than zero"))
	}
	one := r.Min.DeepCopy()
	one.Add(*r.Step)
	if one.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(p.Child("step"), r.Step.String(), fmt.Sprintf("one step %s is larger than capacity value: %s", one.String(), max.String())))
	}
	quantities := []struct {
		q    *apiresource.Quantity
		name string
	}{{&def, "default"}, {r.Min, "min"}, {r.Max, "max"}, {r.Step, "step"}}
	// Fractional capacities (beta, on by default in v1.37) are counted in
	// thousandths; whole ones as integers within int64.
	milli := false
	for _, q := range quantities {
		if q.q != nil && isFractional(*q.q) {
			milli = true
		}
	}
	for _, q := range quantities {
		switch {
		case q.q == nil:
		case milli && q.q.Cmp(*apiresource.NewMilliQuantity(q.q.MilliValue(), q.q.Format)) != 0:
			return append(errs, field.Invalid(p.Child(q.name), q.q.String(), "value cannot be represented as a milli value"))
		case !milli && q.q.Sign() < 0:
			return append(errs, field.Invalid(p.Child(q.name), q.q.String(), apimachineryvalidation.IsNegativeErrorMsg))
		case !milli && q.q.CmpInt64(math.MaxInt64) > 0:
			return append(errs, field.Invalid(p.Child(q.name), q.q.String(), "must not be larger than 9223372036854775807"))
		}
	}
	value := func(q *apiresource.Quantity) int64 {
		if milli {
			return q.MilliValue()
		}
		return q.Value()
	}
	step, min := value(r.Step), value(r.Min)
	for _, v := range []*apiresource.Quantity{&def, r.Max} {
		if v != nil && (value(v)-min)%step != 0 {
			errs = append(errs, field.Invalid(p.Child("step"), v.String(), fmt.Sprintf("value is not a multiple of a given step (%s) from (%s)", r.Step.String(), r.Min.String())))
		}
	}
	return errs
}

// isFractional reports whether q has a part below one.
func isFractional(q apiresource.Quantity) bool {
	d := q.AsDec()
	return d.Cmp(new(inf.Dec).Round(d, 0, inf.RoundDown)) != 0
}

func validateDeviceTaint(t resourcev1.DeviceTaint, old *resourcev1.DeviceTaint, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelName(t.Key, p.Child("key"))
	if t.Value != "" {
		errs = append(errs, validateLabelValue(t.Value, p.Child("value"))...)
	}
	if old == nil || old.Effect != t.Effect {
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !deviceTaintEffects.Has(t.Effect):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, sets.List(deviceTaintEffects)))
		}
	}
	return errs
}

// ValidateDeviceTaintRule validates a DeviceTaintRule on create.
func ValidateDeviceTaintRule(r *resourcev1.DeviceTaintRule) field.ErrorList {
	errs := validateObjectMeta(&r.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeviceTaintRuleSpec(&r.Spec, nil, field.NewPath("spec"))...)
}

// ValidateDeviceTaintRuleUpdate validates an update.
func ValidateDeviceTaintRuleUpdate(r, old *resourcev1.DeviceTaintRule) field.ErrorList {
	errs := validateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateDeviceTaintRuleSpec(&r.Spec, &old.Spec, field.NewPath("spec"))...)
}

func validateDeviceTaintRuleSpec(s, old *resourcev1.DeviceTaintRuleSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sel := s.DeviceSelector; sel != nil {
		sp := p.Child("deviceSelector")
		if sel.Driver != nil {
			errs = append(errs, validateDriverName(*sel.Driver, sp.Child("driver"))...)
		}
		if sel.Pool != nil {
			errs = append(errs, validatePoolName(*sel.Pool, sp.Child("pool"))...)
		}
		if sel.Device != nil {
			errs = append(errs, validateDeviceName(*sel.Device, sp.Child("device"))...)
		}
	}
	var oldTaint *resourcev1.DeviceTaint
	if old != nil {
		oldTaint = &old.Taint
	}
	return append(errs, validateDeviceTaint(s.Taint, oldTaint, p.Child("taint"))...)
}

// ValidateDeviceTaintRuleStatusUpdate validates a status update: at most
// eight valid conditions.
func ValidateDeviceTaintRuleStatusUpdate(r, old *resourcev1.DeviceTaintRule) field.ErrorList {
	errs := validateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)
	cp := field.NewPath("status", "conditions")
	errs = append(errs, metav1validation.ValidateConditions(r.Status.Conditions, cp)...)
	if len(r.Status.Conditions) > resourcev1.DeviceTaintRuleStatusMaxConditions {
		errs = append(errs, field.TooMany(cp, len(r.Status.Conditions), resourcev1.DeviceTaintRuleStatusMaxConditions))
	}
	return errs
}
