package stats

import (
	"context"
	"net"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	msclient "sigs.k8s.io/metrics-server/pkg/scraper/client"
	msresource "sigs.k8s.io/metrics-server/pkg/scraper/client/resource"
	msstorage "sigs.k8s.io/metrics-server/pkg/storage"
)

// TestStockMetricsServerScrapes: a stock metrics-server's kubelet client
// (its scraper, v0.9.0) scrapes our /metrics/resource, served as the agent
// serves it, and reads the node's, the pods' and the containers' usage
// from it as it reads a kubelet's.
func TestStockMetricsServerScrapes(t *testing.T) {
	at := metav1.NewTime(time.Unix(1700000000, 250000000))
	started := metav1.NewTime(time.Unix(1699999000, 0))
	summary := &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName: "n1",
			CPU:      &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(12500000000)},
			Memory:   &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(1 << 30)},
		},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "web", Namespace: "shop", UID: "x"},
			CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(3000000000)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(30 << 20)},
			Containers: []statsapi.ContainerStats{
				{
					Name: "app", StartTime: started,
					CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(2000000000)},
					Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(20 << 20)},
				},
				{
					Name: "sidecar", StartTime: started,
					CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(1000000000)},
					Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(10 << 20)},
				},
			},
		}},
	}
	r := metrics.NewKubeRegistry()
	r.CustomMustRegister(NewResourceMetricsCollector(func(context.Context) (*statsapi.Summary, error) { return summary, nil }))
	srv := httptest.NewServer(metrics.HandlerFor(r, metrics.HandlerOpts{}))
	defer srv.Close()
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	portNum, _ := strconv.Atoi(port)

	scraper, err := msresource.NewForConfig(&msclient.KubeletClientConfig{
		Client:              rest.Config{Timeout: 10 * time.Second},
		AddressTypePriority: []corev1.NodeAddressType{corev1.NodeInternalIP},
		Scheme:              "http",
		DefaultPort:         portNum,
	})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}},
	}
	batch, err := scraper.GetMetrics(context.Background(), node)
	if err != nil {
		t.Fatalf("metrics-server's scrape of /metrics/resource: %v", err)
	}
	if got, want := batch.Nodes["n1"], (msstorage.MetricsPoint{Timestamp: at.Time, CumulativeCPUUsed: 12500000000, MemoryUsage: 1 << 30}); !got.Timestamp.Equal(want.Timestamp) ||
		got.CumulativeCPUUsed != want.CumulativeCPUUsed || got.MemoryUsage != want.MemoryUsage {
		t.Errorf("node point %+v, want %+v", got, want)
	}
	pod, ok := batch.Pods[apitypes.NamespacedName{Namespace: "shop", Name: "web"}]
	if !ok {
		t.Fatalf("pod shop/web missing from the batch: %+v", batch.Pods)
	}
	for name, want := range map[string]msstorage.MetricsPoint{
		"app":     {StartTime: started.Time, Timestamp: at.Time, CumulativeCPUUsed: 2000000000, MemoryUsage: 20 << 20},
		"sidecar": {StartTime: started.Time, Timestamp: at.Time, CumulativeCPUUsed: 1000000000, MemoryUsage: 10 << 20},
	} {
		got, ok := pod.Containers[name]
		if !ok {
			t.Errorf("container %s missing: %+v", name, pod.Containers)
			continue
		}
		if !got.StartTime.Equal(want.StartTime) || !got.Timestamp.Equal(want.Timestamp) ||
			got.CumulativeCPUUsed != want.CumulativeCPUUsed || got.MemoryUsage != want.MemoryUsage {
			t.Errorf("container %s point %+v, want %+v", name, got, want)
		}
	}
}
