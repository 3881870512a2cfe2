package podsecurity

import (
	"context"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

type warningRecorder struct{ warnings []string }

func (r *warningRecorder) AddWarning(_, text string) { r.warnings = append(r.warnings, text) }

func hostPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{HostPID: true, Containers: []corev1.Container{{
			Name: "c", Image: "i", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
}

func TestValidate(t *testing.T) {
	podGVR := corev1.SchemeGroupVersion.WithResource("pods")
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: hostPod().Spec}}}
	tests := []struct {
		name      string
		config    string
		labels    map[string]string
		user      string
		obj       runtime.Object
		resource  schema.GroupVersionResource
		kind      schema.GroupVersionKind
		forbidden string // substring of the refusal; "" admits
		warning   string // substring of a warning; "" wants none
	}{
		{name: "no labels, upstream defaults: privileged", obj: hostPod(), resource: podGVR, kind: podGVK},
		{name: "enforce baseline", labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"},
			obj: hostPod(), resource: podGVR, kind: podGVK, forbidden: `violates PodSecurity "baseline:latest": host namespaces (hostPID=true), privileged`},
		{name: "enforce pinned to a version", labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.25"},
			obj: hostPod(), resource: podGVR, kind: podGVK, forbidden: `violates PodSecurity "baseline:v1.25"`},
		{name: "warn restricted", labels: map[string]string{"pod-security.kubernetes.io/warn": "restricted"},
			obj: hostPod(), resource: podGVR, kind: podGVK, warning: `would violate PodSecurity "restricted:latest"`},
		{name: "a deployment warns, never refused", labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"},
			obj: deployment, resource: appsv1.SchemeGroupVersion.WithResource("deployments"), kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
			warning: `would violate PodSecurity "baseline:latest"`},
		{name: "config default enforce", config: `apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: restricted
`, obj: hostPod(), resource: podGVR, kind: podGVK, forbidden: `violates PodSecurity "restricted:latest"`},
		{name: "exempt user", config: `apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: restricted
exemptions:
  usernames: [admin]
`, user: "admin", obj: hostPod(), resource: podGVR, kind: podGVK},
		{name: "other resources are not evaluated", labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			obj:      &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}},
			resource: corev1.SchemeGroupVersion.WithResource("configmaps"), kind: corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: tt.labels}})
			var config io.Reader
			if tt.config != "" {
				config = strings.NewReader(tt.config)
			}
			p, err := New(config, client, informers.NewSharedInformerFactory(client, 0))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			name := tt.user
			if name == "" {
				name = "someone"
			}
			attrs := admission.NewAttributesRecord(tt.obj, nil, tt.kind, "ns", "x", tt.resource, "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: name})
			rec := &warningRecorder{}
			ctx := warning.WithWarningRecorder(context.Background(), rec)
			err = p.Validate(ctx, attrs, nil)
			switch {
			case tt.forbidden == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.forbidden != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.forbidden)):
				t.Fatalf("got %v, want Forbidden with %q", err, tt.forbidden)
			}
			got := strings.Join(rec.warnings, "\n")
			if (tt.warning == "") != (got == "") || !strings.Contains(got, tt.warning) {
				t.Errorf("warnings %q, want %q", got, tt.warning)
			}
		})
	}
}

func TestNewRefusesABadConfiguration(t *testing.T) {
	client := fake.NewSimpleClientset()
	_, err := New(strings.NewReader("apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\ndefaults:\n  enforce: strict\n"), client, informers.NewSharedInformerFactory(client, 0))
	if err == nil || !strings.Contains(err.Error(), "strict") {
		t.Fatalf("New: %v, want the bad level named", err)
	}
}
