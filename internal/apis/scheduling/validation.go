package scheduling

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// HighestUserDefinablePriority is the largest value a PriorityClass that
	// is not a built-in system class may have.
	HighestUserDefinablePriority = int32(1000000000)
	// SystemCriticalPriority is the value of system-cluster-critical; the
	// node-critical class sits 1000 above it.
	SystemCriticalPriority = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix marks the names reserved for built-in
	// classes.
	SystemPriorityClassPrefix = "system-"
	// SystemClusterCritical names the built-in class for cluster-critical
	// pods that may move between nodes.
	SystemClusterCritical = SystemPriorityClassPrefix + "cluster-critical"
	// SystemNodeCritical names the built-in class for pods that must not
	// leave their node.
	SystemNodeCritical = SystemPriorityClassPrefix + "node-critical"
)

// SystemPriorityClasses returns fresh copies of the built-in priority classes
// that a cluster creates at bootstrap. They are the only classes allowed to
// use the "system-" prefix.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:  metav1.ObjectMeta{Name: SystemNodeCritical},
			Value:       SystemCriticalPriority + 1000,
			Description: "Used for system critical pods that must not be moved from their current node.",
		},
		{
			ObjectMeta:  metav1.ObjectMeta{Name: SystemClusterCritical},
			Value:       SystemCriticalPriority,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
		},
	}
}

// isKnownSystemClass reports whether name, value and globalDefault match one
// of the built-in classes exactly, with an explanation when they do not.
func isKnownSystemClass(name string, value int32, globalDefault bool) error {
	for _, pc := range SystemPriorityClasses() {
		if pc.Name != name {
			continue
		}
		if pc.Value != value {
			return fmt.Errorf("value of %s PriorityClass must be %d", name, pc.Value)
		}
		if pc.GlobalDefault != globalDefault {
			return fmt.Errorf("globalDefault of %s PriorityClass must be %t", name, pc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%s is not a known system priority class", name)
}

// ValidatePriorityClass validates a PriorityClass on create.
func ValidatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	errs := validateObjectMeta(&pc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	if strings.HasPrefix(pc.Name, SystemPriorityClassPrefix) {
		if err := isKnownSystemClass(pc.Name, pc.Value, pc.GlobalDefault); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+SystemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %d", HighestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		errs = append(errs, validatePreemptionPolicy(*pc.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	}
	return errs
}

// ValidatePriorityClassUpdate validates an update of a PriorityClass; value
// and preemptionPolicy may not change.
func ValidatePriorityClassUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	errs := validateObjectMetaUpdate(&pc.ObjectMeta, &old.ObjectMeta)
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, apimachineryvalidation.ValidateImmutableField(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}

func validatePreemptionPolicy(policy corev1.PreemptionPolicy, p *field.Path) field.ErrorList {
	switch policy {
	case corev1.PreemptLowerPriority, corev1.PreemptNever:
		return nil
	case "":
		return field.ErrorList{field.Required(p, "")}
	}
	return field.ErrorList{field.NotSupported(p, policy, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})}
}
