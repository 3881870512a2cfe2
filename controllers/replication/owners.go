package replication

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/k1s/k1s/controllers/replicaset"
)

// controllerKind is what the pods' controller references name.
var controllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// Owners are the ReplicationControllers of informer as the ReplicaSet
// controller's owners, read and written through client.
func Owners(client kubernetes.Interface, informer coreinformers.ReplicationControllerInformer) replicaset.Owners {
	return owners{client: client, informer: informer.Informer()}
}

type owners struct {
	client   kubernetes.Interface
	informer cache.SharedIndexInformer
}

func (owners) Kind() schema.GroupVersionKind         { return controllerKind }
func (o owners) Informer() cache.SharedIndexInformer { return o.informer }

// TerminatingReplicas: a ReplicationController's status has no
// terminatingReplicas (upstream's leaves it out too).
func (owners) TerminatingReplicas() bool { return false }

func (owners) AsReplicaSet(obj any) (*appsv1.ReplicaSet, bool) {
	rc, ok := obj.(*corev1.ReplicationController)
	if !ok {
		return nil, false
	}
	return toReplicaSet(rc), true
}

func (owners) Object(rs *appsv1.ReplicaSet) runtime.Object { return toReplicationController(rs) }

func (o owners) Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := o.client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

func (o owners) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rc, err := o.client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, toReplicationController(rs), metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

// toReplicaSet is rc seen as a ReplicaSet: its metadata, its selector map
// as matchLabels (none when empty, which validation refuses), its
// template, and its status. The result shares rc's maps and slices.
func toReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if len(rc.Spec.Selector) > 0 {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// toReplicationController is toReplicaSet's inverse, for ReplicaSets it
// made: matchLabels become the selector (a ReplicationController has no
// matchExpressions). Its kind is set, for the events that name it. The
// result shares rs's maps and slices.
func toReplicationController(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	template := rs.Spec.Template
	rc := &corev1.ReplicationController{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: controllerKind.Kind},
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        &template,
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}
