package controllerutil

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func testRS(name string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "rs-uid"}}
}

func testTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"a": "b"},
			Finalizers:  []string{"example.com/f"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestCreatePods(t *testing.T) {
	long := strings.Repeat("x", 253)
	tests := []struct {
		name         string
		owner        string
		template     func() *corev1.PodTemplateSpec
		ref          *metav1.OwnerReference
		generateName string
		createErr    error
		wantErr      bool
		wantEvents   []string
		wantGenName  string
	}{
		{
			name:        "created",
			owner:       "web",
			template:    testTemplate,
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: "},
			wantGenName: "web-",
		},
		{
			name:         "own generateName",
			owner:        "web",
			template:     testTemplate,
			generateName: "web-0-",
			wantEvents:   []string{"Normal SuccessfulCreate Created pod: "},
			wantGenName:  "web-0-",
		},
		{
			name:        "longest name still gets the dash",
			owner:       long,
			template:    testTemplate,
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: "},
			wantGenName: long + "-",
		},
		{
			name:       "create fails",
			owner:      "web",
			template:   testTemplate,
			createErr:  apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("quota")),
			wantErr:    true,
			wantEvents: []string{"Warning FailedCreate Error creating: "},
		},
		{
			name:     "namespace terminating: no event",
			owner:    "web",
			template: testTemplate,
			createErr: &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
			}},
			wantErr: true,
		},
		{
			name:  "no labels",
			owner: "web",
			template: func() *corev1.PodTemplateSpec {
				t := testTemplate()
				t.Labels = nil
				return t
			},
			wantErr: true,
		},
		{
			name:     "not a controller ref",
			owner:    "web",
			template: testTemplate,
			ref:      &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid"},
			wantErr:  true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if tc.createErr != nil {
					return true, nil, tc.createErr
				}
				pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
				pod.Name = pod.GenerateName + "abcde"
				return true, pod, nil
			})
			rec := record.NewFakeRecorder(10)
			pc := NewPodControl(client, rec)
			owner := testRS(tc.owner)
			ref := tc.ref
			if ref == nil {
				ref = NewControllerRef(owner, rsKind)
			}
			err := pc.CreatePodsWithGenerateName(context.Background(), "ns", tc.template(), owner, ref, tc.generateName)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			events := drain(rec)
			if len(events) != len(tc.wantEvents) {
				t.Fatalf("events = %q, want prefixes %q", events, tc.wantEvents)
			}
			for i := range events {
				if !strings.HasPrefix(events[i], tc.wantEvents[i]) {
					t.Errorf("event %q, want prefix %q", events[i], tc.wantEvents[i])
				}
			}
			if tc.wantErr {
				return
			}
			var created *corev1.Pod
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" {
					created = a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
				}
			}
			if created == nil {
				t.Fatal("no create action")
			}
			if ns := client.Actions()[0].GetNamespace(); ns != "ns" {
				t.Errorf("created in namespace %q", ns)
			}
			if created.GenerateName != tc.wantGenName {
				t.Errorf("generateName = %q, want %q", created.GenerateName, tc.wantGenName)
			}
			if created.Labels["app"] != "web" || created.Annotations["a"] != "b" || len(created.Finalizers) != 1 || created.Finalizers[0] != "example.com/f" {
				t.Errorf("metadata not copied: %+v", created.ObjectMeta)
			}
			if len(created.OwnerReferences) != 1 || !reflect.DeepEqual(created.OwnerReferences[0], *ref) {
				t.Errorf("ownerReferences = %+v, want [%+v]", created.OwnerReferences, *ref)
			}
			if created.Spec.Containers[0].Image != "nginx" {
				t.Errorf("spec not copied: %+v", created.Spec)
			}
		})
	}
}

func TestGetPodFromTemplateDoesNotAlias(t *testing.T) {
	tmpl := testTemplate()
	pod, err := GetPodFromTemplate(tmpl, testRS("web"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels["x"] = "y"
	pod.Annotations["x"] = "y"
	pod.Spec.Containers[0].Image = "changed"
	pod.Finalizers[0] = "changed"
	if _, ok := tmpl.Labels["x"]; ok || tmpl.Annotations["x"] != "" || tmpl.Spec.Containers[0].Image != "nginx" || tmpl.Finalizers[0] != "example.com/f" {
		t.Errorf("template changed through the pod: %+v", tmpl)
	}
	if len(pod.OwnerReferences) != 0 {
		t.Errorf("owner references without a ref: %+v", pod.OwnerReferences)
	}
}

func TestDeletePod(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantErr    func(error) bool
		wantEvents []string
	}{
		{name: "deleted", wantErr: func(err error) bool { return err == nil }, wantEvents: []string{"Normal SuccessfulDelete Deleted pod: p1"}},
		{name: "already gone", err: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p1"), wantErr: apierrors.IsNotFound},
		{
			name:       "fails",
			err:        apierrors.NewInternalError(errors.New("boom")),
			wantErr:    apierrors.IsInternalError,
			wantEvents: []string{"Warning FailedDelete Error deleting: "},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}})
			if tc.err != nil {
				client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			}
			rec := record.NewFakeRecorder(10)
			err := NewPodControl(client, rec).DeletePod(context.Background(), "ns", "p1", testRS("web"))
			if !tc.wantErr(err) {
				t.Fatalf("unexpected error %v", err)
			}
			events := drain(rec)
			if len(events) != len(tc.wantEvents) {
				t.Fatalf("events = %q, want %q", events, tc.wantEvents)
			}
			for i := range events {
				if !strings.HasPrefix(events[i], tc.wantEvents[i]) {
					t.Errorf("event %q, want prefix %q", events[i], tc.wantEvents[i])
				}
			}
		})
	}
}

func TestValidateControllerRef(t *testing.T) {
	full := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "u", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	tests := []struct {
		name   string
		mutate func(*metav1.OwnerReference) *metav1.OwnerReference
		want   string
	}{
		{name: "valid", mutate: func(r *metav1.OwnerReference) *metav1.OwnerReference { return r }},
		{name: "nil", mutate: func(*metav1.OwnerReference) *metav1.OwnerReference { return nil }, want: "nil"},
		{name: "apiVersion", mutate: func(r *metav1.OwnerReference) *metav1.OwnerReference { r.APIVersion = ""; return r }, want: "APIVersion"},
		{name: "kind", mutate: func(r *metav1.OwnerReference) *metav1.OwnerReference { r.Kind = ""; return r }, want: "Kind"},
		{name: "controller", mutate: func(r *metav1.OwnerReference) *metav1.OwnerReference { r.Controller = ptr.To(false); return r }, want: "Controller"},
		{name: "block", mutate: func(r *metav1.OwnerReference) *metav1.OwnerReference { r.BlockOwnerDeletion = nil; return r }, want: "BlockOwnerDeletion"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := full
			err := ValidateControllerRef(tc.mutate(&r))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}
