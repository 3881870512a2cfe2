package node

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// kind is the type of an object a pod can reference.
type kind uint8

const (
	kindPod kind = iota
	kindSecret
	kindConfigMap
	kindPVC
	kindServiceAccount
)

// ref names a namespaced object of some kind.
type ref struct {
	kind      kind
	namespace string
	name      string
}

// podEntry is what the index remembers of a pod bound to a node.
type podEntry struct {
	node string
	refs []ref // the pod itself first, then what it references
}

// pvEntry is what the index remembers of a bound PersistentVolume.
type pvEntry struct {
	claim   ref   // the PVC it is bound to
	secrets []ref // secrets the kubelet reads to mount it
}

// index relates objects to the nodes whose pods use them. Safe for
// concurrent use; lookups take a read lock and a few map reads.
type index struct {
	mu sync.RWMutex
	// pods maps namespace/name of a pod to its entry.
	pods map[string]podEntry
	// users counts, per object, how many pods on each node reference it.
	users map[ref]map[string]int
	// pvs maps a PersistentVolume name to its entry.
	pvs map[string]pvEntry
	// pvsBySecret maps a secret to the names of the PVs that use it.
	pvsBySecret map[ref]map[string]struct{}
}

func newIndex() *index {
	return &index{
		pods:        map[string]podEntry{},
		users:       map[ref]map[string]int{},
		pvs:         map[string]pvEntry{},
		pvsBySecret: map[ref]map[string]struct{}{},
	}
}

// usedBy reports whether a pod on node references r (or, for kindPod, is r).
func (x *index) usedBy(node string, r ref) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.usedByLocked(node, r)
}

func (x *index) usedByLocked(node string, r ref) bool {
	return x.users[r][node] > 0
}

// secretUsedBy reports whether a pod on node references the secret directly,
// or through a PVC bound to a PV that needs the secret.
func (x *index) secretUsedBy(node, namespace, name string) bool {
	r := ref{kindSecret, namespace, name}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.usedByLocked(node, r) {
		return true
	}
	for pv := range x.pvsBySecret[r] {
		if x.usedByLocked(node, x.pvs[pv].claim) {
			return true
		}
	}
	return false
}

// pvUsedBy reports whether the PV is bound to a claim used by a pod on node.
func (x *index) pvUsedBy(node, name string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.pvs[name]
	return ok && x.usedByLocked(node, e.claim)
}

func (x *index) setPod(pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	var entry podEntry
	if pod.Spec.NodeName != "" {
		entry = podEntry{node: pod.Spec.NodeName, refs: podRefs(pod)}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had := x.pods[key]
	if had && old.node == entry.node && slices.Equal(old.refs, entry.refs) {
		return
	}
	if had {
		x.dropLocked(old)
		delete(x.pods, key)
	}
	if entry.node == "" {
		return
	}
	x.pods[key] = entry
	for _, r := range entry.refs {
		m := x.users[r]
		if m == nil {
			m = map[string]int{}
			x.users[r] = m
		}
		m[entry.node]++
	}
}

func (x *index) deletePod(namespace, name string) {
	key := namespace + "/" + name
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.pods[key]; ok {
		x.dropLocked(old)
		delete(x.pods, key)
	}
}

func (x *index) dropLocked(e podEntry) {
	for _, r := range e.refs {
		m := x.users[r]
		if m[e.node]--; m[e.node] <= 0 {
			delete(m, e.node)
		}
		if len(m) == 0 {
			delete(x.users, r)
		}
	}
}

func (x *index) setPV(pv *corev1.PersistentVolume) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deletePVLocked(pv.Name)
	if pv.Spec.ClaimRef == nil {
		return
	}
	e := pvEntry{
		claim:   ref{kindPVC, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name},
		secrets: pvSecretRefs(pv),
	}
	x.pvs[pv.Name] = e
	for _, s := range e.secrets {
		m := x.pvsBySecret[s]
		if m == nil {
			m = map[string]struct{}{}
			x.pvsBySecret[s] = m
		}
		m[pv.Name] = struct{}{}
	}
}

func (x *index) deletePV(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deletePVLocked(name)
}

func (x *index) deletePVLocked(name string) {
	old, ok := x.pvs[name]
	if !ok {
		return
	}
	for _, s := range old.secrets {
		delete(x.pvsBySecret[s], name)
		if len(x.pvsBySecret[s]) == 0 {
			delete(x.pvsBySecret, s)
		}
	}
	delete(x.pvs, name)
}

// podHandler feeds pod events into the index.
func (x *index) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				x.setPod(pod)
			}
		},
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				x.setPod(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				x.deletePod(pod.Namespace, pod.Name)
			}
		},
	}
}

// pvHandler feeds PersistentVolume events into the index.
func (x *index) pvHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pv, ok := obj.(*corev1.PersistentVolume); ok {
				x.setPV(pv)
			}
		},
		UpdateFunc: func(_, obj any) {
			if pv, ok := obj.(*corev1.PersistentVolume); ok {
				x.setPV(pv)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pv, ok := obj.(*corev1.PersistentVolume); ok {
				x.deletePV(pv.Name)
			}
		},
	}
}
