package stats

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/cadvisor/lib/container"
	"github.com/google/cadvisor/lib/container/libcontainer"
	"github.com/opencontainers/cgroups"
	cgroupfs "github.com/opencontainers/cgroups/fs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	cbtestutil "k8s.io/component-base/metrics/testutil"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestResourceMetrics: /metrics/resource's series, names, labels, types
// and timestamps as the kubelet's (the ones metrics-server reads).
func TestResourceMetrics(t *testing.T) {
	at := metav1.NewTime(time.Unix(1700000000, 0))
	started := metav1.NewTime(time.Unix(1600000000, 500000000))
	summary := &statsapi.Summary{
		Node: statsapi.NodeStats{
			CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(12500000000)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(1000)},
		},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "p", Namespace: "ns", UID: "x"},
			CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(3000000000)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(300)},
			Containers: []statsapi.ContainerStats{{
				Name: "c", StartTime: started,
				CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(2000000000)},
				Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(200)},
			}},
		}},
	}
	want := `# HELP container_cpu_usage_seconds_total [STABLE] CPU time the container used in total, in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="c",namespace="ns",pod="p"} 2 1700000000000
# HELP container_memory_working_set_bytes [STABLE] The container's memory working set in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="c",namespace="ns",pod="p"} 200 1700000000000
# HELP container_start_time_seconds [STABLE] When the container started, in seconds since the Unix epoch
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="c",namespace="ns",pod="p"} 1.6000000005e+09
# HELP node_cpu_usage_seconds_total [STABLE] CPU time the node used in total, in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 12.5 1700000000000
# HELP node_memory_working_set_bytes [STABLE] The node's memory working set in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1000 1700000000000
# HELP pod_cpu_usage_seconds_total [STABLE] CPU time the pod used in total, in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="ns",pod="p"} 3 1700000000000
# HELP pod_memory_working_set_bytes [STABLE] The pod's memory working set in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="ns",pod="p"} 300 1700000000000
# HELP resource_scrape_error [STABLE] 1 when reading the containers' usage failed, else 0
# TYPE resource_scrape_error gauge
resource_scrape_error 0
# HELP scrape_error [ALPHA] 1 when reading the containers' usage failed, else 0
# TYPE scrape_error gauge
scrape_error 0
`
	for _, tc := range []struct {
		name string
		fn   SummaryFunc
		want string
	}{
		{"summary", func(context.Context) (*statsapi.Summary, error) { return summary, nil }, want},
		{"error", func(context.Context) (*statsapi.Summary, error) { return nil, errors.New("boom") }, `# HELP resource_scrape_error [STABLE] 1 when reading the containers' usage failed, else 0
# TYPE resource_scrape_error gauge
resource_scrape_error 1
# HELP scrape_error [ALPHA] 1 when reading the containers' usage failed, else 0
# TYPE scrape_error gauge
scrape_error 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := metrics.NewKubeRegistry()
			r.CustomMustRegister(NewResourceMetricsCollector(tc.fn))
			if err := cbtestutil.GatherAndCompare(r, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCadvisorMetrics: cAdvisor's collector over the last samples, with
// the kubelet's labels.
func TestCadvisorMetrics(t *testing.T) {
	p, _, _ := fixture(t)
	if _, err := p.Get(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	r := prometheus.NewRegistry()
	r.MustRegister(p.NewCadvisorCollector()...)
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	seenCA := false
	for _, mf := range mfs {
		found[mf.GetName()] = true
		if mf.GetName() != "container_memory_working_set_bytes" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["id"] == "/kubepods/burstable/poduid-a/cA" {
				seenCA = true
				if labels["container"] != "app" || labels["pod"] != "new" || labels["namespace"] != "ns" || labels["name"] != "cA" || labels["image"] != "busybox" {
					t.Errorf("labels of cA: %v", labels)
				}
				if m.GetGauge().GetValue() != 650 {
					t.Errorf("working set of cA: %v", m.GetGauge().GetValue())
				}
			}
		}
	}
	if !seenCA {
		t.Error("no working-set series for container cA")
	}
	for _, n := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_memory_rss",
		"container_network_receive_bytes_total", "machine_cpu_cores", "machine_memory_bytes"} {
		if !found[n] {
			t.Errorf("no %s", n)
		}
	}
	if n := testutil.CollectAndCount(p.NewCadvisorCollector()[1], "machine_memory_bytes"); n != 1 {
		t.Errorf("machine_memory_bytes series: %d", n)
	}
}

// TestHostCgroups reads this process's own cgroup and the root through
// the real reader: what the e2e test checks against the files, here
// only that it reads.
func TestHostCgroups(t *testing.T) {
	h, err := newHostCgroups()
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	self, err := h.ofPid(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.read(self, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.Memory.Usage == 0 || st.Memory.WorkingSet > st.Memory.Usage {
		t.Errorf("own cgroup %s: usage %d working set %d", self.name, st.Memory.Usage, st.Memory.WorkingSet)
	}
	root, err := h.read(h.root(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if root.Cpu.Usage.Total == 0 {
		t.Error("root cgroup: no CPU time")
	}
	if h.v2 {
		return
	}
	// The same figures as cAdvisor's own libcontainer handler reads, for
	// the root (large and slow-moving: within 2%).
	mgr, err := cgroupfs.NewManager(&cgroups.Cgroup{Resources: &cgroups.Resources{}}, map[string]string{
		"cpuacct": h.root().dirs["cpuacct"], "memory": h.root().dirs["memory"],
	})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := libcontainer.NewHandler(mgr, "/", 0, container.MetricSet{container.CpuUsageMetrics: {}, container.MemoryUsageMetrics: {}}).GetStats()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"usage", root.Memory.Usage, ref.Memory.Usage},
		{"working set", root.Memory.WorkingSet, ref.Memory.WorkingSet},
		{"rss", root.Memory.RSS, ref.Memory.RSS},
		{"cpu", root.Cpu.Usage.Total, ref.Cpu.Usage.Total},
	} {
		if d := float64(c.got) - float64(c.want); d > 0.02*float64(c.want) || -d > 0.02*float64(c.want) {
			t.Errorf("root %s: %d, cAdvisor's handler %d", c.name, c.got, c.want)
		}
	}
	if root.Memory.ContainerData.Pgfault == 0 || root.Memory.ContainerData.Pgfault > ref.Memory.ContainerData.Pgfault {
		t.Errorf("root page faults %d, cAdvisor's handler %d (read after)", root.Memory.ContainerData.Pgfault, ref.Memory.ContainerData.Pgfault)
	}
}
