package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestAdmissionWebhooks registers a mutating and a validating webhook (an
// HTTPS server of the test's, by URL) scoped by a namespace label, and
// checks that objects created in that namespace are mutated and denied as
// the webhooks answer, objects the validating webhook's match condition
// excludes and objects elsewhere are left alone, and configurations whose
// match conditions do not compile are refused.
func TestAdmissionWebhooks(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	client := s.Client(t)

	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		var cm corev1.ConfigMap
		_ = json.Unmarshal(review.Request.Object.Raw, &cm)
		switch r.URL.Path {
		case "/mutate":
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType = &pt
			resp.Patch = []byte(`[{"op":"add","path":"/data/mutated","value":"yes"}]`)
		case "/validate":
			if cm.Data["deny"] == "yes" {
				resp.Allowed = false
				resp.Result = &metav1.Status{Message: "denied by the test webhook", Code: http.StatusForbidden}
			}
		}
		review.Response = resp
		review.Request = nil
		out, _ := json.Marshal(review)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	for _, ns := range []string{"hooked", "plain"} {
		labels := map[string]string{}
		if ns == "hooked" {
			labels["webhook-test"] = "true"
		}
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": "true"}}
	none := admissionregistrationv1.SideEffectClassNone

	// Match conditions are compiled as CEL on create: one that does not
	// compile is a 422 naming its expression (upstream's conformance test
	// "should reject ... webhook configurations with invalid match conditions").
	broken := []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: "object.metadata.name =="}}
	_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "broken.test.k1s.io", Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: caPEM}, MatchConditions: broken,
		}},
	}, metav1.CreateOptions{})
	requireInvalid(t, err, "webhooks[0].matchConditions[0].expression")
	_, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "broken.test.k1s.io", Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig:    admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/mutate"), CABundle: caPEM},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-bool", Expression: "object.metadata.name"}},
		}},
	}, metav1.CreateOptions{})
	requireInvalid(t, err, "webhooks[0].matchConditions[0].expression")

	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "mutate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.test.k1s.io", Rules: rules, NamespaceSelector: selector, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/mutate"), CABundle: caPEM},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "validate"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.test.k1s.io", Rules: rules, NamespaceSelector: selector, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: caPEM},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "not-exempt", Expression: `object.metadata.name != "exempt"`}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The configurations take effect once the apiserver's informers see them.
	var got *corev1.ConfigMap
	i := 0
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		i++
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + string(rune('a'+i%26)) + time.Now().Format("150405.000000")[7:]}, Data: map[string]string{"x": "1"}}
		cm.Name = strings.ReplaceAll(cm.Name, ".", "")
		var err error
		got, err = client.CoreV1().ConfigMaps("hooked").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return got.Data["mutated"] == "yes", nil
	})
	if err != nil {
		t.Fatalf("the mutating webhook never took effect (calls %d, last %+v): %v", calls.Load(), got, err)
	}
	_, err = client.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied"}, Data: map[string]string{"deny": "yes"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "denied by the test webhook") {
		t.Fatalf("create to be denied: %v", err)
	}
	exempt, err := client.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "exempt"}, Data: map[string]string{"deny": "yes"}}, metav1.CreateOptions{})
	if err != nil || exempt.Data["mutated"] != "yes" {
		t.Fatalf("excluded by the validating webhook's match condition, mutated still: %v %+v", err, exempt)
	}
	plain, err := client.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"deny": "yes"}}, metav1.CreateOptions{})
	if err != nil || plain.Data["mutated"] != "" {
		t.Fatalf("outside the selected namespace: %v %+v", err, plain)
	}
}
