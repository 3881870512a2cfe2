package prober

import (
	"time"

	"k8s.io/component-base/metrics"
)

// Probe results by outcome, the kubelet's prober_probe_total series
// (served on /metrics/probes); the help text is k1s's.
var (
	ProbeResults = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "prober",
		Name:           "probe_total",
		Help:           "How many times a container's liveness, readiness or startup probe ran, by result.",
		StabilityLevel: metrics.BETA,
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	ProbeDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "prober",
		Name:           "probe_duration_seconds",
		Help:           "How long probes took to answer, in seconds.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"probe_type", "container", "pod", "namespace"})
)

// RegisterMetrics registers the probe series with r (the agent's
// /metrics/probes registry).
func RegisterMetrics(r metrics.KubeRegistry) {
	r.MustRegister(ProbeResults, ProbeDuration)
}

// recordProbe counts one probe run of w.
func (w *worker) recordProbe(ok bool, took time.Duration) {
	result := "failed"
	if ok {
		result = "successful"
		ProbeDuration.WithLabelValues(string(w.key.kind), w.key.container, w.pod.Name, w.pod.Namespace).Observe(took.Seconds())
	}
	ProbeResults.WithLabelValues(string(w.key.kind), result, w.key.container, w.pod.Name, w.pod.Namespace, string(w.pod.UID)).Inc()
}

// forgetMetrics drops w's series once it stops probing, as the kubelet's
// workers do.
func (w *worker) forgetMetrics() {
	for _, result := range []string{"successful", "failed", "unknown"} {
		ProbeResults.Delete(map[string]string{"probe_type": string(w.key.kind), "result": result, "container": w.key.container,
			"pod": w.pod.Name, "namespace": w.pod.Namespace, "pod_uid": string(w.pod.UID)})
	}
}
