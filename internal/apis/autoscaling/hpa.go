package autoscaling

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// Bounds and defaults of a HorizontalPodAutoscaler, upstream's.
const (
	// DefaultCPUUtilization is the CPU target of an HPA given no metric.
	DefaultCPUUtilization int32 = 80
	// MaxPeriodSeconds bounds a scaling policy's period.
	MaxPeriodSeconds int32 = 1800
	// MaxStabilizationWindowSeconds bounds a stabilization window.
	MaxStabilizationWindowSeconds int32 = 3600
)

// DefaultHorizontalPodAutoscalerV1 sets minReplicas to 1 when unset (the
// CPU target default is applied by the conversion to autoscaling/v2).
func DefaultHorizontalPodAutoscalerV1(h *autoscalingv1.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		one := int32(1)
		h.Spec.MinReplicas = &one
	}
}

// DefaultHorizontalPodAutoscaler sets minReplicas to 1, a CPU target of
// 80 % average utilization when there is no metric, and fills the scale-up
// rules (no stabilization, the higher of 4 pods and 100 % per 15 s) and
// scale-down rules (100 % per 15 s) of a behavior that is given.
func DefaultHorizontalPodAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		one := int32(1)
		h.Spec.MinReplicas = &one
	}
	if len(h.Spec.Metrics) == 0 {
		u := DefaultCPUUtilization
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u},
			},
		}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = mergeRules(b.ScaleUp, defaultScaleUpRules())
		b.ScaleDown = mergeRules(b.ScaleDown, defaultScaleDownRules())
	}
}

func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	window, max := int32(0), autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		SelectPolicy:               &max,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	max := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: &max,
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}

// mergeRules fills the unset fields of from with to's.
func mergeRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}

// refOptions relax the checks of a cross-version object reference.
type refOptions struct {
	allowEmptyGroup, allowInvalidAPIVersion bool
}

// hpaOptions are the rules an HPA is checked against, chosen from what it
// was (upstream's validationOptionsForHorizontalPodAutoscaler).
type hpaOptions struct {
	minReplicasLowerBound int32
	scaleTargetRef        refOptions
	objectMetrics         refOptions
}

func optionsFor(h, old *autoscalingv2.HorizontalPodAutoscaler) hpaOptions {
	// HPAScaleToZero is beta and on by default in v1.37: minReplicas may be 0.
	opts := hpaOptions{objectMetrics: refOptions{allowEmptyGroup: true}}
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == h.Spec.ScaleTargetRef.APIVersion && old.Spec.ScaleTargetRef.Kind == h.Spec.ScaleTargetRef.Kind:
		opts.scaleTargetRef.allowInvalidAPIVersion = true
	case h.Spec.ScaleTargetRef.Kind == "ReplicationController":
		opts.scaleTargetRef.allowEmptyGroup = true
	}
	if old != nil {
		for _, m := range old.Spec.Metrics {
			if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil && validateAPIVersion(m.Object.DescribedObject, opts.objectMetrics) != nil {
				opts.objectMetrics.allowInvalidAPIVersion = true
				break
			}
		}
	}
	return opts
}

// ValidateHorizontalPodAutoscaler validates an HPA on create.
func ValidateHorizontalPodAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := validateObjectMeta(&h.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateHPASpec(&h.Spec, field.NewPath("spec"), optionsFor(h, nil))...)
}

// ValidateHorizontalPodAutoscalerUpdate validates an update.
func ValidateHorizontalPodAutoscalerUpdate(h, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := validateObjectMetaUpdate(&h.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateHPASpec(&h.Spec, field.NewPath("spec"), optionsFor(h, old))...)
}

// ValidateHorizontalPodAutoscalerStatusUpdate validates a status update:
// replica counts and conditions' observed generations are not negative.
func ValidateHorizontalPodAutoscalerStatusUpdate(h, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := validateObjectMetaUpdate(&h.ObjectMeta, &old.ObjectMeta)
	sp := field.NewPath("status")
	for i, c := range h.Status.Conditions {
		if c.ObservedGeneration != nil {
			errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(*c.ObservedGeneration, sp.Child("conditions").Index(i).Child("observedGeneration"))...)
		}
	}
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(h.Status.CurrentReplicas), sp.Child("currentReplicas"))...)
	return append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(h.Status.DesiredReplicas), sp.Child("desiredReplicas"))...)
}

func validateHPASpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path, opts hpaOptions) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < opts.minReplicasLowerBound {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", opts.minReplicasLowerBound)))
	}
	switch {
	case s.MaxReplicas == 0:
		errs = append(errs, field.Required(p.Child("maxReplicas"), "must be set and greater than 0"))
	case s.MaxReplicas < 0:
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateCrossVersionRef(s.ScaleTargetRef, p.Child("scaleTargetRef"), opts.scaleTargetRef)...)
	errs = append(errs, validateMetrics(s.Metrics, p.Child("metrics"), s.MinReplicas, opts.objectMetrics)...)
	if b := s.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateCrossVersionRef(ref autoscalingv2.CrossVersionObjectReference, p *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	name := func(v, child string) {
		if v == "" {
			errs = append(errs, field.Required(p.Child(child), ""))
			return
		}
		for _, msg := range content.IsPathSegmentName(v) {
			errs = append(errs, field.Invalid(p.Child(child), v, msg))
		}
	}
	name(ref.Kind, "kind")
	name(ref.Name, "name")
	if err := validateAPIVersion(ref, opts); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

func validateAPIVersion(ref autoscalingv2.CrossVersionObjectReference, opts refOptions) error {
	if opts.allowInvalidAPIVersion {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return err
	}
	if !opts.allowEmptyGroup && gv.Group == "" {
		return fmt.Errorf("apiVersion must specify API group")
	}
	return nil
}

func validateMetrics(metrics []autoscalingv2.MetricSpec, p *field.Path, minReplicas *int32, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	objectOrExternal := false
	for i, m := range metrics {
		errs = append(errs, validateMetricSpec(m, p.Index(i), opts)...)
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			objectOrExternal = true
		}
	}
	if minReplicas != nil && *minReplicas == 0 && !objectOrExternal {
		errs = append(errs, field.Forbidden(p, "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	return errs
}

var (
	selectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	policyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
	metricSources  = []string{
		string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
		string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType),
	}
)

func validateScalingRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > MaxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %v", MaxStabilizationWindowSeconds)))
		}
	}
	if sp := r.SelectPolicy; sp != nil && !sets.New(selectPolicies...).Has(string(*sp)) {
		errs = append(errs, field.NotSupported(p.Child("selectPolicy"), *sp, selectPolicies))
	}
	pp := p.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(pp, "must specify at least one Policy"))
	}
	for i, pol := range r.Policies {
		ip := pp.Index(i)
		if pol.Type != autoscalingv2.PodsScalingPolicy && pol.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(ip.Child("type"), pol.Type, policyTypes))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		}
		if pol.PeriodSeconds > MaxPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", MaxPeriodSeconds)))
		}
	}
	if t := r.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), t.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	return errs
}

func validateMetricSpec(m autoscalingv2.MetricSpec, p *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	if !sets.New(metricSources...).Has(string(m.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSources))
	}
	var present []string
	if m.Object != nil {
		if present = append(present, "object"); len(present) == 1 {
			errs = append(errs, validateObjectSource(m.Object, p.Child("object"), opts)...)
		}
	}
	if m.External != nil {
		if present = append(present, "external"); len(present) == 1 {
			errs = append(errs, validateExternalSource(m.External, p.Child("external"))...)
		}
	}
	if m.Pods != nil {
		if present = append(present, "pods"); len(present) == 1 {
			errs = append(errs, validatePodsSource(m.Pods, p.Child("pods"))...)
		}
	}
	if m.Resource != nil {
		if present = append(present, "resource"); len(present) == 1 {
			errs = append(errs, validateResourceSource(m.Resource.Name, "", m.Resource.Target, p.Child("resource"), false)...)
		}
	}
	if m.ContainerResource != nil {
		if present = append(present, "containerResource"); len(present) == 1 {
			c := m.ContainerResource
			errs = append(errs, validateResourceSource(c.Name, c.Container, c.Target, p.Child("containerResource"), true)...)
		}
	}
	var expected string
	set := map[autoscalingv2.MetricSourceType]bool{
		autoscalingv2.ObjectMetricSourceType: m.Object != nil, autoscalingv2.PodsMetricSourceType: m.Pods != nil,
		autoscalingv2.ResourceMetricSourceType: m.Resource != nil, autoscalingv2.ExternalMetricSourceType: m.External != nil,
		autoscalingv2.ContainerResourceMetricSourceType: m.ContainerResource != nil,
	}
	switch m.Type {
	case autoscalingv2.ObjectMetricSourceType:
		expected = "object"
	case autoscalingv2.PodsMetricSourceType:
		expected = "pods"
	case autoscalingv2.ResourceMetricSourceType:
		expected = "resource"
	case autoscalingv2.ExternalMetricSourceType:
		expected = "external"
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected = "containerResource"
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSources))
	}
	if expected != "" && !set[m.Type] {
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	if len(present) != 1 {
		for _, t := range present {
			if t != expected {
				errs = append(errs, field.Forbidden(p.Child(t), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObjectSource(s *autoscalingv2.ObjectMetricSource, p *field.Path, opts refOptions) field.ErrorList {
	errs := validateCrossVersionRef(s.DescribedObject, p.Child("describedObject"), opts)
	errs = append(errs, validateMetricIdentifier(s.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(s *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(s.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if s.Target.Value != nil && s.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(s *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(s.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

// validateResourceSource checks a resource or (withContainer) a container
// resource metric.
func validateResourceSource(name corev1.ResourceName, container string, t autoscalingv2.MetricTarget, p *field.Path, withContainer bool) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	} else if withContainer {
		errs = append(errs, core.ValidateContainerResourceName(name, p.Child("name"))...)
	}
	if withContainer {
		if container == "" {
			errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
		} else {
			for _, msg := range validation.IsDNS1123Label(container) {
				errs = append(errs, field.Invalid(p.Child("container"), container, msg))
			}
		}
	}
	errs = append(errs, validateMetricTarget(t, p.Child("target"))...)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(p.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
	}
	return errs
}
