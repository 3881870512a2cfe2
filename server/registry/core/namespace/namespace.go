// Package namespace serves namespaces: deletion in two steps (the first
// delete marks the namespace Terminating; the object goes away once the
// namespace controller has emptied it and cleared spec.finalizers through
// the finalize subresource), and namespaces/finalize itself.
package namespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"

	"github.com/k1s/k1s/internal/apis/core"
	"github.com/k1s/k1s/server/registry"
)

// PrepareForCreate sets what a new namespace starts with: phase Active and
// the "kubernetes" finalizer the namespace controller removes.
func PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status.Phase = corev1.NamespaceActive
	core.NamespaceFinalizers(ns)
}

// PrepareForUpdate keeps spec.finalizers: only finalize changes them.
func PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Namespace).Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
}

// KeepDuringUpdate keeps a deleted namespace until its spec.finalizers
// (the namespace controller's) are gone, not just metadata.finalizers.
func KeepDuringUpdate(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return !ok || len(ns.Spec.Finalizers) > 0
}

// REST is the namespaces storage.
type REST struct {
	*registry.Store
}

// Delete marks the namespace Terminating on the first call and deletes it
// once spec.finalizers is empty.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &ns.UID
	} else if *options.Preconditions.UID != ns.UID {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, ns.UID))
	}
	if rv := options.Preconditions.ResourceVersion; rv != nil && *rv != ns.ResourceVersion {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, ns.ResourceVersion))
	}

	if ns.DeletionTimestamp.IsZero() {
		key, err := r.KeyFunc(ctx, name)
		if err != nil {
			return nil, false, err
		}
		out := r.NewFunc()
		pre := storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
		err = r.Storage.GuaranteedUpdate(ctx, key, out, false, &pre, storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
			cur := existing.(*corev1.Namespace)
			if err := deleteValidation(ctx, cur); err != nil {
				return nil, err
			}
			if cur.DeletionTimestamp.IsZero() {
				now := metav1.Now()
				cur.DeletionTimestamp = &now
			}
			cur.Status.Phase = corev1.NamespaceTerminating
			cur.Finalizers = propagationFinalizers(cur.Finalizers, options)
			return cur, nil
		}), len(options.DryRun) > 0, nil)
		if err != nil {
			err = storageerr.InterpretGetError(err, corev1.Resource("namespaces"), name)
			err = storageerr.InterpretUpdateError(err, corev1.Resource("namespaces"), name)
			if _, ok := err.(*apierrors.StatusError); !ok {
				err = apierrors.NewInternalError(err)
			}
			return nil, false, err
		}
		return out, false, nil
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// propagationFinalizers sets the orphan and foreground-deletion finalizers
// the delete options ask for, keeping others.
func propagationFinalizers(current []string, options *metav1.DeleteOptions) []string {
	has := map[string]bool{}
	for _, f := range current {
		has[f] = true
	}
	orphan := has[metav1.FinalizerOrphanDependents]
	foreground := has[metav1.FinalizerDeleteDependents]
	switch {
	case options.OrphanDependents != nil:
		// The legacy field: false asks for the dependents to go first.
		orphan = *options.OrphanDependents
		foreground = !*options.OrphanDependents
	case options.PropagationPolicy != nil:
		orphan = *options.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *options.PropagationPolicy == metav1.DeletePropagationForeground
	}
	var out []string
	for _, f := range current {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	return out
}

// FinalizeREST serves namespaces/finalize: it changes only spec.finalizers.
type FinalizeREST struct {
	store *genericregistry.Store
}

// NewFinalizeREST wraps a copy of the namespaces store.
func NewFinalizeREST(store *genericregistry.Store) *FinalizeREST {
	s := *store
	s.UpdateStrategy = finalizeStrategy{RESTUpdateStrategy: store.UpdateStrategy}
	s.ResetFieldsStrategy = nil
	return &FinalizeREST{store: &s}
}

// New returns an empty Namespace.
func (r *FinalizeREST) New() runtime.Object { return &corev1.Namespace{} }

// Destroy does nothing: the main store owns the storage.
func (r *FinalizeREST) Destroy() {}

// Update changes the namespace's spec.finalizers.
func (r *FinalizeREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

type finalizeStrategy struct {
	rest.RESTUpdateStrategy
}

func (finalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	finalizers := ns.Spec.Finalizers
	*ns = *oldNs.DeepCopy()
	ns.Spec.Finalizers = finalizers
}

func (finalizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return core.ValidateNamespaceFinalizeUpdate(obj.(*corev1.Namespace), old.(*corev1.Namespace))
}
