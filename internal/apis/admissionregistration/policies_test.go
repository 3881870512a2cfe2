package admissionregistration

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// matchDeployments is defaulted match resources selecting deployments.
func matchDeployments(ops ...admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
	if len(ops) == 0 {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	}
	return &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"},
				Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}}},
		MatchPolicy:       ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
	}
}

func validatingPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matchDeployments(),
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "object.spec.replicas <= 5",
				MessageExpression: "'too many replicas: ' + string(object.spec.replicas)",
			}},
		},
	}
}

func TestValidateValidatingAdmissionPolicy(t *testing.T) {
	type spec = admissionregistrationv1.ValidatingAdmissionPolicySpec
	tests := []struct {
		name   string
		change func(s *spec)
		want   []errKey
	}{
		{name: "valid", change: func(*spec) {}},
		{name: "no failure policy", change: func(s *spec) { s.FailurePolicy = nil },
			want: []errKey{e(required, "spec.failurePolicy")}},
		{name: "unknown failure policy", change: func(s *spec) { s.FailurePolicy = ptr.To[admissionregistrationv1.FailurePolicyType]("Retry") },
			want: []errKey{e(notSupported, "spec.failurePolicy")}},

		// match constraints
		{name: "no match constraints", change: func(s *spec) { s.MatchConstraints = nil },
			want: []errKey{e(required, "spec.matchConstraints")}},
		{name: "no resource rules", change: func(s *spec) { s.MatchConstraints.ResourceRules = nil },
			want: []errKey{e(required, "spec.matchConstraints.resourceRules")}},
		{name: "undefaulted match constraints", change: func(s *spec) {
			s.MatchConstraints.MatchPolicy, s.MatchConstraints.NamespaceSelector, s.MatchConstraints.ObjectSelector = nil, nil, nil
		}, want: []errKey{e(required, "spec.matchConstraints.matchPolicy"), e(required, "spec.matchConstraints.namespaceSelector"),
			e(required, "spec.matchConstraints.objectSelector")}},
		{name: "bad rule", change: func(s *spec) { s.MatchConstraints.ResourceRules[0].Operations = nil },
			want: []errKey{e(required, "spec.matchConstraints.resourceRules[0].operations")}},
		{name: "bad exclude rule", change: func(s *spec) {
			s.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: []string{"a"}}}
		}, want: []errKey{e(required, "spec.matchConstraints.excludeResourceRules[0].operations"), e(required, "spec.matchConstraints.excludeResourceRules[0].apiGroups"),
			e(required, "spec.matchConstraints.excludeResourceRules[0].apiVersions"), e(required, "spec.matchConstraints.excludeResourceRules[0].resources")}},
		{name: "bad and duplicate resource names", change: func(s *spec) {
			s.MatchConstraints.ResourceRules[0].ResourceNames = []string{"web", "a/b", "web"}
		}, want: []errKey{e(invalid, "spec.matchConstraints.resourceRules[0].resourceNames[1]"), e(duplicate, "spec.matchConstraints.resourceRules[0].resourceNames[2]")}},
		{name: "lax selector value", change: func(s *spec) {
			s.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"not valid"}}}}
		}, want: []errKey{e(invalid, "spec.matchConstraints.objectSelector.matchExpressions[0].values[0]")}},
		{name: "delete is fine for a validating policy", change: func(s *spec) { s.MatchConstraints = matchDeployments(admissionregistrationv1.Delete) }},

		// paramKind
		{name: "params with a paramKind", change: func(s *spec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			s.Validations[0].Expression = "object.spec.replicas <= int(params.data.max)"
			s.MatchConditions = conditions("params.data.enabled == 'true'")
		}},
		{name: "params without a paramKind", change: func(s *spec) { s.Validations[0].Expression = "object.spec.replicas <= params.max" },
			want: []errKey{e(invalid, "spec.validations[0].expression")}},
		{name: "empty paramKind", change: func(s *spec) { s.ParamKind = &admissionregistrationv1.ParamKind{} },
			want: []errKey{e(required, "spec.paramKind.apiVersion"), e(required, "spec.paramKind.kind")}},
		{name: "paramKind with two slashes", change: func(s *spec) { s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "Config"} },
			want: []errKey{e(invalid, "spec.paramKind.apiVersion")}},
		{name: "paramKind without version", change: func(s *spec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/", Kind: "Config"}
		}, want: []errKey{e(invalid, "spec.paramKind.apiVersion")}},
		{name: "paramKind with bad group and kind", change: func(s *spec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "Example_com/v1", Kind: "Config Map"}
		}, want: []errKey{e(invalid, "spec.paramKind.apiVersion"), e(invalid, "spec.paramKind.kind")}},

		// validations
		{name: "neither validations nor audit annotations", change: func(s *spec) { s.Validations = nil },
			want: []errKey{e(required, "spec.validations"), e(required, "spec.auditAnnotations")}},
		{name: "audit annotations only", change: func(s *spec) {
			s.Validations = nil
			s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "string(object.spec.replicas)"}}
		}},
		{name: "validation without expression", change: func(s *spec) { s.Validations[0].Expression = " " },
			want: []errKey{e(required, "spec.validations[0].expression")}},
		{name: "validation that does not compile", change: func(s *spec) { s.Validations[0].Expression = "object.spec.replicas <=" },
			want: []errKey{e(invalid, "spec.validations[0].expression")}},
		{name: "validation that is not boolean", change: func(s *spec) { s.Validations[0].Expression = "object.spec.replicas" },
			want: []errKey{e(invalid, "spec.validations[0].expression")}},
		{name: "blank message expression", change: func(s *spec) { s.Validations[0].MessageExpression = "  " },
			want: []errKey{e(invalid, "spec.validations[0].messageExpression")}},
		{name: "message expression that is not a string", change: func(s *spec) { s.Validations[0].MessageExpression = "object.spec.replicas" },
			want: []errKey{e(invalid, "spec.validations[0].messageExpression")}},
		{name: "message expression may not use the authorizer", change: func(s *spec) {
			s.Validations[0].MessageExpression = "string(authorizer.group('').resource('pods').check('get').allowed())"
		}, want: []errKey{e(invalid, "spec.validations[0].messageExpression")}},
		{name: "blank message", change: func(s *spec) { s.Validations[0].Message = " " },
			want: []errKey{e(invalid, "spec.validations[0].message")}},
		{name: "message with a line break", change: func(s *spec) { s.Validations[0].Message = "too\nmany" },
			want: []errKey{e(invalid, "spec.validations[0].message")}},
		{name: "known reason", change: func(s *spec) { s.Validations[0].Reason = ptr.To(metav1.StatusReasonRequestEntityTooLarge) }},
		{name: "unknown reason", change: func(s *spec) { s.Validations[0].Reason = ptr.To(metav1.StatusReasonConflict) },
			want: []errKey{e(notSupported, "spec.validations[0].reason")}},

		// variables
		{name: "variables", change: func(s *spec) {
			s.Variables = []admissionregistrationv1.Variable{
				{Name: "replicas", Expression: "object.spec.replicas"},
				{Name: "tooMany", Expression: "variables.replicas > 5"},
			}
			s.Validations[0].Expression = "!variables.tooMany"
			s.Validations[0].MessageExpression = "'too many: ' + string(variables.replicas)"
		}},
		{name: "variable reference without variables", change: func(s *spec) { s.Validations[0].Expression = "variables.ok" },
			want: []errKey{e(invalid, "spec.validations[0].expression")}},
		{name: "bad variables", change: func(s *spec) {
			s.Variables = []admissionregistrationv1.Variable{
				{Name: "", Expression: "1"},
				{Name: "1st", Expression: "1"},
				{Name: "in", Expression: "1"},
				{Name: "ok", Expression: ""},
				{Name: "broken", Expression: "object.spec.(replicas"},
			}
		}, want: []errKey{e(required, "spec.variables[0].name"), e(invalid, "spec.variables[1].name"), e(invalid, "spec.variables[2].name"),
			e(required, "spec.variables[3].expression"), e(invalid, "spec.variables[4].expression")}},

		// audit annotations
		{name: "bad audit annotations", change: func(s *spec) {
			s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
				{Key: "a", ValueExpression: "'x'"},
				{Key: "a", ValueExpression: "null"},
				{Key: "not valid", ValueExpression: "'x'"},
				{Key: "b", ValueExpression: ""},
				{Key: "c", ValueExpression: "1"},
			}
		}, want: []errKey{e(duplicate, "spec.auditAnnotations[1].key"), e(invalid, "spec.auditAnnotations[2].key"),
			e(required, "spec.auditAnnotations[3].valueExpression"), e(invalid, "spec.auditAnnotations[4].valueExpression")}},
		{name: "21 audit annotations", change: func(s *spec) {
			for i := 0; i < 21; i++ {
				s.AuditAnnotations = append(s.AuditAnnotations, admissionregistrationv1.AuditAnnotation{Key: fmt.Sprintf("k%d", i), ValueExpression: "'v'"})
			}
		}, want: []errKey{e(invalid, "spec.auditAnnotations")}},

		// match conditions
		{name: "invalid match condition", change: func(s *spec) { s.MatchConditions = conditions("true", "object.metadata.name") },
			want: []errKey{e(invalid, "spec.matchConditions[1].expression")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validatingPolicy()
			tc.change(&p.Spec)
			expectErrs(t, ValidateValidatingAdmissionPolicy(p), tc.want...)
		})
	}
	t.Run("audit annotation key needs a policy name", func(t *testing.T) {
		p := validatingPolicy()
		p.Name = ""
		p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "a", ValueExpression: "'x'"}}
		expectErrs(t, ValidateValidatingAdmissionPolicy(p), e(required, "metadata.name"), e(invalid, "spec.auditAnnotations[0].key"))
	})
	t.Run("reserved name", func(t *testing.T) {
		p := validatingPolicy()
		p.Name = "limits.static.k8s.io"
		expectErrs(t, ValidateValidatingAdmissionPolicy(p), e(invalid, "metadata.name"))
	})
}

