package integration

import (
	"context"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

func TestFieldSelectors(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	const ns = "default"
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	mk := func(name, node string, phase corev1.PodPhase) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: podSpec()}
		p.Spec.NodeName = node
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase != corev1.PodPending {
			p.Status.Phase = phase
			if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("a1", "node-a", corev1.PodRunning)
	mk("a2", "node-a", corev1.PodSucceeded)
	mk("b1", "node-b", corev1.PodRunning)
	mk("unbound", "", corev1.PodPending)

	podNames := func(selector string) []string {
		t.Helper()
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			t.Fatalf("list pods %q: %v", selector, err)
		}
		var out []string
		for _, p := range list.Items {
			out = append(out, p.Name)
		}
		sort.Strings(out)
		return out
	}
	for selector, want := range map[string][]string{
		"spec.nodeName=node-a":                         {"a1", "a2"},
		"spec.nodeName=":                               {"unbound"},
		"status.phase=Running":                         {"a1", "b1"},
		"spec.nodeName=node-a,status.phase!=Succeeded": {"a1"},
		"metadata.name=b1":                             {"b1"},
	} {
		if got := podNames(selector); !equal(got, want) {
			t.Errorf("pods with %q: %v, want %v", selector, got, want)
		}
	}
	if _, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: want 400, got %v", err)
	}

	for _, e := range []struct{ name, obj string }{{"e1", "a1"}, {"e2", "b1"}} {
		if _, err := c.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: e.name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: e.obj, Namespace: ns},
			Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "test"},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=a1,involvedObject.kind=Pod"})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Name != "e1" {
		t.Fatalf("events by involvedObject: %v %v", evs, err)
	}
	// The same events through events.k8s.io/v1, selected by regarding.
	v1evs, err := c.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=b1"})
	if err != nil || len(v1evs.Items) != 1 || v1evs.Items[0].Name != "e2" || v1evs.Items[0].Note != "m" {
		t.Fatalf("events.k8s.io events by regarding: %+v %v", v1evs, err)
	}

	if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("c"), corev1.TLSPrivateKeyKey: []byte("k")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"})
	if err != nil || len(secrets.Items) != 1 || secrets.Items[0].Name != "tls" {
		t.Fatalf("secrets by type: %v %v", secrets, err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
