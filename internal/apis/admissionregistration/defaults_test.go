package admissionregistration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestWebhookDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name:         "a.example.com",
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n"}},
	}}}
	s.Default(m)
	want := admissionregistrationv1.MutatingWebhook{
		Name:               "a.example.com",
		Rules:              []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{Scope: ptr.To(admissionregistrationv1.AllScopes)}}},
		ClientConfig:       admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n", Port: ptr.To[int32](443)}},
		FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:        ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:  &metav1.LabelSelector{},
		ObjectSelector:     &metav1.LabelSelector{},
		TimeoutSeconds:     ptr.To[int32](10),
		ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
	if diff := cmp.Diff(want, m.Webhooks[0]); diff != "" {
		t.Errorf("mutating webhook (-want +got):\n%s", diff)
	}
	// What the user set stays.
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{
		Name: "b.example.com", FailurePolicy: ptr.To(admissionregistrationv1.Ignore), TimeoutSeconds: ptr.To[int32](3),
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}},
	}}}
	s.Default(v)
	w := v.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.TimeoutSeconds != 3 || w.ObjectSelector.MatchLabels["x"] != "y" || w.NamespaceSelector == nil {
		t.Errorf("validating webhook defaults: %+v", w)
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}}},
	}}
	s.Default(p)
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || p.Spec.MatchConstraints.ObjectSelector == nil ||
		p.Spec.MatchConstraints.NamespaceSelector == nil || *p.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent ||
		*p.Spec.MatchConstraints.ResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("policy defaults: %+v", p.Spec)
	}
}