func TestValidateValidatingAdmissionPolicyUpdate(t *testing.T) {
	old := validatingPolicy()
	old.ResourceVersion = "1"
	old.Spec.MatchConditions = conditions("no_such_variable")

	upd := old.DeepCopy()
	upd.Spec.Validations[0].Expression = "object.spec.replicas <= 3"
	expectErrs(t, ValidateValidatingAdmissionPolicyUpdate(upd, old))

	// A new paramKind changes what match conditions may use: they are compiled.
	upd.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	expectErrs(t, ValidateValidatingAdmissionPolicyUpdate(upd, old), e(invalid, "spec.matchConditions[0].expression"))

	// Expressions the old object held compile in the stored environment.
	const newer = "[1, 2].includes(1)"
	stored := validatingPolicy()
	stored.Spec.Validations[0].Expression = newer
	expectErrs(t, ValidateValidatingAdmissionPolicy(stored), e(invalid, "spec.validations[0].expression"))
	upd = stored.DeepCopy()
	upd.Spec.Validations = append(upd.Spec.Validations, admissionregistrationv1.Validation{Expression: "true"})
	expectErrs(t, ValidateValidatingAdmissionPolicyUpdate(upd, stored))
	upd.Spec.Validations[1].Expression = "[3].includes(3)"
	expectErrs(t, ValidateValidatingAdmissionPolicyUpdate(upd, stored), e(invalid, "spec.validations[1].expression"))
}

