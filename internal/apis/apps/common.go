package apps

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// nonNegative reports a negative value as invalid at p.
func nonNegative(v int64, p *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(v, p)
}

// nonNegativePtr is nonNegative for optional fields.
func nonNegativePtr(v *int32, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return nonNegative(int64(*v), p)
}

// ValidatePositiveIntOrPercent accepts a non-negative integer or a valid
// percentage string such as "25%".
func ValidatePositiveIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		return errs
	case intstr.Int:
		return nonNegative(int64(v.IntValue()), p)
	}
	return field.ErrorList{field.Invalid(p, v, "must be an integer or percentage (e.g '5%')")}
}

// percentValue returns the number of a valid percentage string.
func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) > 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil {
		return 0, false
	}
	return n, true
}

// intOrPercentValue is the number in v, whether a count or a percentage.
func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

// IsNotMoreThan100Percent rejects a percentage above 100%. Plain integers are
// not limited.
func IsNotMoreThan100Percent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	if n, ok := percentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(p, v, "must not be greater than 100%")}
	}
	return nil
}

// derefIntOrStr returns *v, or the zero integer when v is nil (an unset
// rolling-update bound counts as 0, as in the internal API types).
func derefIntOrStr(v *intstr.IntOrString) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt32(0)
	}
	return *v
}

// validateStrictSelector requires a selector that passes strict label
// validation and selects something; kind names the workload in the message.
func validateStrictSelector(sel *metav1.LabelSelector, kind string, p *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "empty selector is invalid for "+kind))
	}
	return errs
}

// selectorMatchesTemplate reports the template labels as invalid when a
// non-empty selector does not select them.
func selectorMatchesTemplate(sel labels.Selector, tpl *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	if sel.Empty() || sel.Matches(labels.Set(tpl.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("metadata", "labels"), tpl.Labels, "`selector` does not match template `labels`")}
}

// validateLongRunningTemplate validates a pod template of a workload whose
// pods run forever: core template rules, restartPolicy Always and no
// activeDeadlineSeconds. kind names the workload in the message.
func validateLongRunningTemplate(tpl *corev1.PodTemplateSpec, kind string, p *field.Path) field.ErrorList {
	errs := core.ValidatePodTemplateSpec(tpl, p)
	return append(errs, longRunningPodRules(tpl, kind, p)...)
}

func longRunningPodRules(tpl *corev1.PodTemplateSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("spec", "restartPolicy"), tpl.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// collisionCountDecremented reports a collisionCount that went down or was
// cleared.
func collisionCountDecremented(newCount, oldCount *int32, p *field.Path) field.ErrorList {
	if oldCount == nil || (newCount != nil && *newCount >= *oldCount) {
		return nil
	}
	var v int32
	if newCount != nil {
		v = *newCount
	}
	return field.ErrorList{field.Invalid(p, v, "cannot be decremented")}
}

// derefInt32 returns *v or def when v is nil.
func derefInt32(v *int32, def int32) int32 {
	if v == nil {
		return def
	}
	return *v
}
