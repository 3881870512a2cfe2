package stats

import (
	"runtime"
	"strings"
	"time"

	"github.com/google/cadvisor/lib/container"
	cadvisormetrics "github.com/google/cadvisor/lib/metrics"
	info "github.com/google/cadvisor/lib/model"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// NewCadvisorCollector returns cAdvisor's own Prometheus collector over
// the provider's last samples: the CPU, memory and network series of
// the node's root cgroup, the pods' sandboxes and their containers, and
// machine_cpu_cores / machine_memory_bytes. Labelled as the kubelet
// labels them: id (the cgroup), name (the container ID), image,
// container, pod, namespace.
func (p *Provider) NewCadvisorCollector() []prometheus.Collector {
	metricsShown := container.MetricSet{
		container.CpuUsageMetrics:     struct{}{},
		container.MemoryUsageMetrics:  struct{}{},
		container.NetworkUsageMetrics: struct{}{},
	}
	src := cadvisorSource{p: p}
	return []prometheus.Collector{
		cadvisormetrics.NewPrometheusCollector(src, kubeletLabels, metricsShown, clock.RealClock{}, info.RequestOptions{}),
		cadvisormetrics.NewPrometheusMachineCollector(src, metricsShown),
	}
}

// kubeletLabels are the kubelet's cAdvisor labels.
func kubeletLabels(c *info.ContainerInfo) map[string]string {
	set := map[string]string{cadvisormetrics.LabelID: c.Name}
	if len(c.Aliases) > 0 {
		set[cadvisormetrics.LabelName] = c.Aliases[0]
	}
	if c.Spec.Image != "" {
		set[cadvisormetrics.LabelImage] = c.Spec.Image
	}
	set["container"] = c.Spec.Labels["io.kubernetes.container.name"]
	set["pod"] = c.Spec.Labels["io.kubernetes.pod.name"]
	set["namespace"] = c.Spec.Labels["io.kubernetes.pod.namespace"]
	return set
}

// cadvisorSource serves the last collection as cAdvisor's info provider.
type cadvisorSource struct{ p *Provider }

func (s cadvisorSource) GetRequestedContainersInfo(string, info.RequestOptions) (map[string]*info.ContainerInfo, error) {
	samples, err := s.p.lastSamples()
	if err != nil {
		return nil, err
	}
	out := make(map[string]*info.ContainerInfo, len(samples))
	for _, sm := range samples {
		ci := &info.ContainerInfo{
			ContainerReference: info.ContainerReference{Name: sm.ref.name},
			Spec: info.ContainerSpec{
				CreationTime: sm.started,
				HasCpu:       true,
				HasMemory:    true,
				HasNetwork:   sm.stats.Network != nil,
				Image:        sm.image,
				Labels:       map[string]string{},
			},
			Stats: []*info.ContainerStats{sm.stats},
		}
		if sm.id != "" {
			ci.Aliases = []string{sm.id}
		}
		if sm.pod.Name != "" {
			ci.Spec.Labels["io.kubernetes.pod.name"] = sm.pod.Name
			ci.Spec.Labels["io.kubernetes.pod.namespace"] = sm.pod.Namespace
			ci.Spec.Labels["io.kubernetes.pod.uid"] = sm.pod.UID
			name := sm.name
			if sm.isSandbox {
				name = "POD"
			}
			ci.Spec.Labels["io.kubernetes.container.name"] = name
		}
		out[sm.ref.name] = ci
	}
	return out, nil
}

func (s cadvisorSource) GetVersionInfo() (*info.VersionInfo, error) {
	return &info.VersionInfo{
		KernelVersion:      kernelVersion(),
		ContainerOsVersion: runtime.GOOS,
		CadvisorVersion:    "k1s",
	}, nil
}

func (s cadvisorSource) GetMachineInfo() (*info.MachineInfo, error) {
	n := s.p.host.numCores()
	return &info.MachineInfo{
		Timestamp:        time.Now(),
		NumCores:         n,
		NumPhysicalCores: n,
		MemoryCapacity:   s.p.host.memoryCapacity(),
	}, nil
}

func kernelVersion() string {
	return strings.TrimSpace(readFirstLine("/proc/sys/kernel/osrelease"))
}