func TestValidateValidatingAdmissionPolicyStatusUpdate(t *testing.T) {
	old := validatingPolicy()
	p := old.DeepCopy()
	p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{
		ObservedGeneration: 1,
		TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{
			{FieldRef: "spec.validations[0].expression", Warning: "no such field"},
		}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Checked", LastTransitionTime: metav1.Now()}},
	}
	expectErrs(t, ValidateValidatingAdmissionPolicyStatusUpdate(p, old))

	p.Status.TypeChecking.ExpressionWarnings = append(p.Status.TypeChecking.ExpressionWarnings,
		admissionregistrationv1.ExpressionWarning{},
		admissionregistrationv1.ExpressionWarning{FieldRef: "spec.validations[0", Warning: "x"})
	p.Status.Conditions[0].Status = "Perhaps"
	expectErrs(t, ValidateValidatingAdmissionPolicyStatusUpdate(p, old),
		e(required, "status.typeChecking.expressionWarnings[1].warning"),
		e(required, "status.typeChecking.expressionWarnings[1].fieldRef"),
		e(invalid, "status.typeChecking.expressionWarnings[2].fieldRef"),
		e(notSupported, "status.conditions[0].status"))
}

func TestValidateValidatingAdmissionPolicyBinding(t *testing.T) {
	type spec = admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec
	deny := admissionregistrationv1.DenyAction
	tests := []struct {
		name   string
		change func(s *spec)
		want   []errKey
	}{
		{name: "valid", change: func(*spec) {}},
		{name: "params by name and match resources", change: func(s *spec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: &deny}
			s.MatchResources = &admissionregistrationv1.MatchResources{MatchPolicy: ptr.To(admissionregistrationv1.Exact),
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, ObjectSelector: &metav1.LabelSelector{}}
		}},
		{name: "params by selector", change: func(s *spec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
		}},
		{name: "no policy name", change: func(s *spec) { s.PolicyName = "" },
			want: []errKey{e(required, "spec.policyName")}},
		{name: "bad policy name", change: func(s *spec) { s.PolicyName = "Replica_Limit" },
			want: []errKey{e(invalid, "spec.policyName")}},
		{name: "no validation actions", change: func(s *spec) { s.ValidationActions = nil },
			want: []errKey{e(required, "spec.validationActions")}},
		{name: "unknown and duplicate actions", change: func(s *spec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit, "Log", admissionregistrationv1.Audit}
		}, want: []errKey{e(notSupported, "spec.validationActions[1]"), e(duplicate, "spec.validationActions[2]")}},
		{name: "deny and warn", change: func(s *spec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn}
		}, want: []errKey{e(invalid, "spec.validationActions")}},
		{name: "param name and selector", change: func(s *spec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: &deny}
		}, want: []errKey{e(forbidden, "spec.paramRef.name"), e(forbidden, "spec.paramRef.selector")}},
		{name: "neither param name nor selector", change: func(s *spec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{ParameterNotFoundAction: &deny}
		}, want: []errKey{e(required, "spec.paramRef")}},
		{name: "bad param name, no not-found action", change: func(s *spec) { s.ParamRef = &admissionregistrationv1.ParamRef{Name: "a/b"} },
			want: []errKey{e(invalid, "spec.paramRef.name"), e(required, "spec.paramRef.parameterNotFoundAction")}},
		{name: "unknown not-found action", change: func(s *spec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To[admissionregistrationv1.ParameterNotFoundActionType]("Ignore")}
		}, want: []errKey{e(notSupported, "spec.paramRef.parameterNotFoundAction")}},
		{name: "bad match resources", change: func(s *spec) {
			s.MatchResources = &admissionregistrationv1.MatchResources{MatchPolicy: ptr.To[admissionregistrationv1.MatchPolicyType]("Fuzzy")}
		}, want: []errKey{e(notSupported, "spec.matchResources.matchPolicy"), e(required, "spec.matchResources.namespaceSelector"),
			e(required, "spec.matchResources.objectSelector")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "replica-limit-binding"},
				Spec: spec{PolicyName: "replica-limit",
					ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}},
			}
			tc.change(&b.Spec)
			expectErrs(t, ValidateValidatingAdmissionPolicyBinding(b), tc.want...)
			b.ResourceVersion = "1"
			expectErrs(t, ValidateValidatingAdmissionPolicyBindingUpdate(b, b.DeepCopy()), tc.want...)
		})
	}
}

func mutatingPolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "add-label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			MatchConstraints:   matchDeployments(),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}`}},
				{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
					Expression: `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"patched": "yes"}}]`}},
			},
		},
	}
}

func TestValidateMutatingAdmissionPolicy(t *testing.T) {
	type spec = admissionregistrationv1.MutatingAdmissionPolicySpec
	tests := []struct {
		name   string
		change func(s *spec)
		want   []errKey
	}{
		{name: "valid", change: func(*spec) {}},
		{name: "variables, params and match conditions", change: func(s *spec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			s.Variables = []admissionregistrationv1.Variable{{Name: "label", Expression: "params.data.label"}}
			// Match conditions see params but not variables (as upstream).
			s.MatchConditions = conditions(`!has(object.metadata.labels) || !(params.data.label in object.metadata.labels)`)
			s.Mutations[0].ApplyConfiguration.Expression = `Object{metadata: Object.metadata{labels: {variables.label: "yes"}}}`
			s.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
		}},
		{name: "no failure policy, match constraints or reinvocation policy", change: func(s *spec) {
			s.FailurePolicy, s.MatchConstraints, s.ReinvocationPolicy = nil, nil, ""
		}, want: []errKey{e(required, "spec.failurePolicy"), e(required, "spec.matchConstraints"), e(required, "spec.reinvocationPolicy")}},
		{name: "unknown reinvocation policy", change: func(s *spec) { s.ReinvocationPolicy = "Twice" },
			want: []errKey{e(notSupported, "spec.reinvocationPolicy")}},
		{name: "delete cannot be mutated", change: func(s *spec) {
			s.MatchConstraints = matchDeployments(admissionregistrationv1.Create, admissionregistrationv1.Delete)
		}, want: []errKey{e(notSupported, "spec.matchConstraints.resourceRules.operations")}},
		{name: "no mutations", change: func(s *spec) { s.Mutations = nil },
			want: []errKey{e(required, "spec.mutations")}},
		{name: "no patch type", change: func(s *spec) { s.Mutations[0].PatchType = "" },
			want: []errKey{e(required, "spec.mutations[0].patchType")}},
		{name: "unknown patch type", change: func(s *spec) { s.Mutations[0].PatchType = "MergePatch" },
			want: []errKey{e(notSupported, "spec.mutations[0].patchType")}},
		{name: "patch type without its field and with the other", change: func(s *spec) {
			s.Mutations[0].PatchType = admissionregistrationv1.PatchTypeJSONPatch
			s.Mutations[1].PatchType = admissionregistrationv1.PatchTypeApplyConfiguration
		}, want: []errKey{e(required, "spec.mutations[0].jsonPatch"), e(invalid, "spec.mutations[0].applyConfiguration"),
			e(required, "spec.mutations[1].applyConfiguration"), e(invalid, "spec.mutations[1].jsonPatch")}},
		{name: "empty expressions", change: func(s *spec) {
			s.Mutations[0].ApplyConfiguration.Expression = " "
			s.Mutations[1].JSONPatch.Expression = ""
		}, want: []errKey{e(required, "spec.mutations[0].applyConfiguration.expression"), e(required, "spec.mutations[1].jsonPatch.expression")}},
		{name: "expressions of the wrong type", change: func(s *spec) {
			s.Mutations[0].ApplyConfiguration.Expression = "true"
			s.Mutations[1].JSONPatch.Expression = `JSONPatch{op: "remove", path: "/metadata/labels"}`
		}, want: []errKey{e(invalid, "spec.mutations[0].applyConfiguration.expression"), e(invalid, "spec.mutations[1].jsonPatch.expression")}},
		{name: "invalid match condition", change: func(s *spec) { s.MatchConditions = conditions("object.(") },
			want: []errKey{e(invalid, "spec.matchConditions[0].expression")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mutatingPolicy()
			tc.change(&p.Spec)
			expectErrs(t, ValidateMutatingAdmissionPolicy(p), tc.want...)
		})
	}
}

