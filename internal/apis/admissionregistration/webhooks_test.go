package admissionregistration

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const (
	invalid      = field.ErrorTypeInvalid
	required     = field.ErrorTypeRequired
	notSupported = field.ErrorTypeNotSupported
	duplicate    = field.ErrorTypeDuplicate
	forbidden    = field.ErrorTypeForbidden
	tooMany      = field.ErrorTypeTooMany
)

// validatingWebhook is a valid, defaulted webhook that calls a service.
func validatingWebhook(name string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: "webhooks", Name: "hook", Path: ptr.To("/validate"), Port: ptr.To[int32](443)}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/status"},
				Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}
}

func validatingConfig(hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "config"}, Webhooks: hooks}
}

func conditions(exprs ...string) []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for i, e := range exprs {
		out = append(out, admissionregistrationv1.MatchCondition{Name: fmt.Sprintf("cond-%d", i), Expression: e})
	}
	return out
}

func TestValidateValidatingWebhookConfiguration(t *testing.T) {
	const w = "webhooks[0]."
	tests := []struct {
		name   string
		change func(h *admissionregistrationv1.ValidatingWebhook)
		want   []errKey
	}{
		{name: "valid service webhook", change: func(*admissionregistrationv1.ValidatingWebhook) {}},
		{name: "valid url webhook", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hooks.example.com:8443/validate")}
		}},
		{name: "unqualified name", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "hook" },
			want: []errKey{e(invalid, w+"name")}},
		{name: "no name", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "" },
			want: []errKey{e(required, w+"name")}},

		// rules
		{name: "no operations", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].Operations = nil },
			want: []errKey{e(required, w+"rules[0].operations")}},
		{name: "wildcard operation with others", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Delete}
		}, want: []errKey{e(invalid, w+"rules[0].operations")}},
		{name: "unknown operation", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, want: []errKey{e(notSupported, w+"rules[0].operations[0]")}},
		{name: "no api groups", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].APIGroups = nil },
			want: []errKey{e(required, w+"rules[0].apiGroups")}},
		{name: "wildcard group with others", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].APIGroups = []string{"*", "apps"} },
			want: []errKey{e(invalid, w+"rules[0].apiGroups")}},
		{name: "no api versions", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].APIVersions = nil },
			want: []errKey{e(required, w+"rules[0].apiVersions")}},
		{name: "empty api version", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].APIVersions = []string{"v1", ""} },
			want: []errKey{e(required, w+"rules[0].apiVersions[1]")}},
		{name: "wildcard version with others", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].APIVersions = []string{"v1", "*"} },
			want: []errKey{e(invalid, w+"rules[0].apiVersions")}},
		{name: "no resources", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].Resources = nil },
			want: []errKey{e(required, w+"rules[0].resources")}},
		{name: "empty resource", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].Resources = []string{"pods", ""} },
			want: []errKey{e(required, w+"rules[0].resources[1]")}},
		{name: "all resources and subresources with others", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Resources = []string{"*/*", "pods"}
		}, want: []errKey{e(invalid, w+"rules[0].resources")}},
		{name: "wildcard resource with a plain resource", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Resources = []string{"*", "pods"}
		}, want: []errKey{e(invalid, w+"rules[0].resources")}},
		{name: "wildcard resource with subresources", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Resources = []string{"*", "pods/status", "*/scale"}
		}},
		{name: "subresource covered by x/*", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Resources = []string{"pods/*", "pods/status"}
		}, want: []errKey{e(invalid, w+"rules[0].resources[1]")}},
		{name: "subresource covered by */y", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Resources = []string{"*/status", "pods/status"}
		}, want: []errKey{e(invalid, w+"rules[0].resources[1]")}},
		{name: "unknown scope", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Scope = ptr.To[admissionregistrationv1.ScopeType]("Global")
		}, want: []errKey{e(notSupported, w+"rules[0].scope")}},

		// clientConfig
		{name: "neither url nor service", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service = nil },
			want: []errKey{e(required, w+"clientConfig")}},
		{name: "both url and service", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("https://example.com") },
			want: []errKey{e(required, w+"clientConfig")}},
		{name: "http url", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://example.com/hook")}
		}, want: []errKey{e(invalid, w+"clientConfig.url")}},
		{name: "url with user info", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://user:pass@example.com/hook")}
		}, want: []errKey{e(invalid, w+"clientConfig.url")}},
		{name: "url with fragment", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/hook#frag")}
		}, want: []errKey{e(invalid, w+"clientConfig.url")}},
		{name: "url with query", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/hook?x=1")}
		}, want: []errKey{e(invalid, w+"clientConfig.url")}},
		{name: "url without host", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https:///hook")}
		}, want: []errKey{e(invalid, w+"clientConfig.url")}},
		// Upstream passes name and namespace swapped to the helper; the
		// paths follow upstream.
		{name: "service without namespace", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Namespace = "" },
			want: []errKey{e(required, w+"clientConfig.service.name")}},
		{name: "service without name", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Name = "" },
			want: []errKey{e(required, w+"clientConfig.service.namespace")}},
		{name: "service port 0", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Port = ptr.To[int32](0) },
			want: []errKey{e(invalid, w+"clientConfig.service.port")}},
		{name: "service port 65536", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Port = ptr.To[int32](65536) },
			want: []errKey{e(invalid, w+"clientConfig.service.port")}},
		{name: "relative service path", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Path = ptr.To("validate") },
			want: []errKey{e(invalid, w+"clientConfig.service.path")}},
		{name: "service path with empty segment", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Path = ptr.To("/a//b") },
			want: []errKey{e(invalid, w+"clientConfig.service.path")}},

		// policies, side effects, versions, timeout
		{name: "unknown failure policy", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.FailurePolicy = ptr.To[admissionregistrationv1.FailurePolicyType]("Maybe")
		}, want: []errKey{e(notSupported, w+"failurePolicy")}},
		{name: "unknown match policy", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchPolicy = ptr.To[admissionregistrationv1.MatchPolicyType]("Loose")
		}, want: []errKey{e(notSupported, w+"matchPolicy")}},
		{name: "no side effects", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil },
			want: []errKey{e(required, w+"sideEffects")}},
		{name: "side effects Some", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, want: []errKey{e(notSupported, w+"sideEffects")}},
		{name: "side effects NoneOnDryRun", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
		}},
		{name: "no review versions", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = nil },
			want: []errKey{e(required, w+"admissionReviewVersions")}},
		{name: "unknown review version only", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} },
			want: []errKey{e(invalid, w+"admissionReviewVersions")}},
		{name: "unknown review version besides v1", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2", "v1"} }},
		{name: "duplicate review version", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v1", "v1"} },
			want: []errKey{e(invalid, w+"admissionReviewVersions[1]")}},
		{name: "malformed review version", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v1", "V_1"} },
			want: []errKey{e(invalid, w+"admissionReviewVersions[1]")}},
		{name: "timeout 0", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](0) },
			want: []errKey{e(invalid, w+"timeoutSeconds")}},
		{name: "timeout 31", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](31) },
			want: []errKey{e(invalid, w+"timeoutSeconds")}},
		{name: "timeout 30", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](30) }},

		// selectors
		{name: "invalid namespace selector value", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "not valid"}}
		}, want: []errKey{e(invalid, w+"namespaceSelector.matchLabels")}},
		{name: "invalid object selector operator", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}
		}, want: []errKey{e(invalid, w+"objectSelector.matchExpressions[0].operator")}},

		// match conditions
		{name: "valid match conditions", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = conditions(
				`!(request.resource.group == "coordination.k8s.io" && request.resource.resource == "leases")`,
				`has(object.metadata.labels) && object.metadata.labels["env"] == "prod"`,
				`authorizer.group('').resource('pods').namespace(request.namespace).check('get').allowed()`)
		}},
		{name: "match condition that does not parse", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = conditions(`object.metadata.name ==`)
		}, want: []errKey{e(invalid, w+"matchConditions[0].expression")}},
		{name: "match condition that is not boolean", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = conditions(`request.name`)
		}, want: []errKey{e(invalid, w+"matchConditions[0].expression")}},
		{name: "match condition with an undeclared variable", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = conditions(`true`, `params.enabled == true`)
		}, want: []errKey{e(invalid, w+"matchConditions[1].expression")}},
		{name: "match condition without expression", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = conditions("  ")
		}, want: []errKey{e(required, w+"matchConditions[0].expression")}},
		{name: "match condition without name", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Expression: "true"}}
		}, want: []errKey{e(required, w+"matchConditions[0].name")}},
		{name: "match condition with unqualified name", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not a name", Expression: "true"}}
		}, want: []errKey{e(invalid, w+"matchConditions[0].name")}},
		{name: "duplicate match condition names", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "false"}}
		}, want: []errKey{e(duplicate, w+"matchConditions[1].name")}},
		{name: "65 match conditions", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			for i := 0; i < 65; i++ {
				h.MatchConditions = append(h.MatchConditions, admissionregistrationv1.MatchCondition{Name: fmt.Sprintf("c%d", i), Expression: "true"})
			}
		}, want: []errKey{e(tooMany, w+"matchConditions")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validatingWebhook("hook.example.com")
			tc.change(&h)
			expectErrs(t, ValidateValidatingWebhookConfiguration(validatingConfig(h)), tc.want...)
		})
	}

	t.Run("duplicate webhook names", func(t *testing.T) {
		c := validatingConfig(validatingWebhook("a.example.com"), validatingWebhook("b.example.com"), validatingWebhook("a.example.com"))
		expectErrs(t, ValidateValidatingWebhookConfiguration(c), e(duplicate, "webhooks[2].name"))
	})
	t.Run("no webhooks", func(t *testing.T) {
		expectErrs(t, ValidateValidatingWebhookConfiguration(validatingConfig()))
	})
	t.Run("metadata", func(t *testing.T) {
		c := validatingConfig()
		c.Name = "Not_A_Name"
		c.Namespace = "default"
		expectErrs(t, ValidateValidatingWebhookConfiguration(c), e(invalid, "metadata.name"), e(forbidden, "metadata.namespace"))
		c = validatingConfig()
		c.Name = "hooks.static.k8s.io"
		expectErrs(t, ValidateValidatingWebhookConfiguration(c), e(invalid, "metadata.name"))
	})
}

