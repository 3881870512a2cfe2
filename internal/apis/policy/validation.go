package policy

import (
	"strconv"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var unhealthyPodEvictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

// ValidatePodDisruptionBudget validates a PodDisruptionBudget on create.
// The name only has to be a valid path segment, as for every kind whose
// registry imposes no stricter rule.
func ValidatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := validateObjectMeta(&pdb.ObjectMeta, true, path.ValidatePathSegmentName)
	return append(errs, validatePDBSpec(&pdb.Spec, false, field.NewPath("spec"))...)
}

// ValidatePodDisruptionBudgetUpdate validates an update of a
// PodDisruptionBudget. The whole spec may change; invalid selector values the
// stored object already had are tolerated.
func ValidatePodDisruptionBudgetUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	tolerate := old.Spec.Selector != nil && len(metav1validation.ValidateLabelSelector(old.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
	errs := validateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta)
	return append(errs, validatePDBSpec(&pdb.Spec, tolerate, field.NewPath("spec"))...)
}

// ValidatePodDisruptionBudgetStatusUpdate validates a write to the status
// subresource: conditions must be well formed and the counters non-negative.
func ValidatePodDisruptionBudgetStatusUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	p := field.NewPath("status")
	st := &pdb.Status
	errs := validateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, metav1validation.ValidateConditions(st.Conditions, p.Child("conditions"))...)
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(st.DisruptionsAllowed), p.Child("disruptionsAllowed"))...)
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(st.CurrentHealthy), p.Child("currentHealthy"))...)
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(st.DesiredHealthy), p.Child("desiredHealthy"))...)
	return append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(st.ExpectedPods), p.Child("expectedPods"))...)
}

func validatePDBSpec(spec *policyv1.PodDisruptionBudgetSpec, tolerateSelector bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, validateIntOrPercent(*spec.MinAvailable, p.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, validateIntOrPercent(*spec.MaxUnavailable, p.Child("maxUnavailable"))...)
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: tolerateSelector}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, opts, p.Child("selector"))...)
	if spec.UnhealthyPodEvictionPolicy != nil {
		switch *spec.UnhealthyPodEvictionPolicy {
		case policyv1.IfHealthyBudget, policyv1.AlwaysAllow:
		default:
			errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *spec.UnhealthyPodEvictionPolicy, unhealthyPodEvictionPolicies))
		}
	}
	return errs
}

// validateIntOrPercent accepts a non-negative integer or a percentage string
// ("25%") of at most 100%.
func validateIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.Int:
		return apimachineryvalidation.ValidateNonnegativeField(int64(v.IntVal), p)
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		if len(errs) > 0 {
			return errs
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%")); err == nil && n > 100 {
			errs = append(errs, field.Invalid(p, v, "must not be greater than 100%"))
		}
		return errs
	}
	return field.ErrorList{field.Invalid(p, v, "must be an integer or percentage (e.g '5%')")}
}

// ValidateEviction validates the body of a pods/eviction request. The
// embedded delete options must be valid, and the option to ignore store read
// errors may not be used for evictions. That the eviction's name matches the
// pod named in the URL is checked by the eviction REST handler, not here.
func ValidateEviction(ev *policyv1.Eviction) field.ErrorList {
	if ev.DeleteOptions == nil {
		return nil
	}
	p := field.NewPath("deleteOptions")
	if ev.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *ev.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return field.ErrorList{field.Invalid(p.Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true,
			"can not be set for pod eviction, try after removing the option")}
	}
	var errs field.ErrorList
	for _, err := range metav1validation.ValidateDeleteOptions(ev.DeleteOptions) {
		// Re-root the delete option errors under deleteOptions.
		err.Field = p.String() + "." + err.Field
		errs = append(errs, err)
	}
	return errs
}
