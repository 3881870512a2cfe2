package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Owners are the objects a Controller keeps replicas for, seen as
// ReplicaSets: apps/v1 ReplicaSets (ReplicaSets), or another kind that the
// implementation converts on the way in and out, as controllers/replication
// does for core/v1 ReplicationControllers (upstream's ReplicationManager
// runs its ReplicaSet controller over them the same way).
// Implementations are safe for concurrent use.
type Owners interface {
	// Kind is the owners' group, version and kind, which their pods'
	// controller references name.
	Kind() schema.GroupVersionKind
	// Informer is the owners' shared informer, holding objects of their
	// own type; the controller adds an index and event handlers to it.
	Informer() cache.SharedIndexInformer
	// AsReplicaSet is an object of the informer seen as a ReplicaSet,
	// false for an object of another type. The result may share the
	// cached object's maps and slices: never modify it.
	AsReplicaSet(obj any) (*appsv1.ReplicaSet, bool)
	// Object is rs as the owners' own type: the object events name.
	Object(rs *appsv1.ReplicaSet) runtime.Object
	// Get reads an owner from the apiserver.
	Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// UpdateStatus writes rs.Status through the status subresource and
	// returns the owner as written.
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// TerminatingReplicas reports whether the owners' status has
	// terminatingReplicas (a ReplicationController's has not).
	TerminatingReplicas() bool
}

// ReplicaSets are the apps/v1 ReplicaSets of informer, read and written
// through client.
func ReplicaSets(client kubernetes.Interface, informer appsinformers.ReplicaSetInformer) Owners {
	return replicaSets{client: client, informer: informer.Informer()}
}

type replicaSets struct {
	client   kubernetes.Interface
	informer cache.SharedIndexInformer
}

func (replicaSets) Kind() schema.GroupVersionKind         { return controllerKind }
func (o replicaSets) Informer() cache.SharedIndexInformer { return o.informer }
func (replicaSets) TerminatingReplicas() bool             { return true }

func (replicaSets) AsReplicaSet(obj any) (*appsv1.ReplicaSet, bool) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	return rs, ok
}

func (replicaSets) Object(rs *appsv1.ReplicaSet) runtime.Object { return rs }

func (o replicaSets) Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return o.client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o replicaSets) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return o.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}
