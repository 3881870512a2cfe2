package controllerutil

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// PodControllerIndex is the name of the pod informer index by controller
// reference that AddPodControllerIndexer installs.
const PodControllerIndex = "podController"

// NewControllerRef is the owner reference that makes owner (of kind gvk)
// the controller of a child, with blockOwnerDeletion.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	return metav1.NewControllerRef(owner, gvk)
}

// ControllerRefMatches reports whether ref names an owner of gvk's group
// and kind (any version).
func ControllerRefMatches(ref *metav1.OwnerReference, gvk schema.GroupVersionKind) bool {
	if ref == nil || ref.Kind != gvk.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gvk.Group
}

// PodControllerIndexKey is the PodControllerIndex key of the pods in
// namespace controlled by ref, or of the orphans in namespace when ref is
// nil.
func PodControllerIndexKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace
	}
	return namespace + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}

// AddPodControllerIndexer adds PodControllerIndex to a pod informer that
// has not started; adding it twice is harmless.
func AddPodControllerIndexer(podInformer cache.SharedIndexInformer) error {
	if _, ok := podInformer.GetIndexer().GetIndexers()[PodControllerIndex]; ok {
		return nil
	}
	err := podInformer.AddIndexers(cache.Indexers{PodControllerIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		return []string{PodControllerIndexKey(pod.Namespace, metav1.GetControllerOfNoCopy(pod))}, nil
	}})
	if err != nil {
		// Another controller may have added it meanwhile.
		if _, ok := podInformer.GetIndexer().GetIndexers()[PodControllerIndex]; ok {
			return nil
		}
		return fmt.Errorf("add pod controller index: %w", err)
	}
	return nil
}

// FilterPodsByOwner returns the pods controlled by owner (of ownerKind)
// from an indexer with PodControllerIndex, plus the orphans of its
// namespace when includeOrphans is set.
func FilterPodsByOwner(indexer cache.Indexer, owner metav1.Object, ownerKind string, includeOrphans bool) ([]*corev1.Pod, error) {
	if owner.GetNamespace() == "" || owner.GetName() == "" || owner.GetUID() == "" || ownerKind == "" {
		return nil, errors.New("filter pods by owner: owner namespace, name, uid and kind are required")
	}
	keys := []string{PodControllerIndexKey(owner.GetNamespace(), &metav1.OwnerReference{Kind: ownerKind, Name: owner.GetName(), UID: owner.GetUID()})}
	if includeOrphans {
		keys = append(keys, PodControllerIndexKey(owner.GetNamespace(), nil))
	}
	var out []*corev1.Pod
	for _, k := range keys {
		objs, err := indexer.ByIndex(PodControllerIndex, k)
		if err != nil {
			return nil, fmt.Errorf("filter pods by owner: %w", err)
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