func TestValidateMutatingWebhookConfiguration(t *testing.T) {
	valid := func() admissionregistrationv1.MutatingWebhook {
		v := validatingWebhook("mutate.example.com")
		return admissionregistrationv1.MutatingWebhook{
			Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy, MatchPolicy: v.MatchPolicy,
			NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector, SideEffects: v.SideEffects,
			TimeoutSeconds: v.TimeoutSeconds, AdmissionReviewVersions: v.AdmissionReviewVersions,
			ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}
	}
	const w = "webhooks[0]."
	tests := []struct {
		name   string
		change func(h *admissionregistrationv1.MutatingWebhook)
		want   []errKey
	}{
		{name: "valid", change: func(*admissionregistrationv1.MutatingWebhook) {}},
		{name: "reinvoked if needed, with a match condition", change: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
			h.MatchConditions = conditions(`request.operation == "CREATE"`)
		}},
		{name: "unknown reinvocation policy", change: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ReinvocationPolicy = ptr.To[admissionregistrationv1.ReinvocationPolicyType]("Sometimes")
		}, want: []errKey{e(notSupported, w+"reinvocationPolicy")}},
		{name: "invalid match condition", change: func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchConditions = conditions(`object.metadata.name.startsWith(`)
		}, want: []errKey{e(invalid, w+"matchConditions[0].expression")}},
		{name: "several errors", change: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Name = "x"
			h.SideEffects = nil
			h.AdmissionReviewVersions = nil
			h.ClientConfig.Service = nil
		}, want: []errKey{e(invalid, w+"name"), e(required, w+"sideEffects"), e(required, w+"admissionReviewVersions"), e(required, w+"clientConfig")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := valid()
			tc.change(&h)
			c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "config"}, Webhooks: []admissionregistrationv1.MutatingWebhook{h}}
			expectErrs(t, ValidateMutatingWebhookConfiguration(c), tc.want...)
		})
	}
	dup := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{valid(), valid()}}
	expectErrs(t, ValidateMutatingWebhookConfiguration(dup), e(duplicate, "webhooks[1].name"))
}

