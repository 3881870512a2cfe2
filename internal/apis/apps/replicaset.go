package apps

import (
	appsv1 "k8s.io/api/apps/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateReplicaSet validates a ReplicaSet on create.
func ValidateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := validateObjectMeta(&rs.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

// ValidateReplicaSetUpdate validates an update of a ReplicaSet; the selector
// is immutable.
func ValidateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateReplicaSetStatusUpdate validates a write to the status subresource
// of a ReplicaSet.
func ValidateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	p := field.NewPath("status")
	st := &rs.Status
	errs := validateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, nonNegative(int64(st.Replicas), p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(st.FullyLabeledReplicas), p.Child("fullyLabeledReplicas"))...)
	errs = append(errs, nonNegative(int64(st.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(st.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	errs = append(errs, nonNegativePtr(st.TerminatingReplicas, p.Child("terminatingReplicas"))...)
	const msg = "cannot be greater than status.replicas"
	if st.FullyLabeledReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, msg))
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
	return errs
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, p *field.Path) field.ErrorList {
	errs := nonNegativePtr(spec.Replicas, p.Child("replicas"))
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	// Upstream names deployments in this message for ReplicaSets too.
	errs = append(errs, validateStrictSelector(spec.Selector, "deployment", p.Child("selector"))...)
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		return append(errs, field.Invalid(p.Child("selector"), spec.Selector, "invalid label selector"))
	}
	tp := p.Child("template")
	errs = append(errs, selectorMatchesTemplate(sel, &spec.Template, tp)...)
	return append(errs, validateLongRunningTemplate(&spec.Template, "ReplicaSet", tp)...)
}
