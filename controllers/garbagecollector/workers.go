package garbagecollector

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

func (gc *GarbageCollector) processAttemptToDelete(ctx context.Context) bool {
	n, quit := gc.attemptToDelete.Get()
	if quit {
		return false
	}
	defer gc.attemptToDelete.Done(n)
	if gc.attemptToDeleteWorker(ctx, n) {
		gc.attemptToDelete.AddRateLimited(n)
	} else {
		gc.attemptToDelete.Forget(n)
	}
	return true
}

// attemptToDeleteWorker processes one node and reports whether to retry
// it.
func (gc *GarbageCollector) attemptToDeleteWorker(ctx context.Context, n *node) bool {
	logger := klog.FromContext(ctx)
	v := gc.graph.view(n)
	if !v.observed {
		current, ok := gc.graph.lookup(v.identity.UID)
		if !ok || current != n || gc.graph.view(current).observed {
			// Since queued, the virtual node was removed or the object seen.
			return false
		}
	}
	err := gc.attemptToDeleteItem(ctx, n)
	var mapErr *mappingError
	switch {
	case errors.Is(err, errVirtualDeleteQueued), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return false
	case errors.As(err, &mapErr):
		// A custom kind not discovered yet, or a bad reference: retried
		// (quietly) until a rediscovery knows it.
		logger.V(5).Info("Cannot map item's kind", "item", v.identity, "err", err)
		return true
	case err != nil:
		logger.Error(err, "Failed to process item, will retry", "item", v.identity)
		return true
	case !gc.graph.view(n).observed:
		// A virtual node is checked until the object shows up or is
		// confirmed gone.
		return true
	}
	return false
}

// queueVirtualDelete tells the graph that the object id names is gone.
func (gc *GarbageCollector) queueVirtualDelete(id objectReference) error {
	gv, _ := schemaGroupVersion(id.APIVersion)
	gc.graphChanges.Add(&event{
		typ:     deleteEvent,
		virtual: true,
		gvk:     gv.WithKind(id.Kind),
		obj: &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: id.APIVersion, Kind: id.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID},
		},
	})
	return errVirtualDeleteQueued
}

// attemptToDeleteItem deletes the object of n if none of its owners is
// left (or waits, for an owner in foreground deletion), drops references
// to owners that are gone when others remain, and finishes a foreground
// deletion of n whose blocking dependents are gone.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, n *node) error {
	logger := klog.FromContext(ctx)
	v := gc.graph.view(n)
	logger.V(4).Info("Processing item", "item", v.identity, "virtual", !v.observed)
	if v.beingDeleted && !v.deletingDependents {
		// Deletion is under way; the dependents are handled when it is
		// done.
		return nil
	}
	latest, err := gc.getObject(ctx, v.identity)
	switch {
	case apierrors.IsNotFound(err):
		logger.V(5).Info("Item not found, generating a virtual delete event", "item", v.identity)
		return gc.queueVirtualDelete(v.identity)
	case err != nil:
		return err
	}
	if latest.UID != v.identity.UID {
		logger.V(5).Info("Item's UID differs, generating a virtual delete event", "item", v.identity)
		return gc.queueVirtualDelete(v.identity)
	}
	if v.deletingDependents {
		return gc.processDeletingDependents(ctx, n)
	}
	refs := latest.OwnerReferences
	if len(refs) == 0 {
		return nil
	}
	solid, dangling, waiting, err := gc.classifyReferences(ctx, v, refs)
	if err != nil {
		return err
	}
	logger.V(5).Info("Classified item's owner references", "item", v.identity, "solid", solid, "dangling", dangling, "waitingForDependentsDeletion", waiting)
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// References to owners that are gone, and to owners waiting for
		// their dependents, go; the item stays for its other owners.
		var uids []types.UID
		for _, r := range append(dangling, waiting...) {
			uids = append(uids, r.UID)
		}
		logger.V(2).Info("Removing references to absent or deleting owners", "item", v.identity, "owners", uids)
		return gc.removeOwnerReferences(ctx, v.identity, uids...)
	case len(waiting) > 0 && len(v.dependents) > 0:
		// An owner waits for this item, which has dependents of its own:
		// delete it in the foreground too. A dependent of it already in
		// foreground deletion could wait for it in a cycle, so the item
		// stops blocking its owners first.
		for _, dep := range v.dependents {
			if gc.graph.view(dep).deletingDependents {
				patched, err := gc.unblockOwnerReferences(ctx, v.identity, refs)
				if err != nil {
					return err
				}
				if !patched {
					break
				}
				logger.V(2).Info("Unblocked item's owner references to avoid a deletion cycle", "item", v.identity, "dependent", gc.graph.view(dep).identity)
				// The patch moved the resource version the delete below
				// is conditional on.
				if latest, err = gc.getObject(ctx, v.identity); err != nil {
					if apierrors.IsNotFound(err) {
						return gc.queueVirtualDelete(v.identity)
					}
					return err
				}
				break
			}
		}
		logger.V(2).Info("Deleting item in the foreground, as an owner waits for it", "item", v.identity)
		err := gc.deleteObject(ctx, v.identity, latest.ResourceVersion, latest.OwnerReferences, metav1.DeletePropagationForeground)
		if apierrors.IsNotFound(err) {
			return gc.queueVirtualDelete(v.identity)
		}
		return err
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		logger.V(2).Info("Deleting item whose owners are gone", "item", v.identity, "propagationPolicy", policy)
		err := gc.deleteObject(ctx, v.identity, latest.ResourceVersion, latest.OwnerReferences, policy)
		if apierrors.IsNotFound(err) {
			return gc.queueVirtualDelete(v.identity)
		}
		return err
	}
}

