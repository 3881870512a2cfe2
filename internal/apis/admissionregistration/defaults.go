package admissionregistration

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// RegisterDefaults adds the defaulters of the group's kinds and lists to s.
func RegisterDefaults(s *runtime.Scheme) error {
	add := func(obj runtime.Object, f func(runtime.Object)) {
		s.AddTypeDefaultingFunc(obj, func(o interface{}) { f(o.(runtime.Object)) })
	}
	add(&admissionregistrationv1.ValidatingWebhookConfiguration{}, func(o runtime.Object) {
		DefaultValidatingWebhookConfiguration(o.(*admissionregistrationv1.ValidatingWebhookConfiguration))
	})
	add(&admissionregistrationv1.ValidatingWebhookConfigurationList{}, func(o runtime.Object) {
		l := o.(*admissionregistrationv1.ValidatingWebhookConfigurationList)
		for i := range l.Items {
			DefaultValidatingWebhookConfiguration(&l.Items[i])
		}
	})
	add(&admissionregistrationv1.MutatingWebhookConfiguration{}, func(o runtime.Object) {
		DefaultMutatingWebhookConfiguration(o.(*admissionregistrationv1.MutatingWebhookConfiguration))
	})
	add(&admissionregistrationv1.MutatingWebhookConfigurationList{}, func(o runtime.Object) {
		l := o.(*admissionregistrationv1.MutatingWebhookConfigurationList)
		for i := range l.Items {
			DefaultMutatingWebhookConfiguration(&l.Items[i])
		}
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicy{}, func(o runtime.Object) {
		DefaultValidatingAdmissionPolicy(o.(*admissionregistrationv1.ValidatingAdmissionPolicy))
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicyList{}, func(o runtime.Object) {
		l := o.(*admissionregistrationv1.ValidatingAdmissionPolicyList)
		for i := range l.Items {
			DefaultValidatingAdmissionPolicy(&l.Items[i])
		}
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, func(o runtime.Object) {
		b := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		defaultMatchResources(b.Spec.MatchResources)
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, func(o runtime.Object) {
		l := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList)
		for i := range l.Items {
			defaultMatchResources(l.Items[i].Spec.MatchResources)
		}
	})
	add(&admissionregistrationv1.MutatingAdmissionPolicy{}, func(o runtime.Object) {
		DefaultMutatingAdmissionPolicy(o.(*admissionregistrationv1.MutatingAdmissionPolicy))
	})
	add(&admissionregistrationv1.MutatingAdmissionPolicyList{}, func(o runtime.Object) {
		l := o.(*admissionregistrationv1.MutatingAdmissionPolicyList)
		for i := range l.Items {
			DefaultMutatingAdmissionPolicy(&l.Items[i])
		}
	})
	add(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, func(o runtime.Object) {
		b := o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
		defaultMatchResources(b.Spec.MatchResources)
	})
	add(&admissionregistrationv1.MutatingAdmissionPolicyBindingList{}, func(o runtime.Object) {
		l := o.(*admissionregistrationv1.MutatingAdmissionPolicyBindingList)
		for i := range l.Items {
			defaultMatchResources(l.Items[i].Spec.MatchResources)
		}
	})
	return nil
}

// DefaultValidatingWebhookConfiguration defaults every webhook of c.
func DefaultValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds)
		defaultRules(w.Rules)
		defaultClientConfig(&w.ClientConfig)
	}
}

// DefaultMutatingWebhookConfiguration defaults every webhook of c.
func DefaultMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds)
		if w.ReinvocationPolicy == nil {
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
		defaultRules(w.Rules)
		defaultClientConfig(&w.ClientConfig)
	}
}

func defaultWebhook(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	ns, obj **metav1.LabelSelector, timeout **int32) {
	if *failure == nil {
		*failure = ptr.To(admissionregistrationv1.Fail)
	}
	if *match == nil {
		*match = ptr.To(admissionregistrationv1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr.To[int32](10)
	}
}

func defaultRules(rules []admissionregistrationv1.RuleWithOperations) {
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
}

func defaultNamedRules(rules []admissionregistrationv1.NamedRuleWithOperations) {
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
}

func defaultClientConfig(c *admissionregistrationv1.WebhookClientConfig) {
	if c.Service != nil && c.Service.Port == nil {
		c.Service.Port = ptr.To[int32](443)
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	defaultNamedRules(m.ResourceRules)
	defaultNamedRules(m.ExcludeResourceRules)
}

// DefaultValidatingAdmissionPolicy defaults p: fail closed, match resources.
func DefaultValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

// DefaultMutatingAdmissionPolicy defaults p: fail closed, match resources.
func DefaultMutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}
