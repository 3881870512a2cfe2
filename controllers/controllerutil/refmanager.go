package controllerutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// PatchFunc applies a strategic merge patch to the object name in
// namespace.
type PatchFunc func(ctx context.Context, namespace, name string, data []byte) error

// ReplicaSetPatcher patches ReplicaSets through client.
func ReplicaSetPatcher(client kubernetes.Interface) PatchFunc {
	return func(ctx context.Context, namespace, name string, data []byte) error {
		_, err := client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	}
}

// ControllerRevisionPatcher patches ControllerRevisions through client.
func ControllerRevisionPatcher(client kubernetes.Interface) PatchFunc {
	return func(ctx context.Context, namespace, name string, data []byte) error {
		_, err := client.AppsV1().ControllerRevisions(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	}
}

// RefManager decides, for one owner and one sync, which objects the owner
// controls: it adopts orphans that match and releases owned objects that
// no longer match. Use a new RefManager per sync; it is safe for
// concurrent use.
type RefManager struct {
	// Owner is the controlling object.
	Owner metav1.Object
	// OwnerKind is its group, version and kind, for owner references.
	OwnerKind schema.GroupVersionKind
	// Selector picks the owner's objects by label.
	Selector labels.Selector

	canAdopt     func(ctx context.Context) error
	canAdoptOnce sync.Once
	canAdoptErr  error
}

// NewRefManager returns a RefManager. canAdopt (may be nil) runs at most
// once, before the first adoption, and vetoes all adoptions when it fails;
// pass RecheckDeletionTimestamp of a live read of the owner.
func NewRefManager(owner metav1.Object, ownerKind schema.GroupVersionKind, selector labels.Selector, canAdopt func(ctx context.Context) error) *RefManager {
	return &RefManager{Owner: owner, OwnerKind: ownerKind, Selector: selector, canAdopt: canAdopt}
}

// CanAdopt runs the adoption check once and returns its result.
func (m *RefManager) CanAdopt(ctx context.Context) error {
	m.canAdoptOnce.Do(func() {
		if m.canAdopt != nil {
			m.canAdoptErr = m.canAdopt(ctx)
		}
	})
	return m.canAdoptErr
}

// ClaimObject decides whether the owner controls obj, reconciling where
// needed: an owned object that still matches is claimed; an owned object
// that no longer matches is released (unless the owner is being
// deleted); an orphan that matches, is not being deleted and lives in the
// owner's namespace is adopted (unless the owner is being deleted). Objects
// controlled by another owner are left alone. A NotFound from adopt or
// release means the object is gone and is not an error.
func (m *RefManager) ClaimObject(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool, adopt, release func(context.Context, metav1.Object) error) (bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.Owner.GetUID() {
			return false, nil
		}
		if match(obj) {
			return true, nil
		}
		if m.Owner.GetDeletionTimestamp() != nil {
			return false, nil
		}
		if err := release(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return false, nil
	}
	if m.Owner.GetDeletionTimestamp() != nil || !match(obj) || obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if ns := m.Owner.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		return false, nil
	}
	if err := adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// AdoptPatch returns the strategic merge patch that makes the owner the
// controller of the object with uid (the uid guards against a recreated
// object) and adds finalizers.
func (m *RefManager) AdoptPatch(uid types.UID, finalizers ...string) ([]byte, error) {
	return OwnerRefPatch(m.Owner, m.OwnerKind, uid, finalizers...)
}

// ReleasePatch returns the strategic merge patch that removes the owner's
// reference from the object with uid, and finalizers from it.
func (m *RefManager) ReleasePatch(uid types.UID, finalizers ...string) ([]byte, error) {
	return DeleteOwnerRefPatch(uid, []types.UID{m.Owner.GetUID()}, finalizers...)
}

type ownerRefPatch struct {
	Metadata ownerRefPatchMeta `json:"metadata"`
}

type ownerRefPatchMeta struct {
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	UID             types.UID               `json:"uid"`
	Finalizers      []string                `json:"finalizers,omitempty"`
}

// OwnerRefPatch is the strategic merge patch adding owner (of ownerKind) as
// controller, with blockOwnerDeletion, to the object with uid, plus
// finalizers.
func OwnerRefPatch(owner metav1.Object, ownerKind schema.GroupVersionKind, uid types.UID, finalizers ...string) ([]byte, error) {
	p := ownerRefPatch{Metadata: ownerRefPatchMeta{
		UID:             uid,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, ownerKind)},
		Finalizers:      finalizers,
	}}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("owner reference patch: %w", err)
	}
	return b, nil
}

