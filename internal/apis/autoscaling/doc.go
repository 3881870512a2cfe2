// Package autoscaling owns defaulting, validation and version conversion
// for the autoscaling group: the autoscaling/v1 Scale object (the body of
// the scale subresource of Deployments, ReplicaSets, StatefulSets and
// ReplicationControllers) and the HorizontalPodAutoscaler, served as
// autoscaling/v2 (stored, and the form the registry works on) and
// autoscaling/v1.
//
// Behaviour follows upstream Kubernetes v1.37. For Scale only managed
// fields and spec.replicas are checked, because the scale handler ignores
// the rest of the metadata. An HPA defaults to minReplicas 1 and, without
// metrics, an 80 % CPU utilization target; a behavior given is completed
// with the default scaling rules; minReplicas may be 0 (HPAScaleToZero, on
// by default) when an Object or External metric is given. autoscaling/v1
// keeps only the CPU utilization target and current value as fields, the
// other metrics, the behavior and the conditions in annotations (HPAToV1,
// HPAToV2), as upstream. The code is written for k1s.
package autoscaling
