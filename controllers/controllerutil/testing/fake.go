// Package testing holds fakes of controllerutil's interfaces for the unit
// tests of controllers.
package testing

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// PatchCall is one PatchPod call.
type PatchCall struct {
	Namespace, Name string
	Data            []byte
}

// FakePodControl records calls instead of acting. Err, if set, is returned
// by every call (after recording it); CreateLimit, if positive, makes
// creations beyond it fail with Err. Safe for concurrent use.
type FakePodControl struct {
	mu sync.Mutex
	// Templates are the templates of the CreatePods calls.
	Templates []corev1.PodTemplateSpec
	// GenerateNames are the generateNames of those calls.
	GenerateNames []string
	// ControllerRefs are their controller references.
	ControllerRefs []metav1.OwnerReference
	// DeletePodNames are the names of the deleted pods.
	DeletePodNames []string
	// Patches are the PatchPod calls.
	Patches []PatchCall
	// Err is returned by every call when set.
	Err error
	// CreateLimit fails creations after this many when positive.
	CreateLimit int
	// CreateCallCount counts CreatePods calls.
	CreateCallCount int
}

var _ controllerutil.PodControl = (*FakePodControl)(nil)

// CreatePods records the template.
func (f *FakePodControl) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference) error {
	return f.CreatePodsWithGenerateName(ctx, namespace, template, owner, ref, "")
}

// CreatePodsWithGenerateName records the template and generateName.
func (f *FakePodControl) CreatePodsWithGenerateName(_ context.Context, _ string, template *corev1.PodTemplateSpec, _ runtime.Object, ref *metav1.OwnerReference, generateName string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.CreateCallCount++
	if f.CreateLimit > 0 && f.CreateCallCount > f.CreateLimit {
		return f.Err
	}
	f.Templates = append(f.Templates, *template.DeepCopy())
	f.GenerateNames = append(f.GenerateNames, generateName)
	if ref != nil {
		f.ControllerRefs = append(f.ControllerRefs, *ref)
	}
	if f.CreateLimit > 0 {
		return nil
	}
	return f.Err
}

// DeletePod records the name.
func (f *FakePodControl) DeletePod(_ context.Context, _ string, name string, _ runtime.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.DeletePodNames = append(f.DeletePodNames, name)
	return f.Err
}

// PatchPod records the patch.
func (f *FakePodControl) PatchPod(_ context.Context, namespace, name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Patches = append(f.Patches, PatchCall{Namespace: namespace, Name: name, Data: append([]byte(nil), data...)})
	return f.Err
}

// Clear forgets the recorded calls.
func (f *FakePodControl) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Templates, f.GenerateNames, f.ControllerRefs, f.DeletePodNames, f.Patches = nil, nil, nil, nil, nil
	f.CreateCallCount = 0
}
