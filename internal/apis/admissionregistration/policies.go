package admissionregistration

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/util/jsonpath"
)

const (
	maxAuditAnnotations = 20
	// maxAuditValueExpression caps an audit annotation's value expression
	// (5 KiB, below the 10 KiB an annotation's value may reach).
	maxAuditValueExpression = 5 * 1024
)

var (
	validationReasons = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge)}
	validationActions = []string{string(admissionregistrationv1.Audit), string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn)}
	patchTypes        = []string{string(admissionregistrationv1.PatchTypeApplyConfiguration), string(admissionregistrationv1.PatchTypeJSONPatch)}
	notFoundActions   = []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}
)

// policyRules says how a policy is checked: on update, unchanged match
// conditions (under an unchanged paramKind) are not compiled again, and the
// old object's expressions compile in the stored-expressions environment.
type policyRules struct {
	skipMatchConditions bool
	stored              storedExpressions
}

// ValidateValidatingAdmissionPolicy validates a ValidatingAdmissionPolicy
// on create. Its CEL expressions are compiled.
func ValidateValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	errs := validateValidatingPolicy(p, policyRules{stored: storedExpressions{}})
	return append(errs, validateStaticSuffix(p.Name)...)
}

// ValidateValidatingAdmissionPolicyUpdate validates an update of a
// ValidatingAdmissionPolicy.
func ValidateValidatingAdmissionPolicyUpdate(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	r := policyRules{
		skipMatchConditions: sameMatchConditions(p.Spec.ParamKind, old.Spec.ParamKind, p.Spec.MatchConditions, old.Spec.MatchConditions),
		stored:              storedExpressions{},
	}
	s := &old.Spec
	for _, mc := range s.MatchConditions {
		r.stored.add(mc.Expression)
	}
	for _, v := range s.Variables {
		r.stored.add(v.Expression)
	}
	for _, v := range s.Validations {
		r.stored.add(v.Expression)
		r.stored.add(v.MessageExpression)
	}
	for _, a := range s.AuditAnnotations {
		r.stored.add(a.ValueExpression)
	}
	return validateValidatingPolicy(p, r)
}

