package node

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// ValidateRuntimeClass validates a RuntimeClass on create.
func ValidateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := validateObjectMeta(&rc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	hp := field.NewPath("handler")
	if rc.Handler == "" {
		errs = append(errs, field.Required(hp, ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSLabel(rc.Handler, false) {
			errs = append(errs, field.Invalid(hp, rc.Handler, msg))
		}
	}
	if rc.Overhead != nil {
		errs = append(errs, core.ValidateOverhead(rc.Overhead.PodFixed, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		sp := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, sp.Child("nodeSelector"))...)
		}
		tp := sp.Child("tolerations")
		errs = append(errs, core.ValidateTolerations(s.Tolerations, tp)...)
		seen := map[corev1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				errs = append(errs, field.Duplicate(tp.Index(i), t))
			}
			seen[key] = true
		}
	}
	return errs
}

// ValidateRuntimeClassUpdate validates an update: the handler is immutable.
// The rest is not validated again, as upstream.
func ValidateRuntimeClassUpdate(rc, old *nodev1.RuntimeClass) field.ErrorList {
	errs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta)
	return append(errs, apimachineryvalidation.ValidateImmutableField(rc.Handler, old.Handler, field.NewPath("handler"))...)
}