func TestValidateMutatingAdmissionPolicyUpdate(t *testing.T) {
	old := mutatingPolicy()
	old.ResourceVersion = "1"
	old.Spec.MatchConditions = conditions("no_such_variable")
	upd := old.DeepCopy()
	upd.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	expectErrs(t, ValidateMutatingAdmissionPolicyUpdate(upd, old))
	upd.Spec.MatchConditions = conditions("no_such_variable", "true")
	upd.Spec.Mutations[1].JSONPatch.Expression = `[JSONPatch{op: "remove", path: "/metadata/annotations"}]`
	expectErrs(t, ValidateMutatingAdmissionPolicyUpdate(upd, old), e(invalid, "spec.matchConditions[0].expression"))
}

func TestValidateMutatingAdmissionPolicyBinding(t *testing.T) {
	valid := func() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
		return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "add-label-binding"},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "add-label"},
		}
	}
	expectErrs(t, ValidateMutatingAdmissionPolicyBinding(valid()))

	b := valid()
	b.Spec.PolicyName = ""
	b.Spec.MatchResources = matchDeployments(admissionregistrationv1.OperationAll, admissionregistrationv1.Delete)
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "x"}
	want := []errKey{e(required, "spec.policyName"), e(invalid, "spec.matchResources.resourceRules[0].operations"),
		e(notSupported, "spec.matchResources.resourceRules.operations"), e(required, "spec.paramRef.parameterNotFoundAction")}
	expectErrs(t, ValidateMutatingAdmissionPolicyBinding(b), want...)
	expectErrs(t, ValidateMutatingAdmissionPolicyBindingUpdate(b, valid()), want...)

	b = valid()
	b.Name = "labels.static.k8s.io"
	expectErrs(t, ValidateMutatingAdmissionPolicyBinding(b), e(invalid, "metadata.name"))
	expectErrs(t, ValidateMutatingAdmissionPolicyBindingUpdate(b, b.DeepCopy()))
}