// ValidateValidatingAdmissionPolicyStatusUpdate validates the status a
// controller writes: type-checking warnings and conditions.
func ValidateValidatingAdmissionPolicyStatusUpdate(p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	sp := field.NewPath("status")
	var errs field.ErrorList
	if tc := p.Status.TypeChecking; tc != nil {
		wp := sp.Child("typeChecking", "expressionWarnings")
		for i, w := range tc.ExpressionWarnings {
			if w.Warning == "" {
				errs = append(errs, field.Required(wp.Index(i).Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, wp.Index(i).Child("fieldRef"))...)
		}
	}
	return append(errs, metav1validation.ValidateConditions(p.Status.Conditions, sp.Child("conditions"))...)
}

// validateFieldRef requires a JSONPath (without braces) into the policy.
func validateFieldRef(ref string, p *field.Path) field.ErrorList {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
		return field.ErrorList{field.Invalid(p, ref, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}

func sameMatchConditions(kind, oldKind *admissionregistrationv1.ParamKind, conds, oldConds []admissionregistrationv1.MatchCondition) bool {
	return equality.Semantic.DeepEqual(kind, oldKind) && equality.Semantic.DeepEqual(conds, oldConds)
}

func validateValidatingPolicy(pol *admissionregistrationv1.ValidatingAdmissionPolicy, r policyRules) field.ErrorList {
	errs := validateMeta(&pol.ObjectMeta)
	spec := &pol.Spec
	params := spec.ParamKind != nil
	// Variables need a compiler that remembers them; one per policy.
	compiler := sharedCompiler()
	if len(spec.Variables) > 0 {
		compiler = newComposingCompiler()
	}
	errs = append(errs, validatePolicyHead(spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints)...)
	if !r.skipMatchConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, params, r.stored, specPath.Child("matchConditions"))...)
	}
	errs = append(errs, validateVariables(compiler, spec.Variables, params, r.stored)...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(specPath.Child("validations"), msg), field.Required(specPath.Child("auditAnnotations"), msg))
	}
	for i := range spec.Validations {
		errs = append(errs, validateValidation(compiler, &spec.Validations[i], params, r.stored, specPath.Child("validations").Index(i))...)
	}
	ap := specPath.Child("auditAnnotations")
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(ap, spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i := range spec.AuditAnnotations {
		a := &spec.AuditAnnotations[i]
		errs = append(errs, validateAuditAnnotation(compiler, pol.Name, a, params, r.stored, ap.Index(i))...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Index(i).Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

// validatePolicyHead checks what both kinds of policy share: the failure
// policy (required), the paramKind and the match constraints, which are
// required and need at least one resource rule (it gives the expressions
// their types).
func validatePolicyHead(failure *admissionregistrationv1.FailurePolicyType, kind *admissionregistrationv1.ParamKind, match *admissionregistrationv1.MatchResources) field.ErrorList {
	var errs field.ErrorList
	if failure == nil {
		errs = append(errs, field.Required(specPath.Child("failurePolicy"), ""))
	} else {
		errs = append(errs, validateEnum(failure, failurePolicies, specPath.Child("failurePolicy"))...)
	}
	if kind != nil {
		errs = append(errs, validateParamKind(kind, specPath.Child("paramKind"))...)
	}
	mp := specPath.Child("matchConstraints")
	if match == nil {
		return append(errs, field.Required(mp, ""))
	}
	errs = append(errs, validateMatchResources(match, mp)...)
	if len(match.ResourceRules) == 0 {
		errs = append(errs, field.Required(mp.Child("resourceRules"), ""))
	}
	return errs
}

// validateParamKind requires an apiVersion ("group/version" or "version",
// the group a DNS subdomain, the version a DNS label) and a kind that is a
// DNS label apart from its case.
func validateParamKind(k *admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	vp := p.Child("apiVersion")
	if k.APIVersion == "" {
		errs = append(errs, field.Required(vp, ""))
	} else if group, version, err := splitGroupVersion(k.APIVersion); err != nil {
		errs = append(errs, field.Invalid(vp, k.APIVersion, err.Error()))
	} else {
		if group != "" {
			if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(vp, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(vp, k.APIVersion, "version must be specified"))
		} else if msgs := validation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp, version, strings.Join(msgs, ",")))
		}
	}
	kp := p.Child("kind")
	if k.Kind == "" {
		errs = append(errs, field.Required(kp, ""))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(k.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(kp, k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// splitGroupVersion splits "group/version" or "version"; "/" is empty.
func splitGroupVersion(gv string) (group, version string, err error) {
	if gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// celIdentifier matches a CEL identifier; celReserved are the words that
// look like one but are not.
var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
		"function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

// validateVariables checks each variable's name (a CEL identifier) and
// compiles its expression into c, in order, so later variables and the
// policy's other expressions may use it.
func validateVariables(c plugincel.Compiler, vars []admissionregistrationv1.Variable, params bool, stored storedExpressions) field.ErrorList {
	var errs field.ErrorList
	for i, v := range vars {
		p := specPath.Child("variables").Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(p.Child("name"), "name is not specified"))
		} else if !celIdentifier.MatchString(v.Name) || celReserved.Has(v.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
			continue
		}
		errs = append(errs, compileVariable(c, &validatingpolicy.Variable{Name: v.Name, Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored.envType(v.Expression), p)...)
	}
	return errs
}

// validateValidation compiles a validation's expression (boolean) and
// message expression (string, without the authorizer), and checks its
// message (one line) and reason.
func validateValidation(c plugincel.Compiler, v *admissionregistrationv1.Validation, params bool, stored storedExpressions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compile(c, &validatingpolicy.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored.envType(v.Expression), p.Child("expression"))...)
	}
	if v.MessageExpression != "" && strings.TrimSpace(v.MessageExpression) == "" {
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if v.MessageExpression != "" {
		// Compiled untrimmed so that error columns point into the field.
		errs = append(errs, compile(c, &validatingpolicy.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: params}, stored.envType(v.MessageExpression), p.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	} else if strings.ContainsAny(msg, "\n\r") {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	return append(errs, validateEnum(v.Reason, validationReasons, p.Child("reason"))...)
}

// validateAuditAnnotation checks that "<policy name>/<key>" is a qualified
// name and compiles the value expression (a string or null).
func validateAuditAnnotation(c plugincel.Compiler, policyName string, a *admissionregistrationv1.AuditAnnotation, params bool, stored storedExpressions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	kp := p.Child("key")
	if policyName == "" {
		errs = append(errs, field.Invalid(kp, a.Key, "requires metadata.name be non-empty"))
	} else {
		for _, msg := range validation.IsQualifiedName(policyName + "/" + a.Key) {
			errs = append(errs, field.Invalid(kp, policyName+"/"+a.Key, msg))
		}
	}
	vp := p.Child("valueExpression")
	expr := strings.TrimSpace(a.ValueExpression)
	switch {
	case expr == "":
		errs = append(errs, field.Required(vp, "valueExpression is not specified"))
	case len(expr) > maxAuditValueExpression:
		// Upstream reports the length as Required; k1s keeps the type.
		errs = append(errs, field.Required(vp, fmt.Sprintf("must not exceed %d bytes in length", maxAuditValueExpression)))
	default:
		res := c.CompileCELExpression(&validatingpolicy.AuditAnnotationCondition{ValueExpression: expr},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored.envType(expr))
		if res.Error != nil {
			errs = append(errs, celError(vp, a.ValueExpression, res.Error))
		}
	}
	return errs
}

// ValidateValidatingAdmissionPolicyBinding validates a
// ValidatingAdmissionPolicyBinding on create. Whether the policy or the
// params exist is not checked: a binding may come before them.
func ValidateValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	return append(validateValidatingBinding(b), validateStaticSuffix(b.Name)...)
}

// ValidateValidatingAdmissionPolicyBindingUpdate validates an update of a
// ValidatingAdmissionPolicyBinding: the create rules; any field may change.
func ValidateValidatingAdmissionPolicyBindingUpdate(b, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	return validateValidatingBinding(b)
}

func validateValidatingBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	errs := validateMeta(&b.ObjectMeta)
	errs = append(errs, validateBindingHead(b.Spec.PolicyName, b.Spec.ParamRef, b.Spec.MatchResources)...)
	return append(errs, validateValidationActions(b.Spec.ValidationActions, specPath.Child("validationActions"))...)
}

// validateBindingHead checks what both kinds of binding share: the policy
// name, the paramRef and the match resources.
func validateBindingHead(policy string, ref *admissionregistrationv1.ParamRef, match *admissionregistrationv1.MatchResources) field.ErrorList {
	var errs field.ErrorList
	pp := specPath.Child("policyName")
	if policy == "" {
		errs = append(errs, field.Required(pp, ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(policy, false) {
			errs = append(errs, field.Invalid(pp, policy, msg))
		}
	}
	errs = append(errs, validateParamRef(ref, specPath.Child("paramRef"))...)
	return append(errs, validateMatchResources(match, specPath.Child("matchResources"))...)
}

// validateParamRef requires exactly one of name and selector, and what to
// do when no params are found.
func validateParamRef(r *admissionregistrationv1.ParamRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	const exclusive = "name and selector are mutually exclusive"
	if r.Name != "" {
		for _, msg := range content.IsPathSegmentName(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if r.Selector != nil {
			errs = append(errs, field.Forbidden(p.Child("name"), exclusive))
		}
	}
	if r.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if r.Name != "" {
			errs = append(errs, field.Forbidden(p.Child("selector"), exclusive))
		}
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, field.Required(p, "one of name or selector must be specified"))
	}
	ap := p.Child("parameterNotFoundAction")
	if r.ParameterNotFoundAction == nil || *r.ParameterNotFoundAction == "" {
		errs = append(errs, field.Required(ap, ""))
	} else if !contains(notFoundActions, *r.ParameterNotFoundAction) {
		errs = append(errs, field.NotSupported(ap, *r.ParameterNotFoundAction, notFoundActions))
	}
	return errs
}

// validateValidationActions requires at least one action, each known and
// listed once, and not both Deny and Warn.
func validateValidationActions(actions []admissionregistrationv1.ValidationAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range actions {
		if !contains(validationActions, a) {
			errs = append(errs, field.NotSupported(p.Index(i), a, validationActions))
		}
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(p, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, field.Required(p, "at least one validation action is required"))
	}
	return errs
}

// ValidateMutatingAdmissionPolicy validates a MutatingAdmissionPolicy on
// create. Its CEL expressions are compiled.
func ValidateMutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	errs := validateMutatingPolicy(p, policyRules{stored: storedExpressions{}})
	return append(errs, validateStaticSuffix(p.Name)...)
}

// ValidateMutatingAdmissionPolicyUpdate validates an update of a
// MutatingAdmissionPolicy.
func ValidateMutatingAdmissionPolicyUpdate(p, old *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	r := policyRules{
		skipMatchConditions: sameMatchConditions(p.Spec.ParamKind, old.Spec.ParamKind, p.Spec.MatchConditions, old.Spec.MatchConditions),
		stored:              storedExpressions{},
	}
	s := &old.Spec
	for _, mc := range s.MatchConditions {
		r.stored.add(mc.Expression)
	}
	for _, v := range s.Variables {
		r.stored.add(v.Expression)
	}
	for _, m := range s.Mutations {
		if m.ApplyConfiguration != nil {
			r.stored.add(m.ApplyConfiguration.Expression)
		}
		if m.JSONPatch != nil {
			r.stored.add(m.JSONPatch.Expression)
		}
	}
	return validateMutatingPolicy(p, r)
}

func validateMutatingPolicy(pol *admissionregistrationv1.MutatingAdmissionPolicy, r policyRules) field.ErrorList {
	errs := validateMeta(&pol.ObjectMeta)
	spec := &pol.Spec
	params := spec.ParamKind != nil
	compiler := newComposingCompiler()
	errs = append(errs, validatePolicyHead(spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints)...)
	errs = append(errs, validateMutatingOperations(spec.MatchConstraints, specPath.Child("matchConstraints"))...)
	if !r.skipMatchConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, params, r.stored, specPath.Child("matchConditions"))...)
	}
	errs = append(errs, validateVariables(compiler, spec.Variables, params, r.stored)...)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(specPath.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range spec.Mutations {
		errs = append(errs, validateMutation(compiler, &spec.Mutations[i], params, r.stored, specPath.Child("mutations").Index(i))...)
	}
	rp := specPath.Child("reinvocationPolicy")
	if spec.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(rp, ""))
	} else {
		errs = append(errs, validateEnum(&spec.ReinvocationPolicy, reinvocationPolicies, rp)...)
	}
	return errs
}

