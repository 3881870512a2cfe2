package garbagecollector

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

// event is a change of one object as an informer (or, for a virtual
// delete, a worker that found the object gone) reported it.
type event struct {
	typ eventType
	// virtual is set for deletes a worker inferred from the apiserver.
	virtual bool
	obj     metav1.Object
	old     metav1.Object
	gvk     schema.GroupVersionKind
}

// monitor watches one resource: with an informer of its own (metadata
// only), or with a handler on the controller manager's shared informer
// for that resource, whose cache the other controllers already hold.
type monitor struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
	started  bool
	// reg is the handler on a shared informer (nil for an own informer).
	reg cache.ResourceEventHandlerRegistration
}

// synced reports whether the monitor has seen the resource's initial list.
func (m *monitor) synced() bool {
	if m.reg != nil {
		return m.reg.HasSynced()
	}
	return m.informer.HasSynced()
}

// halt stops an own informer, or removes the handler from a shared one.
func (m *monitor) halt() {
	if m.reg != nil {
		_ = m.informer.RemoveEventHandler(m.reg)
		return
	}
	if m.started {
		close(m.stop)
	}
}

// syncMonitors makes the monitored resources exactly resources (less the
// ignored ones): new monitors are created (not started), those of
// resources gone are stopped. Resources whose kind the mapper does not
// know are reported and left out.
func (gc *GarbageCollector) syncMonitors(logger klog.Logger, resources map[schema.GroupVersionResource]struct{}) error {
	gc.monitorMu.Lock()
	defer gc.monitorMu.Unlock()
	old := gc.monitors
	current := map[schema.GroupVersionResource]*monitor{}
	var errs []string
	added := 0
	running := gc.runningShared()
	for gvr := range resources {
		if _, ignored := gc.ignored[gvr.GroupResource()]; ignored {
			continue
		}
		if m, ok := old[gvr]; ok {
			current[gvr] = m
			delete(old, gvr)
			continue
		}
		kind, err := gc.mapper.KindFor(gvr)
		if err != nil {
			errs = append(errs, fmt.Sprintf("look up kind of %s: %v", gvr, err))
			continue
		}
		current[gvr] = gc.newMonitor(gvr, kind, running)
		added++
	}
	for _, m := range old {
		m.halt()
	}
	gc.monitors = current
	logger.V(4).Info("Synced garbage collector monitors", "added", added, "removed", len(old), "total", len(current))
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("garbage collector monitors: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (gc *GarbageCollector) newMonitor(gvr schema.GroupVersionResource, kind schema.GroupVersionKind, running map[reflect.Type]bool) *monitor {
	handler := gc.handler(kind)
	if sharedRunning(running, kind) {
		if gi, err := gc.shared.ForResource(gvr); err == nil {
			inf := gi.Informer()
			if reg, err := inf.AddEventHandler(handler); err == nil {
				return &monitor{informer: inf, reg: reg}
			}
		}
	}
	inf := metadatainformer.NewFilteredMetadataInformer(gc.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(func(obj any) (any, error) {
		if a, err := meta.Accessor(obj); err == nil {
			a.SetManagedFields(nil)
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(handler)
	return &monitor{informer: inf, stop: make(chan struct{})}
}

// runningShared returns the object types the shared factory runs
// informers for (none without a factory).
func (gc *GarbageCollector) runningShared() map[reflect.Type]bool {
	if gc.shared == nil {
		return nil
	}
	closed := make(chan struct{})
	close(closed)
	return gc.shared.WaitForCacheSync(closed)
}

// sharedRunning reports whether the shared factory runs an informer for
// kind already (running is runningShared's answer): only then is sharing
// worth it. A typed informer for a kind no controller watches would cache
// whole objects and fault in that kind's decoding code, where a metadata
// informer needs neither.
func sharedRunning(running map[reflect.Type]bool, kind schema.GroupVersionKind) bool {
	if len(running) == 0 {
		return false
	}
	obj, err := scheme.Scheme.New(kind)
	if err != nil {
		return false
	}
	_, ok := running[reflect.TypeOf(obj)]
	return ok
}

// handler turns an informer's notifications about objects of kind into
// graph changes.
func (gc *GarbageCollector) handler(kind schema.GroupVersionKind) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if a, err := meta.Accessor(obj); err == nil {
				gc.graphChanges.Add(&event{typ: addEvent, obj: a, gvk: kind})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			a, err := meta.Accessor(newObj)
			if err != nil {
				return
			}
			o, _ := meta.Accessor(oldObj)
			gc.graphChanges.Add(&event{typ: updateEvent, obj: a, old: o, gvk: kind})
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if a, err := meta.Accessor(obj); err == nil {
				gc.graphChanges.Add(&event{typ: deleteEvent, obj: a, gvk: kind})
			}
		},
	}
}

// startMonitors runs the monitors not yet running, unless the collector
// has stopped.
func (gc *GarbageCollector) startMonitors() {
	gc.monitorMu.Lock()
	defer gc.monitorMu.Unlock()
	if gc.stopped {
		return
	}
	startShared := false
	for _, m := range gc.monitors {
		if m.started {
			continue
		}
		m.started = true
		if m.reg != nil {
			startShared = true
			continue
		}
		inf, stop := m.informer, m.stop
		gc.monitorWG.Go(func() { inf.Run(stop) })
	}
	if startShared {
		// Shared informers run for the controller manager's term.
		gc.shared.Start(gc.sharedStop)
	}
}

// stopMonitors stops every monitor and waits for them; no monitor starts
// afterwards.
func (gc *GarbageCollector) stopMonitors() {
	gc.monitorMu.Lock()
	gc.stopped = true
	for _, m := range gc.monitors {
		m.halt()
	}
	gc.monitors = nil
	gc.monitorMu.Unlock()
	gc.monitorWG.Wait()
}

// isSynced reports whether there are monitors and all have listed.
func (gc *GarbageCollector) isSynced() bool {
	gc.monitorMu.Lock()
	defer gc.monitorMu.Unlock()
	if len(gc.monitors) == 0 {
		return false
	}
	for _, m := range gc.monitors {
		if !m.synced() {
			return false
		}
	}
	return true
}

// resourceSynced reports whether gvr is monitored and listed.
func (gc *GarbageCollector) resourceSynced(gvr schema.GroupVersionResource) bool {
	gc.monitorMu.Lock()
	defer gc.monitorMu.Unlock()
	m, ok := gc.monitors[gvr]
	return ok && m.synced()
}

// processGraphChanges applies queued events to the graph until the queue
// shuts down.
func (gc *GarbageCollector) processGraphChanges(logger klog.Logger) {
	for {
		ev, quit := gc.graphChanges.Get()
		if quit {
			return
		}
		gc.processEvent(logger, ev)
		gc.graphChanges.Done(ev)
	}
}

func identityOf(ev *event) objectReference {
	return objectReference{
		APIVersion: ev.gvk.GroupVersion().String(),
		Kind:       ev.gvk.Kind,
		Name:       ev.obj.GetName(),
		UID:        ev.obj.GetUID(),
		Namespace:  ev.obj.GetNamespace(),
	}
}

func hasFinalizer(obj metav1.Object, f string) bool { return slices.Contains(obj.GetFinalizers(), f) }

// deletionStartsWith reports whether the update is the one at which the
// object started being deleted with finalizer f.
func deletionStartsWith(old, cur metav1.Object, f string) bool {
	if cur.GetDeletionTimestamp() == nil || !hasFinalizer(cur, f) {
		return false
	}
	return old == nil || old.GetDeletionTimestamp() == nil || !hasFinalizer(old, f)
}

// processEvent applies one event to the graph and queues the work it
// implies. The graph lock is held throughout.
func (gc *GarbageCollector) processEvent(logger klog.Logger, ev *event) {
	g := gc.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	uid := ev.obj.GetUID()
	existing, found := g.nodes[uid]
	if found && !ev.virtual && !existing.observed {
		// First sighting of an object known so far from references: the
		// informer's coordinates are the truth.
		observed := identityOf(ev)
		if observed != existing.identity {
			_, mismatched := partitionDependents(existing, observed)
			for _, dep := range mismatched {
				if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
					gc.reportInvalidNamespace(dep, observed.UID)
				}
				gc.attemptToDelete.Add(dep)
			}
			logger.V(2).Info("Replacing virtual item with observed item", "virtual", existing.identity, "observed", observed)
			existing.identity = observed
		}
		existing.observed = true
	}

	switch {
	case ev.typ != deleteEvent && !found:
		n := &node{
			identity:           identityOf(ev),
			owners:             ev.obj.GetOwnerReferences(),
			dependents:         map[*node]struct{}{},
			observed:           true,
			beingDeleted:       ev.obj.GetDeletionTimestamp() != nil,
			deletingDependents: ev.obj.GetDeletionTimestamp() != nil && hasFinalizer(ev.obj, metav1.FinalizerDeleteDependents),
		}
		g.nodes[uid] = n
		gc.addDependentToOwners(logger, n, n.owners)
		gc.processTransitions(logger, ev.old, ev.obj, n)

	case ev.typ != deleteEvent:
		added, removed, changed := referenceDiffs(existing.owners, ev.obj.GetOwnerReferences())
		if len(added)+len(removed)+len(changed) > 0 {
			gc.queueUnblockedOwners(removed, changed)
			existing.owners = ev.obj.GetOwnerReferences()
			gc.addDependentToOwners(logger, existing, added)
			for _, ref := range removed {
				if owner, ok := g.nodes[ref.UID]; ok {
					delete(owner.dependents, existing)
				}
			}
		}
		if ev.obj.GetDeletionTimestamp() != nil {
			existing.beingDeleted = true
		}
		gc.processTransitions(logger, ev.old, ev.obj, existing)

	default: // delete
		if !found {
			return
		}
		remove := true
		if ev.virtual {
			deleted := identityOf(ev)
			if !existing.observed {
				matching, mismatched := partitionDependents(existing, deleted)
				if len(mismatched) > 0 {
					// Some dependents name this UID with other coordinates:
					// only those that named the deleted ones lose their owner.
					remove = false
					if len(matching) > 0 {
						gc.absentOwners.Add(deleted, nil)
						for _, dep := range matching {
							gc.attemptToDelete.Add(dep)
						}
					}
					if existing.identity == deleted {
						if alt := alternateOwnerIdentity(mismatched, deleted); alt != nil {
							existing.identity = *alt
							gc.attemptToDelete.AddRateLimited(existing)
						}
					}
				}
			} else if existing.identity != deleted {
				// An observed object is not removed on the word of a
				// reference with other coordinates.
				remove = false
				matching, _ := partitionDependents(existing, deleted)
				if len(matching) > 0 {
					gc.absentOwners.Add(deleted, nil)
					for _, dep := range matching {
						gc.attemptToDelete.Add(dep)
					}
				}
			}
		}
		if !remove {
			return
		}
		delete(g.nodes, uid)
		for _, ref := range existing.owners {
			if owner, ok := g.nodes[ref.UID]; ok {
				delete(owner.dependents, existing)
			}
		}
		if len(existing.dependents) > 0 {
			gc.absentOwners.Add(identityOf(ev), nil)
		}
		for dep := range existing.dependents {
			gc.attemptToDelete.Add(dep)
		}
		for _, ref := range existing.owners {
			if owner, ok := g.nodes[ref.UID]; ok && owner.deletingDependents {
				// The owner may be waiting for this one.
				gc.attemptToDelete.Add(owner)
			}
		}
	}
}

// processTransitions queues the work a deletion with the orphan or the
// foregroundDeletion finalizer starts.
func (gc *GarbageCollector) processTransitions(logger klog.Logger, old, cur metav1.Object, n *node) {
	if deletionStartsWith(old, cur, metav1.FinalizerOrphanDependents) {
		logger.V(5).Info("Queueing item to orphan its dependents", "item", n.identity)
		gc.attemptToOrphan.Add(n)
		return
	}
	if deletionStartsWith(old, cur, metav1.FinalizerDeleteDependents) {
		logger.V(2).Info("Item waits for its dependents to be deleted", "item", n.identity)
		n.deletingDependents = true
		for dep := range n.dependents {
			gc.attemptToDelete.Add(dep)
		}
		gc.attemptToDelete.Add(n)
	}
}

// queueUnblockedOwners queues owners that a dependent stopped blocking
// (reference removed, or blockOwnerDeletion turned off), in case they wait
// for it.
func (gc *GarbageCollector) queueUnblockedOwners(removed []metav1.OwnerReference, changed [][2]metav1.OwnerReference) {
	blocks := func(r metav1.OwnerReference) bool { return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion }
	for _, ref := range removed {
		if blocks(ref) {
			if owner, ok := gc.graph.nodes[ref.UID]; ok {
				gc.attemptToDelete.Add(owner)
			}
		}
	}
	for _, pair := range changed {
		if blocks(pair[0]) && !blocks(pair[1]) {
			if owner, ok := gc.graph.nodes[pair[1].UID]; ok {
				gc.attemptToDelete.Add(owner)
			}
		}
	}
}

// addDependentToOwners links n under each owner, creating virtual nodes
// for owners not seen yet (queued for a check against the apiserver). A
// reference that disagrees with an owner already known (namespace or
// coordinates) queues n itself for a check. Called with the lock held.
func (gc *GarbageCollector) addDependentToOwners(logger klog.Logger, n *node, owners []metav1.OwnerReference) {
	suspect := false
	for _, ref := range owners {
		owner, ok := gc.graph.nodes[ref.UID]
		if !ok {
			owner = &node{
				identity:   objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Namespace: n.identity.Namespace},
				dependents: map[*node]struct{}{},
			}
			logger.V(5).Info("Adding virtual item", "identity", owner.identity)
			gc.graph.nodes[ref.UID] = owner
		}
		owner.dependents[n] = struct{}{}
		if !ok {
			gc.attemptToDelete.Add(owner)
			continue
		}
		if suspect {
			continue
		}
		namespaced := owner.identity.Namespace != ""
		switch {
		case namespaced && owner.identity.Namespace != n.identity.Namespace:
			if owner.observed {
				logger.V(2).Info("Item references an owner in another namespace", "item", n.identity, "owner", owner.identity)
				gc.reportInvalidNamespace(n, ref.UID)
			}
			suspect = true
		case !matchesCoordinates(ref, owner.identity):
			if owner.observed {
				logger.V(2).Info("Item references an owner with other coordinates than observed", "item", n.identity, "owner", owner.identity)
			}
			suspect = true
		case !namespaced && owner.identity.Namespace != n.identity.Namespace && !owner.observed:
			// A virtual cluster-scoped owner named from another namespace
			// may be a namespaced kind wrongly referenced by a
			// cluster-scoped dependent.
			suspect = true
		}
	}
	if suspect {
		gc.attemptToDelete.Add(n)
	}
}

// reportInvalidNamespace records a warning on n about its reference to
// ownerUID, which names an owner of another namespace.
func (gc *GarbageCollector) reportInvalidNamespace(n *node, ownerUID types.UID) {
	for _, ref := range n.owners {
		if ref.UID != ownerUID {
			continue
		}
		invalid := refCoordinates(ref)
		invalid.Namespace = n.identity.Namespace
		gc.recorder.Eventf(&corev1.ObjectReference{
			APIVersion: n.identity.APIVersion, Kind: n.identity.Kind, Namespace: n.identity.Namespace,
			Name: n.identity.Name, UID: n.identity.UID,
		}, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "ownerRef %s does not exist in namespace %q", invalid, n.identity.Namespace)
		return
	}
}

// referenceDiffs compares owner references by UID.
func referenceDiffs(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed [][2]metav1.OwnerReference) {
	oldByUID := map[types.UID]metav1.OwnerReference{}
	for _, r := range old {
		oldByUID[r.UID] = r
	}
	for _, r := range cur {
		o, ok := oldByUID[r.UID]
		if !ok {
			added = append(added, r)
			continue
		}
		if !equality.Semantic.DeepEqual(o, r) {
			changed = append(changed, [2]metav1.OwnerReference{o, r})
		}
		delete(oldByUID, r.UID)
	}
	for _, uid := range slices.Sorted(maps.Keys(oldByUID)) {
		removed = append(removed, oldByUID[uid])
	}
	return added, removed, changed
}

// partitionDependents splits owner's dependents into those whose
// reference to owner.UID matches id (namespace included, for a namespaced
// id) and those with a reference that does not; a dependent with both
// lands in both.
func partitionDependents(owner *node, id objectReference) (matching, mismatched []*node) {
	namespaced := id.Namespace != ""
	for dep := range owner.dependents {
		match, mismatch := false, false
		if namespaced && id.Namespace != dep.identity.Namespace {
			mismatch = true
		} else {
			for _, ref := range dep.owners {
				if ref.UID != id.UID {
					continue
				}
				if matchesCoordinates(ref, id) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			mismatched = append(mismatched, dep)
		}
	}
	return matching, mismatched
}

func lessReference(a, b objectReference) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.APIVersion != b.APIVersion {
		return a.APIVersion < b.APIVersion
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// alternateOwnerIdentity picks, among the other identities deps give the
// UID of absent, the first that sorts after absent (else the first), so
// that successive virtual deletes walk through all of them.
func alternateOwnerIdentity(deps []*node, absent objectReference) *objectReference {
	clusterScoped := absent.Namespace == ""
	seen := map[objectReference]bool{absent: true}
	var first, firstAfter *objectReference
	for _, dep := range deps {
		for _, ref := range dep.owners {
			if ref.UID != absent.UID {
				continue
			}
			if matchesCoordinates(ref, absent) && (clusterScoped || absent.Namespace == dep.identity.Namespace) {
				continue
			}
			alt := refCoordinates(ref)
			alt.Namespace = dep.identity.Namespace
			if clusterScoped && alt.APIVersion == absent.APIVersion && alt.Kind == absent.Kind {
				alt.Namespace = ""
			}
			if seen[alt] {
				continue
			}
			seen[alt] = true
			if first == nil || lessReference(alt, *first) {
				a := alt
				first = &a
			}
			if lessReference(absent, alt) && (firstAfter == nil || lessReference(alt, *firstAfter)) {
				a := alt
				firstAfter = &a
			}
		}
	}
	if firstAfter != nil {
		return firstAfter
	}
	return first
}
