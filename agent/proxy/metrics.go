package proxy

import (
	"k8s.io/component-base/metrics"
)

// metrics are kube-proxy's own metric names, so dashboards made for it work.
type proxyMetrics struct {
	syncDuration       *metrics.Histogram
	programmingLatency *metrics.Histogram
	lastSync           *metrics.Gauge
	syncFailures       *metrics.Counter
	drift              *metrics.Counter
}

func newMetrics() *proxyMetrics {
	return &proxyMetrics{
		syncDuration: metrics.NewHistogram(&metrics.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_duration_seconds",
			Help:    "SyncProxyRules latency in seconds",
			Buckets: metrics.ExponentialBuckets(0.001, 2, 15), StabilityLevel: metrics.ALPHA,
		}),
		programmingLatency: metrics.NewHistogram(&metrics.HistogramOpts{
			Subsystem: "kubeproxy", Name: "network_programming_duration_seconds",
			Help:    "In Cluster Network Programming Latency in seconds (from the proxy seeing a change to its rules being in the kernel)",
			Buckets: metrics.ExponentialBuckets(0.001, 2, 15), StabilityLevel: metrics.ALPHA,
		}),
		lastSync: metrics.NewGauge(&metrics.GaugeOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced", StabilityLevel: metrics.ALPHA,
		}),
		syncFailures: metrics.NewCounter(&metrics.CounterOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_nftables_sync_failures_total",
			Help: "Total number of nftables sync failures", StabilityLevel: metrics.ALPHA,
		}),
		drift: metrics.NewCounter(&metrics.CounterOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_drift_total",
			Help: "Times the kernel's table differed from what the proxy wrote and was rewritten whole", StabilityLevel: metrics.ALPHA,
		}),
	}
}

// Register adds the proxy's metrics to a registry.
func (p *Proxy) Register(r metrics.KubeRegistry) {
	r.MustRegister(p.metrics.syncDuration, p.metrics.programmingLatency, p.metrics.lastSync, p.metrics.syncFailures, p.metrics.drift)
}