// validateMutation requires the patch type's own field, and only it, and
// compiles its expression: an apply configuration yields an Object, a JSON
// patch a list of JSONPatch.
func validateMutation(c plugincel.Compiler, m *admissionregistrationv1.Mutation, params bool, stored storedExpressions, p *field.Path) field.ErrorList {
	decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true, HasPatchTypes: true}
	var errs field.ErrorList
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(p.Child("patchType"), ""))
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(p.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			errs = append(errs, compilePatch(c, &patch.JSONPatchCondition{Expression: strings.TrimSpace(m.JSONPatch.Expression)}, decls, stored, p.Child("jsonPatch", "expression"))...)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(p.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(p.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			errs = append(errs, compilePatch(c, &patch.ApplyConfigurationCondition{Expression: strings.TrimSpace(m.ApplyConfiguration.Expression)}, decls, stored, p.Child("applyConfiguration", "expression"))...)
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("patchType"), m.PatchType, patchTypes))
	}
	return errs
}

func compilePatch(c plugincel.Compiler, expr plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, stored storedExpressions, p *field.Path) field.ErrorList {
	if expr.GetExpression() == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return compile(c, expr, decls, stored.envType(expr.GetExpression()), p)
}

// ValidateMutatingAdmissionPolicyBinding validates a
// MutatingAdmissionPolicyBinding on create.
func ValidateMutatingAdmissionPolicyBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	return append(validateMutatingBinding(b), validateStaticSuffix(b.Name)...)
}

// ValidateMutatingAdmissionPolicyBindingUpdate validates an update of a
// MutatingAdmissionPolicyBinding: the create rules; any field may change.
func ValidateMutatingAdmissionPolicyBindingUpdate(b, _ *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	return validateMutatingBinding(b)
}

func validateMutatingBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	errs := validateMeta(&b.ObjectMeta)
	errs = append(errs, validateBindingHead(b.Spec.PolicyName, b.Spec.ParamRef, b.Spec.MatchResources)...)
	return append(errs, validateMutatingOperations(b.Spec.MatchResources, specPath.Child("matchResources"))...)
}
