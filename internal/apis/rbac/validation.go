package rbac

import (
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ValidateRBACName checks a Role, ClusterRole or binding name. RBAC names only
// have to be usable as a single URL path segment (so "system:node" is fine).
func ValidateRBACName(name string, prefix bool) []string {
	return content.IsPathSegmentName(name)
}

// ValidateRole validates a Role on create.
func ValidateRole(role *rbacv1.Role) field.ErrorList {
	errs := validateObjectMeta(&role.ObjectMeta, true, ValidateRBACName)
	for i := range role.Rules {
		errs = append(errs, ValidatePolicyRule(role.Rules[i], true, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// ValidateRoleUpdate validates an update of a Role.
func ValidateRoleUpdate(role, oldRole *rbacv1.Role) field.ErrorList {
	errs := ValidateRole(role)
	return append(errs, validateObjectMetaUpdate(&role.ObjectMeta, &oldRole.ObjectMeta)...)
}

// ValidateClusterRole validates a ClusterRole on create. Aggregation rule
// selectors must have valid label values.
func ValidateClusterRole(role *rbacv1.ClusterRole) field.ErrorList {
	return validateClusterRole(role, false)
}

// ValidateClusterRoleUpdate validates an update of a ClusterRole. Selector
// label values that were already invalid in the stored object are tolerated.
func ValidateClusterRoleUpdate(role, oldRole *rbacv1.ClusterRole) field.ErrorList {
	errs := validateClusterRole(role, aggregationHasInvalidLabelValue(oldRole))
	return append(errs, validateObjectMetaUpdate(&role.ObjectMeta, &oldRole.ObjectMeta)...)
}

func validateClusterRole(role *rbacv1.ClusterRole, allowInvalidLabelValue bool) field.ErrorList {
	errs := validateObjectMeta(&role.ObjectMeta, false, ValidateRBACName)
	for i := range role.Rules {
		errs = append(errs, ValidatePolicyRule(role.Rules[i], false, field.NewPath("rules").Index(i))...)
	}
	if role.AggregationRule == nil {
		return errs
	}
	selectorsPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(selectorsPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel := &role.AggregationRule.ClusterRoleSelectors[i]
		p := selectorsPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, opts, p)...)
		// Converting a selector re-checks label values, so the conversion is
		// skipped when invalid values from the stored object are tolerated.
		if allowInvalidLabelValue {
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(p, sel, "invalid label selector."))
		}
	}
	return errs
}

func aggregationHasInvalidLabelValue(role *rbacv1.ClusterRole) bool {
	if role == nil || role.AggregationRule == nil {
		return false
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if metav1validation.LabelSelectorHasInvalidLabelValue(&role.AggregationRule.ClusterRoleSelectors[i]) {
			return true
		}
	}
	return false
}

// ValidatePolicyRule checks one rule of a Role (namespaced) or ClusterRole.
// Every rule needs verbs. A rule either names non-resource URLs (cluster roles
// only, and then nothing else) or names both API groups and resources.
func ValidatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// ValidateRoleBinding validates a RoleBinding on create. It may reference a
// Role or a ClusterRole.
func ValidateRoleBinding(rb *rbacv1.RoleBinding) field.ErrorList {
	errs := validateObjectMeta(&rb.ObjectMeta, true, ValidateRBACName)
	errs = append(errs, validateRoleRef(rb.RoleRef, []string{"Role", "ClusterRole"})...)
	for i := range rb.Subjects {
		errs = append(errs, ValidateSubject(rb.Subjects[i], true, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateRoleBindingUpdate validates an update of a RoleBinding; roleRef is
// immutable.
func ValidateRoleBindingUpdate(rb, oldRB *rbacv1.RoleBinding) field.ErrorList {
	errs := ValidateRoleBinding(rb)
	errs = append(errs, validateObjectMetaUpdate(&rb.ObjectMeta, &oldRB.ObjectMeta)...)
	return append(errs, validateRoleRefUnchanged(rb.RoleRef, oldRB.RoleRef)...)
}

// ValidateClusterRoleBinding validates a ClusterRoleBinding on create. It may
// only reference a ClusterRole, and ServiceAccount subjects need a namespace.
func ValidateClusterRoleBinding(crb *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := validateObjectMeta(&crb.ObjectMeta, false, ValidateRBACName)
	errs = append(errs, validateRoleRef(crb.RoleRef, []string{"ClusterRole"})...)
	for i := range crb.Subjects {
		errs = append(errs, ValidateSubject(crb.Subjects[i], false, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateClusterRoleBindingUpdate validates an update of a
// ClusterRoleBinding; roleRef is immutable.
func ValidateClusterRoleBindingUpdate(crb, oldCRB *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := ValidateClusterRoleBinding(crb)
	errs = append(errs, validateObjectMetaUpdate(&crb.ObjectMeta, &oldCRB.ObjectMeta)...)
	return append(errs, validateRoleRefUnchanged(crb.RoleRef, oldCRB.RoleRef)...)
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kindOK := false
	for _, k := range kinds {
		if ref.Kind == k {
			kindOK = true
		}
	}
	if !kindOK {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range ValidateRBACName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

func validateRoleRefUnchanged(ref, oldRef rbacv1.RoleRef) field.ErrorList {
	return apimachineryvalidation.ValidateImmutableField(ref, oldRef, field.NewPath("roleRef"))
}

// ValidateSubject checks one subject of a binding. namespaced is true for
// RoleBindings, where a ServiceAccount subject may omit its namespace (it
// defaults to the binding's).
func ValidateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind,
			[]string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}
