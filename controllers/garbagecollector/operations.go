package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

var (
	// errVirtualDeleteQueued says the item was found gone and a virtual
	// delete event was queued; the graph will follow.
	errVirtualDeleteQueued = errors.New("enqueued virtual delete event")
	// errNamespacedOwnerOfClusterScoped says a cluster-scoped object names
	// a namespaced owner, which no retry can resolve.
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")
)

// mappingError says a kind is not (yet) known to the mapper.
type mappingError struct {
	kind, apiVersion string
	err              error
}

func (e *mappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s: %v", e.apiVersion, e.kind, e.err)
}

func (e *mappingError) Unwrap() error { return e.err }

// resourceFor maps an apiVersion and kind to its resource and scope.
func (gc *GarbageCollector) resourceFor(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	m, err := gc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, &mappingError{kind: kind, apiVersion: apiVersion, err: err}
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// client returns the metadata client for the object id names.
func (gc *GarbageCollector) client(id objectReference) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := gc.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return nil, err
	}
	if !namespaced {
		return gc.metadata.Resource(gvr), nil
	}
	if id.Namespace == "" {
		return nil, errNamespacedOwnerOfClusterScoped
	}
	return gc.metadata.Resource(gvr).Namespace(id.Namespace), nil
}

func (gc *GarbageCollector) getObject(ctx context.Context, id objectReference) (*metav1.PartialObjectMetadata, error) {
	c, err := gc.client(id)
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, id.Name, metav1.GetOptions{})
}

// deleteObject deletes id with policy, on condition of its UID and of
// resourceVersion when given. If the object changed since in a way that
// does not touch its owner references, it is deleted anyway.
func (gc *GarbageCollector) deleteObject(ctx context.Context, id objectReference, resourceVersion string, owners []metav1.OwnerReference, policy metav1.DeletionPropagation) error {
	c, err := gc.client(id)
	if err != nil {
		return err
	}
	uid := id.UID
	pre := metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	err = c.Delete(ctx, id.Name, metav1.DeleteOptions{Preconditions: &pre, PropagationPolicy: &policy})
	if apierrors.IsConflict(err) && resourceVersion != "" {
		live, getErr := c.Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) {
			return getErr
		}
		if getErr == nil && live.UID == id.UID && live.ResourceVersion != resourceVersion &&
			equality.Semantic.DeepEqual(live.OwnerReferences, owners) {
			return gc.deleteObject(ctx, id, "", nil, policy)
		}
	}
	return err
}

// patchOwnerReferences patches the owner references of id: a strategic
// merge patch built by smp (guarded by the object's UID), or, for
// resources without strategic merge (custom resources), a JSON merge
// patch of the whole list as jmp computes it from the live object
// (guarded by its resource version).
func (gc *GarbageCollector) patchOwnerReferences(ctx context.Context, id objectReference, smp []byte,
	jmp func(refs []metav1.OwnerReference) []metav1.OwnerReference) error {
	c, err := gc.client(id)
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, id.Name, types.StrategicMergePatchType, smp, metav1.PatchOptions{})
	if !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	live, err := c.Get(ctx, id.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if live.UID != id.UID {
		return apierrors.NewNotFound(schema.GroupResource{Resource: id.Kind}, id.Name)
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": live.ResourceVersion,
		"ownerReferences": jmp(live.OwnerReferences),
	}})
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, id.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// removeOwnerReferences removes the references to owners from id.
func (gc *GarbageCollector) removeOwnerReferences(ctx context.Context, id objectReference, owners ...types.UID) error {
	if len(owners) == 0 {
		return nil
	}
	var refs []map[string]any
	for _, uid := range owners {
		refs = append(refs, map[string]any{"$patch": "delete", "uid": uid})
	}
	smp, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": id.UID}})
	if err != nil {
		return err
	}
	return gc.patchOwnerReferences(ctx, id, smp, func(live []metav1.OwnerReference) []metav1.OwnerReference {
		out := []metav1.OwnerReference{}
		for _, r := range live {
			if !slices.Contains(owners, r.UID) {
				out = append(out, r)
			}
		}
		return out
	})
}

// unblockOwnerReferences turns blockOwnerDeletion off in id's references;
// patched is false when none blocked (nothing was written).
func (gc *GarbageCollector) unblockOwnerReferences(ctx context.Context, id objectReference, current []metav1.OwnerReference) (patched bool, err error) {
	var refs []metav1.OwnerReference
	for _, r := range current {
		if r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			r.BlockOwnerDeletion = new(bool)
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		// Nothing blocks: a patch of an empty (null) list would delete
		// every reference.
		return false, nil
	}
	smp, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": id.UID}})
	if err != nil {
		return false, err
	}
	err = gc.patchOwnerReferences(ctx, id, smp, func(live []metav1.OwnerReference) []metav1.OwnerReference {
		out := make([]metav1.OwnerReference, 0, len(live))
		for _, r := range live {
			r.BlockOwnerDeletion = new(bool)
			out = append(out, r)
		}
		return out
	})
	return err == nil, err
}

// removeFinalizer removes finalizer f from id, retrying on conflicts.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, id objectReference, f string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj, err := gc.getObject(ctx, id)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s to remove finalizer %s: %w", id, f, err)
		}
		if obj.UID != id.UID || !slices.Contains(obj.Finalizers, f) {
			return nil
		}
		var rest []string
		for _, x := range obj.Finalizers {
			if x != f {
				rest = append(rest, x)
			}
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": obj.ResourceVersion,
			"finalizers":      rest,
		}})
		if err != nil {
			return err
		}
		c, err := gc.client(id)
		if err != nil {
			return err
		}
		_, err = c.Patch(ctx, id.Name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("remove finalizer %s from %s: %w", f, id, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed finalizer", "finalizer", f, "item", id)
	return nil
}
