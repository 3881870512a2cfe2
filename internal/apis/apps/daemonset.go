package apps

import (
	appsv1 "k8s.io/api/apps/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateDaemonSet validates a DaemonSet on create.
func ValidateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	errs := validateObjectMeta(&ds.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDaemonSetSpec(&ds.Spec, false, field.NewPath("spec"))...)
}

// ValidateDaemonSetUpdate validates an update of a DaemonSet; the selector is
// immutable. Invalid selector values the stored object already had are
// tolerated.
func ValidateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
	tolerate := metav1validation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector)
	return append(errs, validateDaemonSetSpec(&ds.Spec, tolerate, field.NewPath("spec"))...)
}

// ValidateDaemonSetStatusUpdate validates a write to the status subresource
// of a DaemonSet.
func ValidateDaemonSetStatusUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	p := field.NewPath("status")
	st := &ds.Status
	errs := validateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta)
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"currentNumberScheduled", int64(st.CurrentNumberScheduled)},
		{"numberMisscheduled", int64(st.NumberMisscheduled)},
		{"desiredNumberScheduled", int64(st.DesiredNumberScheduled)},
		{"numberReady", int64(st.NumberReady)},
		{"observedGeneration", st.ObservedGeneration},
		{"updatedNumberScheduled", int64(st.UpdatedNumberScheduled)},
		{"numberAvailable", int64(st.NumberAvailable)},
		{"numberUnavailable", int64(st.NumberUnavailable)},
	} {
		errs = append(errs, nonNegative(c.v, p.Child(c.name))...)
	}
	errs = append(errs, nonNegativePtr(st.CollisionCount, p.Child("collisionCount"))...)
	return append(errs, collisionCountDecremented(st.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, tolerateSelector bool, p *field.Path) field.ErrorList {
	sp := p.Child("selector")
	errs := metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: tolerateSelector}, sp)
	tp := p.Child("template")
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(sp, spec.Selector, "empty selector is invalid for daemonset"))
	}
	errs = append(errs, validateLongRunningTemplate(&spec.Template, "DaemonSet", tp)...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"))...)
	return append(errs, nonNegativePtr(spec.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
}

func validateDaemonSetUpdateStrategy(us *appsv1.DaemonSetUpdateStrategy, p *field.Path) field.ErrorList {
	switch us.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if us.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdateDaemonSet(us.RollingUpdate, p.Child("rollingUpdate"))
	}
	return field.ErrorList{field.NotSupported(p, us, []string{
		string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType),
	})}
}

// validateRollingUpdateDaemonSet requires exactly one of maxSurge and
// maxUnavailable to be non-zero, both being counts or percentages up to 100%.
func validateRollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, p *field.Path) field.ErrorList {
	unavailable, surge := derefIntOrStr(ru.MaxUnavailable), derefIntOrStr(ru.MaxSurge)
	up, sp := p.Child("maxUnavailable"), p.Child("maxSurge")
	errs := ValidatePositiveIntOrPercent(unavailable, up)
	errs = append(errs, ValidatePositiveIntOrPercent(surge, sp)...)
	errs = append(errs, IsNotMoreThan100Percent(unavailable, up)...)
	errs = append(errs, IsNotMoreThan100Percent(surge, sp)...)
	hasUnavailable, hasSurge := intOrPercentValue(unavailable) != 0, intOrPercentValue(surge) != 0
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(sp, surge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(up, "cannot be 0 when maxSurge is 0"))
	}
	return errs
}
