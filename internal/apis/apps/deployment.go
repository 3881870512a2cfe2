package apps

import (
	appsv1 "k8s.io/api/apps/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateDeployment validates a Deployment on create.
func ValidateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := validateObjectMeta(&d.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

// ValidateDeploymentUpdate validates an update of a Deployment; the selector
// is immutable.
func ValidateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateDeploymentStatusUpdate validates a write to the status
// subresource of a Deployment.
func ValidateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	p := field.NewPath("status")
	st := &d.Status
	errs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, nonNegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	errs = append(errs, nonNegative(int64(st.Replicas), p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(st.UpdatedReplicas), p.Child("updatedReplicas"))...)
	errs = append(errs, nonNegative(int64(st.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(st.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(int64(st.UnavailableReplicas), p.Child("unavailableReplicas"))...)
	errs = append(errs, nonNegativePtr(st.TerminatingReplicas, p.Child("terminatingReplicas"))...)
	errs = append(errs, nonNegativePtr(st.CollisionCount, p.Child("collisionCount"))...)
	const msg = "cannot be greater than status.replicas"
	if st.UpdatedReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("updatedReplicas"), st.UpdatedReplicas, msg))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return append(errs, collisionCountDecremented(st.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, nonNegativePtr(spec.Replicas, p.Child("replicas"))...)
	errs = append(errs, validateStrictSelector(spec.Selector, "deployment", p.Child("selector"))...)
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), spec.Selector, "invalid label selector"))
	} else {
		tp := p.Child("template")
		errs = append(errs, selectorMatchesTemplate(sel, &spec.Template, tp)...)
		errs = append(errs, validateLongRunningTemplate(&spec.Template, "ReplicaSet", tp)...)
	}
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, p.Child("strategy"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, nonNegativePtr(spec.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
	if spec.ProgressDeadlineSeconds != nil {
		pd := p.Child("progressDeadlineSeconds")
		errs = append(errs, nonNegative(int64(*spec.ProgressDeadlineSeconds), pd)...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(pd, *spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(st *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdateDeployment(st.RollingUpdate, p.Child("rollingUpdate"))
	}
	return field.ErrorList{field.NotSupported(p, st, []string{
		string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType),
	})}
}

// validateRollingUpdateDeployment requires maxSurge and maxUnavailable to be
// counts or percentages, not both zero, and maxUnavailable at most 100%.
func validateRollingUpdateDeployment(ru *appsv1.RollingUpdateDeployment, p *field.Path) field.ErrorList {
	unavailable, surge := derefIntOrStr(ru.MaxUnavailable), derefIntOrStr(ru.MaxSurge)
	up := p.Child("maxUnavailable")
	errs := ValidatePositiveIntOrPercent(unavailable, up)
	errs = append(errs, ValidatePositiveIntOrPercent(surge, p.Child("maxSurge"))...)
	if intOrPercentValue(unavailable) == 0 && intOrPercentValue(surge) == 0 {
		errs = append(errs, field.Invalid(up, unavailable, "may not be 0 when `maxSurge` is 0"))
	}
	return append(errs, IsNotMoreThan100Percent(unavailable, up)...)
}
