// Package autoscaling owns validation of the autoscaling/v1 Scale object,
// the body of the scale subresource of Deployments, ReplicaSets,
// StatefulSets and ReplicationControllers. k1s serves no
// HorizontalPodAutoscaler, so nothing else of the group lives here.
//
// Behaviour follows upstream Kubernetes v1.37: only managed fields and
// spec.replicas are checked, because the scale handler ignores the rest of
// the metadata. The code is written for k1s.
package autoscaling