// An update is let off the rules the stored object already broke, and does
// not compile unchanged match conditions again.
func TestValidateWebhookConfigurationUpdate(t *testing.T) {
	withMeta := func(c *admissionregistrationv1.ValidatingWebhookConfiguration) *admissionregistrationv1.ValidatingWebhookConfiguration {
		c.ResourceVersion = "1"
		return c
	}
	t.Run("invalid selector value kept", func(t *testing.T) {
		h := validatingWebhook("hook.example.com")
		// Only the values of match expressions get the leeway (upstream #99139).
		h.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"not valid"}}}}
		old := withMeta(validatingConfig(h))
		const path = "webhooks[0].objectSelector.matchExpressions[0].values[0]"
		expectErrs(t, ValidateValidatingWebhookConfiguration(old), e(invalid, path))
		upd := old.DeepCopy()
		upd.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(upd, old))
		// A valid object gets no such leeway.
		valid := withMeta(validatingConfig(validatingWebhook("hook.example.com")))
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(old, valid), e(invalid, path))
	})
	t.Run("duplicate names kept", func(t *testing.T) {
		old := withMeta(validatingConfig(validatingWebhook("a.example.com"), validatingWebhook("a.example.com")))
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(old.DeepCopy(), old))
		unique := withMeta(validatingConfig(validatingWebhook("a.example.com"), validatingWebhook("b.example.com")))
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(old, unique), e(duplicate, "webhooks[1].name"))
	})
	t.Run("unknown review versions kept", func(t *testing.T) {
		h := validatingWebhook("hook.example.com")
		h.AdmissionReviewVersions = []string{"v2"}
		old := withMeta(validatingConfig(h))
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(old.DeepCopy(), old))
	})
	t.Run("side effects Some kept", func(t *testing.T) {
		h := validatingWebhook("hook.example.com")
		h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		old := withMeta(validatingConfig(h))
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(old.DeepCopy(), old))
		h.SideEffects = ptr.To[admissionregistrationv1.SideEffectClass]("Lots")
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(withMeta(validatingConfig(h)), old), e(notSupported, "webhooks[0].sideEffects"))
	})
	t.Run("unchanged match conditions are not compiled", func(t *testing.T) {
		h := validatingWebhook("hook.example.com")
		h.MatchConditions = conditions(`no_such_variable == 1`)
		old := withMeta(validatingConfig(h))
		upd := old.DeepCopy()
		upd.Webhooks[0].TimeoutSeconds = ptr.To[int32](3)
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(upd, old))
		upd.Webhooks[0].MatchConditions = append(upd.Webhooks[0].MatchConditions, admissionregistrationv1.MatchCondition{Name: "more", Expression: "true"})
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(upd, old), e(invalid, "webhooks[0].matchConditions[0].expression"))
	})
	t.Run("stored expressions compile in the stored environment", func(t *testing.T) {
		// includes() on lists is in the CEL library of Kubernetes 1.37, newer
		// than the 1.36 compatibility version new expressions are held to.
		const newer = `[1, 2].includes(1)`
		h := validatingWebhook("hook.example.com")
		h.MatchConditions = conditions(newer)
		old := withMeta(validatingConfig(h))
		expectErrs(t, ValidateValidatingWebhookConfiguration(old), e(invalid, "webhooks[0].matchConditions[0].expression"))
		upd := old.DeepCopy()
		upd.Webhooks[0].MatchConditions = append(upd.Webhooks[0].MatchConditions, admissionregistrationv1.MatchCondition{Name: "more", Expression: "true"})
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(upd, old))
	})
	t.Run("reserved name kept", func(t *testing.T) {
		old := withMeta(validatingConfig())
		old.Name = "hooks.static.k8s.io"
		expectErrs(t, ValidateValidatingWebhookConfigurationUpdate(old.DeepCopy(), old))
	})
	t.Run("mutating", func(t *testing.T) {
		v := validatingWebhook("hook.example.com")
		old := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m", ResourceVersion: "1"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: v.Name, ClientConfig: v.ClientConfig, SideEffects: v.SideEffects,
				AdmissionReviewVersions: v.AdmissionReviewVersions, MatchConditions: conditions(`true`)}}}
		upd := old.DeepCopy()
		expectErrs(t, ValidateMutatingWebhookConfigurationUpdate(upd, old))
		upd.Webhooks[0].MatchConditions = conditions(`1 + `)
		upd.Webhooks[0].TimeoutSeconds = ptr.To[int32](60)
		expectErrs(t, ValidateMutatingWebhookConfigurationUpdate(upd, old),
			e(invalid, "webhooks[0].matchConditions[0].expression"), e(invalid, "webhooks[0].timeoutSeconds"))
	})
}
