package authorization

import (
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// resourceAttributes builds the authorizer attributes of a resource check by
// u. An empty version means every version. Selector requirements that cannot
// be understood are dropped and the parse error recorded, which only widens
// the check (requirements are ANDed).
func resourceAttributes(u user.Info, in *authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	version := in.Version
	if version == "" {
		version = "*"
	}
	rec := authorizer.AttributesRecord{
		User:            u,
		Verb:            in.Verb,
		Namespace:       in.Namespace,
		APIGroup:        in.Group,
		APIVersion:      version,
		Resource:        in.Resource,
		Subresource:     in.Subresource,
		Name:            in.Name,
		ResourceRequest: true,
	}
	if ls := in.LabelSelector; ls != nil {
		switch {
		case len(ls.Requirements) > 0:
			rec.LabelSelectorRequirements, rec.LabelSelectorParsingErr = labelRequirements(ls.Requirements)
		case ls.RawSelector != "":
			if sel, err := labels.Parse(ls.RawSelector); err != nil {
				rec.LabelSelectorParsingErr = err
			} else {
				rec.LabelSelectorRequirements, _ = sel.Requirements()
			}
		}
	}
	if fs := in.FieldSelector; fs != nil {
		switch {
		case len(fs.Requirements) > 0:
			rec.FieldSelectorRequirements, rec.FieldSelectorParsingErr = fieldRequirements(fs.Requirements)
		case fs.RawSelector != "":
			if sel, err := fields.ParseSelector(fs.RawSelector); err != nil {
				rec.FieldSelectorParsingErr = err
			} else {
				rec.FieldSelectorRequirements = sel.Requirements()
			}
		}
	}
	return rec
}

// nonResourceAttributes builds the authorizer attributes of a non-resource
// (URL path) check by u.
func nonResourceAttributes(u user.Info, in *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: in.Verb, Path: in.Path}
}

// specAttributes builds the attributes of a SubjectAccessReviewSpec, whose
// subject is spelled out in the spec. The spec must have passed validation.
func specAttributes(spec *authorizationv1.SubjectAccessReviewSpec) authorizer.AttributesRecord {
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if spec.Extra != nil {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = []string(v)
		}
	}
	if spec.ResourceAttributes != nil {
		return resourceAttributes(u, spec.ResourceAttributes)
	}
	return nonResourceAttributes(u, spec.NonResourceAttributes)
}

var labelOps = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}

func labelRequirements(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	var out labels.Requirements
	var errs []error
	for _, r := range in {
		op, ok := labelOps[r.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a valid label selector operator", r.Operator))
			continue
		}
		values := r.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(r.Key, op, values)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *req)
	}
	return out, errors.Join(errs...)
}

func fieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var out fields.Requirements
	var errs []error
	for _, r := range in {
		var op selection.Operator
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
			op = selection.Equals
		case metav1.FieldSelectorOpNotIn:
			op = selection.NotEquals
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("field selectors do not support the %s operator", r.Operator))
			continue
		default:
			errs = append(errs, fmt.Errorf("%q is not a valid field selector operator", r.Operator))
			continue
		}
		if len(r.Values) != 1 {
			errs = append(errs, fmt.Errorf("field selector operator %s needs exactly one value, got %d", r.Operator, len(r.Values)))
			continue
		}
		out = append(out, fields.Requirement{Field: r.Key, Operator: op, Value: r.Values[0]})
	}
	return out, errors.Join(errs...)
}

// evaluationError joins the authorizer's error with notes about selectors
// that were partly or wholly ignored.
func evaluationError(err error, attrs authorizer.AttributesRecord) string {
	var msgs []string
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if reqs, perr := attrs.GetFieldSelector(); perr != nil {
		msgs = append(msgs, ignoredNote("fieldSelector", len(reqs) > 0))
	}
	if reqs, perr := attrs.GetLabelSelector(); perr != nil {
		msgs = append(msgs, ignoredNote("labelSelector", len(reqs) > 0))
	}
	return strings.Join(msgs, "; ")
}

func ignoredNote(selector string, partly bool) string {
	if partly {
		return "spec.resourceAttributes." + selector + " partially ignored due to parse error"
	}
	return "spec.resourceAttributes." + selector + " ignored due to parse error"
}

// status converts an authorizer answer to a review status.
func status(decision authorizer.Decision, reason string, err error, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authorizer.DecisionAllow,
		Denied:          decision == authorizer.DecisionDeny,
		Reason:          reason,
		EvaluationError: evaluationError(err, attrs),
	}
}