// processDeletingDependents finishes the foreground deletion of n once no
// blocking dependent is left, and otherwise queues the blocking ones.
func (gc *GarbageCollector) processDeletingDependents(ctx context.Context, n *node) error {
	blocking := gc.graph.blockingDependents(n)
	if len(blocking) == 0 {
		id := gc.graph.view(n).identity
		klog.FromContext(ctx).V(2).Info("Removing foregroundDeletion finalizer: no blocking dependents left", "item", id)
		return gc.removeFinalizer(ctx, id, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !gc.graph.view(dep).deletingDependents {
			gc.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// classifyReferences sorts an item's owner references: solid (the owner
// exists and is not waiting for its dependents), dangling (the owner is
// gone) and waiting (the owner is being deleted in the foreground).
func (gc *GarbageCollector) classifyReferences(ctx context.Context, v nodeView, refs []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		gone, owner, err := gc.isDangling(ctx, ref, v)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case gone:
			dangling = append(dangling, ref)
		case owner.DeletionTimestamp != nil && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling reports whether ref names an owner that does not exist in
// the item's namespace (namespaced owners) or cluster-wide, returning the
// owner when it does.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, v nodeView) (bool, *metav1.PartialObjectMetadata, error) {
	logger := klog.FromContext(ctx)
	key := refCoordinates(ref)
	if _, absent := gc.absentOwners.Get(key); absent {
		logger.V(5).Info("Item's owner is known to be absent", "item", v.identity, "owner", ref)
		return true, nil, nil
	}
	key.Namespace = v.identity.Namespace
	if _, absent := gc.absentOwners.Get(key); absent {
		logger.V(5).Info("Item's owner is known to be absent from its namespace", "item", v.identity, "owner", ref)
		return true, nil, nil
	}
	gvr, namespaced, err := gc.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if v.identity.Namespace == "" && namespaced {
		logger.V(2).Info("Cluster-scoped item refers to a namespaced owner", "item", v.identity, "owner", ref)
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	c := gc.metadata.Resource(gvr)
	var owner *metav1.PartialObjectMetadata
	if namespaced {
		owner, err = c.Namespace(v.identity.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	} else {
		owner, err = c.Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		gc.absentOwners.Add(key, nil)
		return true, nil, nil
	case err != nil:
		return false, nil, fmt.Errorf("get owner %s of %s: %w", key, v.identity, err)
	}
	if owner.UID != ref.UID {
		gc.absentOwners.Add(key, nil)
		return true, nil, nil
	}
	return false, owner, nil
}

func (gc *GarbageCollector) processAttemptToOrphan(ctx context.Context) bool {
	n, quit := gc.attemptToOrphan.Get()
	if quit {
		return false
	}
	defer gc.attemptToOrphan.Done(n)
	if err := gc.orphanDependents(ctx, n); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to orphan dependents, will retry", "item", gc.graph.view(n).identity)
		gc.attemptToOrphan.AddRateLimited(n)
		return true
	}
	gc.attemptToOrphan.Forget(n)
	return true
}

// orphanDependents removes the references to n from its dependents, then
// n's orphan finalizer.
func (gc *GarbageCollector) orphanDependents(ctx context.Context, n *node) error {
	v := gc.graph.view(n)
	var errs []error
	for _, dep := range v.dependents {
		id := gc.graph.view(dep).identity
		if err := gc.removeOwnerReferences(ctx, id, v.identity.UID); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("orphan %s: %w", id, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return gc.removeFinalizer(ctx, v.identity, metav1.FinalizerOrphanDependents)
}
