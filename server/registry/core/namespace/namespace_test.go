package namespace

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	orphan     = metav1.FinalizerOrphanDependents
	foreground = metav1.FinalizerDeleteDependents
)

func TestPropagationFinalizers(t *testing.T) {
	tests := []struct {
		name    string
		current []string
		options metav1.DeleteOptions
		want    []string
	}{
		{"no policy, no finalizers", nil, metav1.DeleteOptions{}, nil},
		{"no policy keeps orphan", []string{orphan}, metav1.DeleteOptions{}, []string{orphan}},
		{"no policy keeps foreground", []string{foreground}, metav1.DeleteOptions{}, []string{foreground}},
		{"no policy keeps others", []string{"example.com/a"}, metav1.DeleteOptions{}, []string{"example.com/a"}},
		{"orphan", nil, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}, []string{orphan}},
		{"orphan replaces foreground", []string{foreground, "example.com/a"},
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}, []string{"example.com/a", orphan}},
		{"foreground", []string{"example.com/a"}, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)},
			[]string{"example.com/a", foreground}},
		{"foreground replaces orphan", []string{orphan}, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}, []string{foreground}},
		{"background removes both", []string{orphan, "example.com/a", foreground},
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}, []string{"example.com/a"}},
		{"already present is not duplicated", []string{orphan}, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}, []string{orphan}},
		{"legacy orphanDependents true", []string{foreground}, metav1.DeleteOptions{OrphanDependents: ptr.To(true)}, []string{orphan}},
		// As upstream's namespace storage: orphanDependents=false asks for
		// the dependents to be deleted first.
		{"legacy orphanDependents false", []string{orphan}, metav1.DeleteOptions{OrphanDependents: ptr.To(false)}, []string{foreground}},
		{"legacy field wins over the policy", nil,
			metav1.DeleteOptions{OrphanDependents: ptr.To(true), PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}, []string{orphan}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := propagationFinalizers(tt.current, &tt.options)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name           string
		finalizers     []corev1.FinalizerName
		wantFinalizers []corev1.FinalizerName
	}{
		{"none", nil, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		{"others kept, kubernetes appended", []corev1.FinalizerName{"example.com/x"}, []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}},
		{"already there", []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/x"}, []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: tt.finalizers}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
			PrepareForCreate(context.Background(), ns)
			if ns.Status.Phase != corev1.NamespaceActive {
				t.Errorf("phase = %q, want Active", ns.Status.Phase)
			}
			if diff := cmp.Diff(tt.wantFinalizers, ns.Spec.Finalizers); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrepareForUpdateKeepsFinalizers(t *testing.T) {
	old := &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}
	PrepareForUpdate(context.Background(), ns, old)
	if diff := cmp.Diff(old.Spec.Finalizers, ns.Spec.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	if ns.Labels["a"] != "b" {
		t.Errorf("labels = %v, want the update's", ns.Labels)
	}
}

func TestFinalizeStrategyChangesOnlyFinalizers(t *testing.T) {
	old := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "1"}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "2"}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	finalizeStrategy{}.PrepareForUpdate(context.Background(), ns, old)
	want := old.DeepCopy()
	want.Spec.Finalizers = nil
	if diff := cmp.Diff(want, ns); diff != "" {
		t.Errorf("after finalize (-want +got):\n%s", diff)
	}
}
