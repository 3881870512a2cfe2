package stats

import (
	"context"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The series of /metrics/resource: the kubelet's names, labels, types
// and stability levels (the help texts are k1s's).
var (
	nodeCPUDesc = metrics.NewDesc("node_cpu_usage_seconds_total",
		"CPU time the node used in total, in core-seconds", nil, nil, metrics.STABLE, "")
	nodeMemoryDesc = metrics.NewDesc("node_memory_working_set_bytes",
		"The node's memory working set in bytes", nil, nil, metrics.STABLE, "")
	nodeSwapDesc = metrics.NewDesc("node_swap_usage_bytes",
		"Swap the node uses in bytes (not on Windows)", nil, nil, metrics.ALPHA, "")
	containerCPUDesc = metrics.NewDesc("container_cpu_usage_seconds_total",
		"CPU time the container used in total, in core-seconds", []string{"container", "pod", "namespace"}, nil, metrics.STABLE, "")
	containerMemoryDesc = metrics.NewDesc("container_memory_working_set_bytes",
		"The container's memory working set in bytes", []string{"container", "pod", "namespace"}, nil, metrics.STABLE, "")
	containerSwapDesc = metrics.NewDesc("container_swap_usage_bytes",
		"Swap the container uses in bytes (not on Windows)", []string{"container", "pod", "namespace"}, nil, metrics.ALPHA, "")
	containerSwapLimitDesc = metrics.NewDesc("container_swap_limit_bytes",
		"The container's swap limit in bytes (not on Windows)", []string{"container", "pod", "namespace"}, nil, metrics.ALPHA, "")
	podCPUDesc = metrics.NewDesc("pod_cpu_usage_seconds_total",
		"CPU time the pod used in total, in core-seconds", []string{"pod", "namespace"}, nil, metrics.STABLE, "")
	podMemoryDesc = metrics.NewDesc("pod_memory_working_set_bytes",
		"The pod's memory working set in bytes", []string{"pod", "namespace"}, nil, metrics.STABLE, "")
	podSwapDesc = metrics.NewDesc("pod_swap_usage_bytes",
		"Swap the pod uses in bytes (not on Windows)", []string{"pod", "namespace"}, nil, metrics.ALPHA, "")
	scrapeErrorDesc = metrics.NewDesc("scrape_error",
		"1 when reading the containers' usage failed, else 0", nil, nil, metrics.ALPHA, "1.29.0")
	resourceScrapeErrorDesc = metrics.NewDesc("resource_scrape_error",
		"1 when reading the containers' usage failed, else 0", nil, nil, metrics.STABLE, "")
	containerStartDesc = metrics.NewDesc("container_start_time_seconds",
		"When the container started, in seconds since the Unix epoch", []string{"container", "pod", "namespace"}, nil, metrics.STABLE, "")
)

// SummaryFunc returns the CPU and memory summary the resource metrics
// are made of (Provider.GetCPUAndMemoryStats).
type SummaryFunc func(ctx context.Context) (*statsapi.Summary, error)

// NewResourceMetricsCollector returns the collector of /metrics/resource.
func NewResourceMetricsCollector(summary SummaryFunc) metrics.StableCollector {
	return &resourceCollector{summary: summary}
}

type resourceCollector struct {
	metrics.BaseStableCollector
	summary SummaryFunc
}

func (c *resourceCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{nodeCPUDesc, nodeMemoryDesc, nodeSwapDesc, containerCPUDesc, containerMemoryDesc,
		containerSwapDesc, containerSwapLimitDesc, podCPUDesc, podMemoryDesc, podSwapDesc, scrapeErrorDesc,
		resourceScrapeErrorDesc, containerStartDesc} {
		ch <- d
	}
}

func (c *resourceCollector) CollectWithStability(ch chan<- metrics.Metric) {
	var failed float64
	defer func() {
		ch <- metrics.NewLazyConstMetric(scrapeErrorDesc, metrics.GaugeValue, failed)
		ch <- metrics.NewLazyConstMetric(resourceScrapeErrorDesc, metrics.GaugeValue, failed)
	}()
	s, err := c.summary(context.TODO())
	if err != nil {
		klog.Background().Error(err, "Failed to read the stats summary for /metrics/resource")
		failed = 1
		return
	}
	at := func(t time.Time, m metrics.Metric) metrics.Metric { return metrics.NewLazyMetricWithTimestamp(t, m) }
	if cpu := s.Node.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		ch <- at(cpu.Time.Time, metrics.NewLazyConstMetric(nodeCPUDesc, metrics.CounterValue, seconds(*cpu.UsageCoreNanoSeconds)))
	}
	if m := s.Node.Memory; m != nil && m.WorkingSetBytes != nil {
		ch <- at(m.Time.Time, metrics.NewLazyConstMetric(nodeMemoryDesc, metrics.GaugeValue, float64(*m.WorkingSetBytes)))
	}
	if sw := s.Node.Swap; sw != nil && sw.SwapUsageBytes != nil {
		ch <- at(sw.Time.Time, metrics.NewLazyConstMetric(nodeSwapDesc, metrics.GaugeValue, float64(*sw.SwapUsageBytes)))
	}
	for _, pod := range s.Pods {
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		for _, ctr := range pod.Containers {
			if ctr.StartTime.Unix() > 0 {
				ch <- metrics.NewLazyConstMetric(containerStartDesc, metrics.GaugeValue,
					float64(ctr.StartTime.UnixNano())/float64(time.Second), ctr.Name, name, ns)
			}
			if cpu := ctr.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
				ch <- at(cpu.Time.Time, metrics.NewLazyConstMetric(containerCPUDesc, metrics.CounterValue, seconds(*cpu.UsageCoreNanoSeconds), ctr.Name, name, ns))
			}
			if m := ctr.Memory; m != nil && m.WorkingSetBytes != nil {
				ch <- at(m.Time.Time, metrics.NewLazyConstMetric(containerMemoryDesc, metrics.GaugeValue, float64(*m.WorkingSetBytes), ctr.Name, name, ns))
			}
			if sw := ctr.Swap; sw != nil {
				var used float64
				if sw.SwapUsageBytes != nil {
					used = float64(*sw.SwapUsageBytes)
					ch <- at(sw.Time.Time, metrics.NewLazyConstMetric(containerSwapDesc, metrics.GaugeValue, used, ctr.Name, name, ns))
				}
				if sw.SwapAvailableBytes != nil {
					ch <- at(sw.Time.Time, metrics.NewLazyConstMetric(containerSwapLimitDesc, metrics.GaugeValue, float64(*sw.SwapAvailableBytes)+used, ctr.Name, name, ns))
				}
			}
		}
		if cpu := pod.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
			ch <- at(cpu.Time.Time, metrics.NewLazyConstMetric(podCPUDesc, metrics.CounterValue, seconds(*cpu.UsageCoreNanoSeconds), name, ns))
		}
		if m := pod.Memory; m != nil && m.WorkingSetBytes != nil {
			ch <- at(m.Time.Time, metrics.NewLazyConstMetric(podMemoryDesc, metrics.GaugeValue, float64(*m.WorkingSetBytes), name, ns))
		}
		if sw := pod.Swap; sw != nil && sw.SwapUsageBytes != nil {
			ch <- at(sw.Time.Time, metrics.NewLazyConstMetric(podSwapDesc, metrics.GaugeValue, float64(*sw.SwapUsageBytes), name, ns))
		}
	}
}

func seconds(ns uint64) float64 { return float64(ns) / float64(time.Second) }
