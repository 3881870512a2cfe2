package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectReference identifies an object in the graph: the coordinates an
// owner reference gives (apiVersion, kind, name, UID) and the namespace.
type objectReference struct {
	APIVersion string
	Kind       string
	Name       string
	UID        types.UID
	Namespace  string
}

func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// refCoordinates is the part of an owner reference that identifies the
// owner, without the namespace.
func refCoordinates(ref metav1.OwnerReference) objectReference {
	return objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

// matchesCoordinates reports whether ref names the identity's apiVersion,
// kind, name and UID.
func matchesCoordinates(ref metav1.OwnerReference, id objectReference) bool {
	return ref.APIVersion == id.APIVersion && ref.Kind == id.Kind && ref.Name == id.Name && ref.UID == id.UID
}

// node is one object of the graph. Its fields are guarded by the graph's
// lock.
type node struct {
	identity objectReference
	// owners are the object's owner references as last observed.
	owners []metav1.OwnerReference
	// dependents are the nodes whose owner references name this node.
	dependents map[*node]struct{}
	// observed is set once an informer has reported the object; until then
	// the node is virtual (known only from dependents' references).
	observed bool
	// beingDeleted is set once the object has a deletionTimestamp.
	beingDeleted bool
	// deletingDependents is set while the object waits, with the
	// foregroundDeletion finalizer, for its dependents to go.
	deletingDependents bool
}

// nodeView is a consistent copy of a node's fields for workers.
type nodeView struct {
	identity           objectReference
	owners             []metav1.OwnerReference
	dependents         []*node
	observed           bool
	beingDeleted       bool
	deletingDependents bool
}

// graph is the owner/dependent graph, keyed by UID. One goroutine (the
// event processor) changes it; workers read it through view. Safe for
// concurrent use.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func newGraph() *graph { return &graph{nodes: map[types.UID]*node{}} }

// view copies n's fields under the lock.
func (g *graph) view(n *node) nodeView {
	g.mu.RLock()
	defer g.mu.RUnlock()
	v := nodeView{
		identity:           n.identity,
		owners:             append([]metav1.OwnerReference(nil), n.owners...),
		observed:           n.observed,
		beingDeleted:       n.beingDeleted,
		deletingDependents: n.deletingDependents,
	}
	for d := range n.dependents {
		v.dependents = append(v.dependents, d)
	}
	return v
}

// lookup returns the node of uid, if any.
func (g *graph) lookup(uid types.UID) (*node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// blockingDependents returns the dependents of n that block its deletion
// (their reference to n has blockOwnerDeletion).
func (g *graph) blockingDependents(n *node) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*node
	for d := range n.dependents {
		for _, ref := range d.owners {
			if ref.UID == n.identity.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func schemaGroupVersion(apiVersion string) (schema.GroupVersion, error) {
	return schema.ParseGroupVersion(apiVersion)
}
