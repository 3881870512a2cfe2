// Package metricsapi is k1s's built-in resource metrics API: what
// metrics-server serves, without its image. It scrapes every node's agent
// API /metrics/resource (through the apiserver's nodes/proxy, the path
// logs and exec take to agents, tunnel included) every metric resolution
// (15 s), keeps the last two points of each node and container, and
// serves metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics from them with
// CPU usage as the rate between the two points (timestamp and window as
// metrics-server sets them). The apiserver mounts Handler under
// /apis/metrics.k8s.io/v1beta1 behind a local APIService
// (v1beta1.metrics.k8s.io, no Service); --disable=metrics-server leaves it
// out so that a real metrics-server can take the APIService.
package metricsapi