type deleteOwnerRefPatch struct {
	Metadata deleteOwnerRefPatchMeta `json:"metadata"`
}

type deleteOwnerRefPatchMeta struct {
	UID              types.UID           `json:"uid"`
	OwnerReferences  []map[string]string `json:"ownerReferences"`
	DeleteFinalizers []string            `json:"$deleteFromPrimitiveList/finalizers,omitempty"`
}

// DeleteOwnerRefPatch is the strategic merge patch removing the owner
// references with ownerUIDs, and finalizers, from the object with uid.
func DeleteOwnerRefPatch(uid types.UID, ownerUIDs []types.UID, finalizers ...string) ([]byte, error) {
	p := deleteOwnerRefPatch{Metadata: deleteOwnerRefPatchMeta{UID: uid, DeleteFinalizers: finalizers}}
	for _, o := range ownerUIDs {
		p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, map[string]string{"$patch": "delete", "uid": string(o)})
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("delete owner reference patch: %w", err)
	}
	return b, nil
}

// RecheckDeletionTimestamp returns a CanAdopt check that reads the owner
// afresh with get and refuses adoption when it is being deleted (the cached
// copy may predate the deletion).
func RecheckDeletionTimestamp(get func(context.Context) (metav1.Object, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		obj, err := get(ctx)
		if err != nil {
			return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
		}
		if ts := obj.GetDeletionTimestamp(); ts != nil {
			return fmt.Errorf("%v/%v has just been deleted at %v", obj.GetNamespace(), obj.GetName(), ts)
		}
		return nil
	}
}

// releaseErr drops the errors a release may meet harmlessly: the object is
// gone (NotFound) or the uid precondition failed because it was recreated,
// or it had no owner references left (Invalid).
func releaseErr(err error) error {
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// PodRefManager claims pods for an owner.
type PodRefManager struct {
	*RefManager
	podControl PodControl
	finalizers []string
}

// NewPodRefManager returns a PodRefManager that patches through podControl
// and adds (on adoption) or removes (on release) finalizers.
func NewPodRefManager(podControl PodControl, owner metav1.Object, selector labels.Selector, ownerKind schema.GroupVersionKind, canAdopt func(ctx context.Context) error, finalizers ...string) *PodRefManager {
	return &PodRefManager{RefManager: NewRefManager(owner, ownerKind, selector, canAdopt), podControl: podControl, finalizers: finalizers}
}

// ClaimPods returns the pods the owner controls after adopting and
// releasing as ClaimObject does. A pod matches when the selector and every
// filter accept it. Errors of individual pods are joined; the pods claimed
// are returned even then.
func (m *PodRefManager) ClaimPods(ctx context.Context, pods []*corev1.Pod, filters ...func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	match := func(obj metav1.Object) bool {
		pod := obj.(*corev1.Pod)
		if !m.Selector.Matches(labels.Set(pod.Labels)) {
			return false
		}
		for _, f := range filters {
			if !f(pod) {
				return false
			}
		}
		return true
	}
	adopt := func(ctx context.Context, obj metav1.Object) error { return m.AdoptPod(ctx, obj.(*corev1.Pod)) }
	release := func(ctx context.Context, obj metav1.Object) error { return m.ReleasePod(ctx, obj.(*corev1.Pod)) }
	var claimed []*corev1.Pod
	var errs []error
	for _, pod := range pods {
		ok, err := m.ClaimObject(ctx, pod, match, adopt, release)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, pod)
		}
	}
	return claimed, errors.Join(errs...)
}

