package authorization

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const exactlyOne = "exactly one of nonResourceAttributes or resourceAttributes must be specified"

// validateAttributesUnion checks that exactly one kind of attributes is set
// and validates the resource attributes' selectors.
func validateAttributesUnion(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (ra == nil) == (nra == nil) {
		errs = append(errs, field.Invalid(specPath, nra, exactlyOne))
	}
	return append(errs, validateResourceAttributes(ra, specPath.Child("resourceAttributes"))...)
}

func validateSubjectAccessReviewSpec(spec *authorizationv1.SubjectAccessReviewSpec, specPath *field.Path) field.ErrorList {
	errs := validateAttributesUnion(spec.ResourceAttributes, spec.NonResourceAttributes, specPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(specPath.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

func validateResourceAttributes(ra *authorizationv1.ResourceAttributes, path *field.Path) field.ErrorList {
	if ra == nil {
		return nil
	}
	var errs field.ErrorList
	if fs := ra.FieldSelector; fs != nil {
		p := path.Child("fieldSelector")
		errs = append(errs, validateSelectorShape(fs.RawSelector, len(fs.Requirements), p)...)
		// Operators this server does not know are let through: a newer
		// client may know them, and dropping a requirement only widens the
		// check.
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range fs.Requirements {
			errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	if ls := ra.LabelSelector; ls != nil {
		p := path.Child("labelSelector")
		errs = append(errs, validateSelectorShape(ls.RawSelector, len(ls.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range ls.Requirements {
			errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	return errs
}

// validateSelectorShape requires exactly one of rawSelector and requirements.
func validateSelectorShape(raw string, nreq int, path *field.Path) field.ErrorList {
	switch {
	case raw != "" && nreq > 0:
		return field.ErrorList{field.Invalid(path.Child("rawSelector"), raw, "may not be specified at the same time as requirements")}
	case raw == "" && nreq == 0:
		return field.ErrorList{field.Required(path.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", path))}
	}
	return nil
}

// validateEmptyMeta requires metadata to be empty, apart from the fields the
// apiserver itself fills (managedFields) and, for local reviews, namespace.
func validateEmptyMeta(meta metav1.ObjectMeta, allowNamespace bool) field.ErrorList {
	meta.ManagedFields = nil
	msg := "must be empty"
	if allowNamespace {
		meta.Namespace = ""
		msg = "must be empty except for namespace"
	}
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, msg)}
	}
	return nil
}

// ValidateSubjectAccessReview validates a SubjectAccessReview on create.
func ValidateSubjectAccessReview(sar *authorizationv1.SubjectAccessReview) field.ErrorList {
	errs := validateSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	return append(errs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateSelfSubjectAccessReview validates a SelfSubjectAccessReview on create.
func ValidateSelfSubjectAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	errs := validateAttributesUnion(sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes, field.NewPath("spec"))
	return append(errs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateLocalSubjectAccessReview validates a LocalSubjectAccessReview on
// create: besides the SubjectAccessReview rules, resource attributes must name
// the review's own namespace and non-resource attributes are not allowed.
func ValidateLocalSubjectAccessReview(sar *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	errs := validateSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	errs = append(errs, validateEmptyMeta(sar.ObjectMeta, true)...)
	if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if sar.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), sar.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	return errs
}
