package controllerutil

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// OwnerRouter turns the events of objects that owners of one kind control
// (a ReplicaSet's pods, a Deployment's ReplicaSets, a DaemonSet's
// ControllerRevisions) into work for those owners, the way each of
// upstream's workload controllers does by hand: a controlled object wakes
// its controller, if the cache has it with the UID of the reference; an
// orphan wakes every owner whose selector matches its labels, which may
// adopt it.
type OwnerRouter[O metav1.Object] struct {
	// Kind is the owners' kind; references to other kinds are not ours.
	Kind string
	// Get reads an owner from the cache.
	Get func(namespace, name string) (O, error)
	// Matching returns the owners that may adopt an orphan with these
	// labels (SelectorMatching, or a lister's own).
	Matching func(namespace string, lbls map[string]string) []O
	// Enqueue queues an owner's sync.
	Enqueue func(O)

	// OnCreate, if set, is told of an added object's controller before
	// the controller is enqueued (for expectations).
	OnCreate func(owner O, obj metav1.Object)
	// OnDelete, likewise, of a deleted object's controller.
	OnDelete func(owner O, obj metav1.Object)
	// OnUpdate, if set, is told of a changed object's controller after it
	// was enqueued (to look again once a pod has been ready for
	// minReadySeconds, say).
	OnUpdate func(owner O, old, cur metav1.Object)
	// TerminatingIsDeleted handles an update that sets the object's
	// deletionTimestamp as its deletion: the owner replaces it now, not
	// once it is gone.
	TerminatingIsDeleted bool
}

// Resolve returns the owner ref names, if ref is of the owners' kind and
// the cache has that owner with the same UID.
func (r *OwnerRouter[O]) Resolve(namespace string, ref *metav1.OwnerReference) (O, bool) {
	var none O
	if ref == nil || ref.Kind != r.Kind {
		return none, false
	}
	owner, err := r.Get(namespace, ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return none, false
	}
	return owner, true
}

// Add routes an object seen for the first time. One that is being
// deleted already (seen after a restart, say) is no creation: it is
// routed as deleted.
func (r *OwnerRouter[O]) Add(obj any) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if o.GetDeletionTimestamp() != nil {
		r.Delete(o)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		if owner, ok := r.Resolve(o.GetNamespace(), ref); ok {
			if r.OnCreate != nil {
				r.OnCreate(owner, o)
			}
			r.Enqueue(owner)
		}
		return
	}
	for _, owner := range r.Matching(o.GetNamespace(), o.GetLabels()) {
		r.Enqueue(owner)
	}
}

// Update routes a change: to the former controller when the controller
// reference changed, to the current controller, or, for an orphan whose
// labels or controller changed, to every owner that may adopt it. Resyncs
// (the same resourceVersion) are ignored.
func (r *OwnerRouter[O]) Update(oldObj, curObj any) {
	old, ok1 := oldObj.(metav1.Object)
	cur, ok2 := curObj.(metav1.Object)
	if !ok1 || !ok2 || old.GetResourceVersion() == cur.GetResourceVersion() {
		return
	}
	if r.TerminatingIsDeleted && cur.GetDeletionTimestamp() != nil {
		r.Delete(cur)
		return
	}
	r.Changed(old, cur)
}

// Changed is Update's routing, without its resync and deletion checks,
// for controllers that handle those themselves.
func (r *OwnerRouter[O]) Changed(old, cur metav1.Object) {
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if owner, ok := r.Resolve(old.GetNamespace(), oldRef); ok {
			r.Enqueue(owner)
		}
	}
	if curRef != nil {
		if owner, ok := r.Resolve(cur.GetNamespace(), curRef); ok {
			r.Enqueue(owner)
			if r.OnUpdate != nil {
				r.OnUpdate(owner, old, cur)
			}
		}
		return
	}
	if refChanged || !reflect.DeepEqual(old.GetLabels(), cur.GetLabels()) {
		for _, owner := range r.Matching(cur.GetNamespace(), cur.GetLabels()) {
			r.Enqueue(owner)
		}
	}
}

// Delete routes a deleted object, or the last state of one whose deletion
// the watch missed, to its controller.
func (r *OwnerRouter[O]) Delete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if owner, ok := r.Resolve(o.GetNamespace(), metav1.GetControllerOfNoCopy(o)); ok {
		if r.OnDelete != nil {
			r.OnDelete(owner, o)
		}
		r.Enqueue(owner)
	}
}

// Handlers are Add, Update and Delete as informer event handlers.
func (r *OwnerRouter[O]) Handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: r.Add, UpdateFunc: r.Update, DeleteFunc: r.Delete}
}

// SelectorMatching returns a Matching for OwnerRouter: the owners listed
// in the namespace whose label selector selects the labels. An object
// without labels, and an owner with an empty or invalid selector, match
// nothing.
func SelectorMatching[O metav1.Object](list func(namespace string) ([]O, error), selector func(O) *metav1.LabelSelector) func(string, map[string]string) []O {
	return func(namespace string, lbls map[string]string) []O {
		if len(lbls) == 0 {
			return nil
		}
		all, err := list(namespace)
		if err != nil {
			return nil
		}
		var out []O
		for _, owner := range all {
			sel, err := metav1.LabelSelectorAsSelector(selector(owner))
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(lbls)) {
				continue
			}
			out = append(out, owner)
		}
		return out
	}
}
