// Package podautoscaler is the HorizontalPodAutoscaler controller,
// reproducing kube-controller-manager's horizontal-pod-autoscaler: every
// sync period it reads each HPA's target through the scale subresource
// (any kind that has one, resolved with discovery), computes the replica
// count each metric asks for — resource and container-resource metrics
// (Utilization or AverageValue) from the resource metrics API
// (metrics.k8s.io), pods and object metrics from custom.metrics.k8s.io,
// external metrics from external.metrics.k8s.io — with upstream's
// tolerance, pod readiness and missing-metric rules, then bounds it by the
// stabilization windows, the behavior's scaling policies and
// min/maxReplicas, updates the scale and writes status, conditions
// (AbleToScale, ScalingActive, ScalingLimited) and events with upstream's
// reasons and messages.
//
// Metrics come through MetricsSource; NewAPIMetricsSource is the one that
// reads the metrics APIs, tests inject a fixed one.
package podautoscaler