// AdoptPod makes the owner the pod's controller, after CanAdopt.
func (m *PodRefManager) AdoptPod(ctx context.Context, pod *corev1.Pod) error {
	if err := m.CanAdopt(ctx); err != nil {
		return fmt.Errorf("can't adopt Pod %v/%v (%v): %w", pod.Namespace, pod.Name, pod.UID, err)
	}
	patch, err := m.AdoptPatch(pod.UID, m.finalizers...)
	if err != nil {
		return err
	}
	return m.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch)
}

// ReleasePod removes the owner's reference from the pod.
func (m *PodRefManager) ReleasePod(ctx context.Context, pod *corev1.Pod) error {
	klog.FromContext(ctx).V(2).Info("Releasing pod", "pod", klog.KObj(pod), "owner", klog.KObj(m.Owner), "kind", m.OwnerKind.Kind)
	patch, err := m.ReleasePatch(pod.UID, m.finalizers...)
	if err != nil {
		return err
	}
	return releaseErr(m.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch))
}

// ObjectRefManager claims objects of type T (ReplicaSets,
// ControllerRevisions, ...) whose labels the selector matches.
type ObjectRefManager[T metav1.Object] struct {
	*RefManager
	patch PatchFunc
}

// NewObjectRefManager returns an ObjectRefManager that patches through
// patch.
func NewObjectRefManager[T metav1.Object](patch PatchFunc, owner metav1.Object, selector labels.Selector, ownerKind schema.GroupVersionKind, canAdopt func(ctx context.Context) error) *ObjectRefManager[T] {
	return &ObjectRefManager[T]{RefManager: NewRefManager(owner, ownerKind, selector, canAdopt), patch: patch}
}

// NewReplicaSetRefManager returns an ObjectRefManager for ReplicaSets.
func NewReplicaSetRefManager(patch PatchFunc, owner metav1.Object, selector labels.Selector, ownerKind schema.GroupVersionKind, canAdopt func(ctx context.Context) error) *ObjectRefManager[*appsv1.ReplicaSet] {
	return NewObjectRefManager[*appsv1.ReplicaSet](patch, owner, selector, ownerKind, canAdopt)
}

// NewControllerRevisionRefManager returns an ObjectRefManager for
// ControllerRevisions.
func NewControllerRevisionRefManager(patch PatchFunc, owner metav1.Object, selector labels.Selector, ownerKind schema.GroupVersionKind, canAdopt func(ctx context.Context) error) *ObjectRefManager[*appsv1.ControllerRevision] {
	return NewObjectRefManager[*appsv1.ControllerRevision](patch, owner, selector, ownerKind, canAdopt)
}

// Claim returns the objects the owner controls after adopting and
// releasing as ClaimObject does. Errors of individual objects are joined.
func (m *ObjectRefManager[T]) Claim(ctx context.Context, objs []T) ([]T, error) {
	match := func(obj metav1.Object) bool { return m.Selector.Matches(labels.Set(obj.GetLabels())) }
	var claimed []T
	var errs []error
	for _, o := range objs {
		ok, err := m.ClaimObject(ctx, o, match, m.Adopt, m.Release)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, o)
		}
	}
	return claimed, errors.Join(errs...)
}

// Adopt makes the owner obj's controller, after CanAdopt.
func (m *ObjectRefManager[T]) Adopt(ctx context.Context, obj metav1.Object) error {
	if err := m.CanAdopt(ctx); err != nil {
		return fmt.Errorf("can't adopt %v/%v (%v): %w", obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
	}
	patch, err := m.AdoptPatch(obj.GetUID())
	if err != nil {
		return err
	}
	return m.patch(ctx, obj.GetNamespace(), obj.GetName(), patch)
}

// Release removes the owner's reference from obj.
func (m *ObjectRefManager[T]) Release(ctx context.Context, obj metav1.Object) error {
	klog.FromContext(ctx).V(2).Info("Releasing object", "object", klog.KObj(obj), "owner", klog.KObj(m.Owner), "kind", m.OwnerKind.Kind)
	patch, err := m.ReleasePatch(obj.GetUID())
	if err != nil {
		return err
	}
	return releaseErr(m.patch(ctx, obj.GetNamespace(), obj.GetName(), patch))
}
