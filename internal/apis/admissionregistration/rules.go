package admissionregistration

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
)

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
)

// The accepted values of the group's enums, sorted as upstream lists them
// in NotSupported errors.
var (
	failurePolicies      = []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}
	matchPolicies        = []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}
	reinvocationPolicies = []string{string(admissionregistrationv1.IfNeededReinvocationPolicy), string(admissionregistrationv1.NeverReinvocationPolicy)}
	scopes               = []string{string(admissionregistrationv1.AllScopes), string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope)}
	operations           = []string{string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Connect), string(admissionregistrationv1.Create), string(admissionregistrationv1.Delete), string(admissionregistrationv1.Update)}
	// A mutating policy cannot mutate a DELETE.
	mutatingOperations = []string{string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Connect), string(admissionregistrationv1.Create), string(admissionregistrationv1.Update)}
)

// maxMatchConditions caps a webhook's or policy's match conditions.
const maxMatchConditions = 64

// staticSuffix ends the names reserved for the admission configurations an
// apiserver loads from manifests; upstream (ManifestBasedAdmissionControlConfig,
// on by default since 1.37) refuses to create such names through the API.
const staticSuffix = ".static.k8s.io"

// validateMeta checks the metadata of the group's kinds, all cluster-scoped
// with DNS-subdomain names. Immutable metadata on update is checked by the
// generic registry (rest.BeforeUpdate) for every resource.
func validateMeta(m *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(m, false, apimachineryvalidation.NameIsDNSSubdomain, metadataPath)
}

// validateStaticSuffix refuses, on create, a name reserved for manifests.
func validateStaticSuffix(name string) field.ErrorList {
	if !strings.HasSuffix(name, staticSuffix) {
		return nil
	}
	return field.ErrorList{field.Invalid(metadataPath.Child("name"), name,
		fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", staticSuffix))}
}

func contains[T ~string](list []string, v T) bool {
	for _, s := range list {
		if s == string(v) {
			return true
		}
	}
	return false
}

func validateEnum[T ~string](v *T, allowed []string, p *field.Path) field.ErrorList {
	if v == nil || contains(allowed, *v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, *v, allowed)}
}

// validateRuleWithOperations checks a webhook's or policy's rule: the
// operations, the API groups, versions and resources, and the scope.
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := p.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(ops, ""))
	}
	if len(r.Operations) > 1 && contains(toStrings(r.Operations), admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(ops, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !contains(operations, op) {
			errs = append(errs, field.NotSupported(ops.Index(i), op, operations))
		}
	}

	groups := p.Child("apiGroups")
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(groups, ""))
	}
	if len(r.APIGroups) > 1 && contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(groups, r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	versions := p.Child("apiVersions")
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(versions, ""))
	}
	if len(r.APIVersions) > 1 && contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(versions, r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(versions.Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !contains(scopes, *r.Scope) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, scopes))
	}
	return errs
}

func toStrings[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// validateResources checks a rule's resources, each "resource" or
// "resource/subresource", where "*" stands for every resource or
// subresource: "*/*" must stand alone, "*" may not be listed with plain
// resources, and "x/*" or "*/y" may not be listed with what they cover.
func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	anySub := sets.New[string]() // x of every "x/*"
	anyRes := sets.New[string]() // y of every "*/y"
	all, star := false, false
	// Upstream remembers only whether the last plain resource was not "*",
	// so ["pods", "*"] passes and ["*", "pods"] does not; k1s answers alike.
	plain := false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		switch rs {
		case "*/*":
			all = true
		case "*":
			star = true
		}
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			plain = rs != "*"
			continue
		}
		if anySub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if anyRes.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			anySub.Insert(res)
		}
		if res == "*" {
			anyRes.Insert(sub)
		}
	}
	if len(resources) > 1 && all {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if star && plain {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateMatchResources checks a policy's match constraints or a
// binding's match resources; the selectors are validated strictly (these
// kinds came after invalid label values in selectors were refused).
func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	} else {
		errs = append(errs, validateEnum(m.MatchPolicy, matchPolicies, p.Child("matchPolicy"))...)
	}
	strict := metav1validation.LabelSelectorValidationOptions{}
	if m.NamespaceSelector == nil {
		errs = append(errs, field.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, strict, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, field.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, strict, p.Child("objectSelector"))...)
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&m.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&m.ExcludeResourceRules[i], p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range r.ResourceNames {
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(p.Child("resourceNames").Index(i), name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(p.Child("resourceNames").Index(i), name))
		}
		seen.Insert(name)
	}
	return append(errs, validateRuleWithOperations(&r.RuleWithOperations, p)...)
}

// validateMutatingOperations refuses DELETE in the rules of a mutating
// policy or binding. Upstream reports it on the rules' list path, without
// the rule's index; k1s keeps that path.
func validateMutatingOperations(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	for _, r := range m.ResourceRules {
		for _, op := range r.Operations {
			if !contains(mutatingOperations, op) {
				errs = append(errs, field.NotSupported(p.Child("resourceRules", "operations"), op, mutatingOperations))
			}
		}
	}
	return errs
}

// validateMatchConditions checks match conditions: at most 64, each with a
// unique qualified name and a boolean CEL expression that compiles. params
// is declared for policies with a paramKind.
func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, params bool, stored storedExpressions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, mc := range conds {
		ip := p.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(ip.Child("expression"), ""))
		} else {
			errs = append(errs, compile(sharedCompiler(), &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true},
				stored.envType(expr), ip.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			for _, msg := range validation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), mc.Name, msg))
			}
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return errs
}
