package metricsapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// scrape renders a /metrics/resource body as the agent serves it.
func scrape(nodeCPU float64, nodeMem int, at time.Time, containers ...string) []byte {
	ms := at.UnixMilli()
	body := "# TYPE node_cpu_usage_seconds_total counter\n" +
		"node_cpu_usage_seconds_total " + ftoa(nodeCPU) + " " + itoa(ms) + "\n" +
		"# TYPE node_memory_working_set_bytes gauge\n" +
		"node_memory_working_set_bytes " + itoa(int64(nodeMem)) + " " + itoa(ms) + "\n"
	for _, c := range containers {
		body += c + "\n"
	}
	return []byte(body)
}

func ftoa(f float64) string { b, _ := json.Marshal(f); return string(b) }
func itoa(i int64) string   { b, _ := json.Marshal(i); return string(b) }

func TestDecode(t *testing.T) {
	at := time.UnixMilli(1700000000000)
	body := scrape(12.5, 1000, at,
		`# TYPE container_cpu_usage_seconds_total counter`,
		`container_cpu_usage_seconds_total{container="c",namespace="ns",pod="p"} 2.5 1700000000000`,
		`container_cpu_usage_seconds_total{container="nomem",namespace="ns",pod="p"} 1 1700000000000`,
		`# TYPE container_memory_working_set_bytes gauge`,
		`container_memory_working_set_bytes{container="c",namespace="ns",pod="p"} 300 1700000000000`,
		`# TYPE container_start_time_seconds gauge`,
		`container_start_time_seconds{container="c",namespace="ns",pod="p"} 1.6999999995e+09`,
		`# TYPE resource_scrape_error gauge`,
		`resource_scrape_error 0`,
	)
	b, err := decode(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b.node == nil || b.node.cpu != 12.5e9 || b.node.memory != 1000 || !b.node.at.Equal(at) {
		t.Errorf("node point %+v", b.node)
	}
	if len(b.containers) != 1 {
		t.Fatalf("containers %+v: one without memory must be left out", b.containers)
	}
	p := b.containers[containerKey{"ns", "p", "c"}]
	if p.cpu != 2.5e9 || p.memory != 300 || !p.at.Equal(at) || p.started.Unix() != 1699999999 {
		t.Errorf("container point %+v", p)
	}
	if _, err := decode([]byte("not { metrics"), time.Now()); err == nil {
		t.Error("garbage decoded")
	}
}

func TestStorageRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	started := t0.Add(-time.Hour)
	startedNew := t0.Add(5 * time.Second)
	s := newStorage()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	newPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns"}}
	ck := containerKey{"ns", "p", "c"}
	nk := containerKey{"ns", "new", "c"}

	s.store("n", nodeBatch{node: &point{at: t0, cpu: 100e9, memory: 10}, containers: map[containerKey]point{
		ck: {at: t0, cpu: 10e9, memory: 5, started: started},
	}}, t0)
	if got := s.nodeMetrics([]*corev1.Node{node}); len(got) != 0 {
		t.Errorf("node metrics from one point: %+v", got)
	}
	if got := s.podMetrics([]*corev1.Pod{pod}); len(got) != 0 {
		t.Errorf("pod metrics from one point of an old container: %+v", got)
	}

	t1 := t0.Add(15 * time.Second)
	s.store("n", nodeBatch{node: &point{at: t1, cpu: 115e9, memory: 20}, containers: map[containerKey]point{
		ck: {at: t1, cpu: 13e9, memory: 6, started: started},
		// Started after the previous scrape: its start is its first point.
		nk: {at: t1, cpu: 5e9, memory: 7, started: startedNew},
	}}, t1)
	nm := s.nodeMetrics([]*corev1.Node{node})
	if len(nm) != 1 || nm[0].Usage.Cpu().MilliValue() != 1000 || nm[0].Usage.Memory().Value() != 20 ||
		nm[0].Window.Duration != 15*time.Second || !nm[0].Timestamp.Time.Equal(t1) {
		t.Fatalf("node metrics %+v", nm)
	}
	pm := s.podMetrics([]*corev1.Pod{pod, newPod})
	if len(pm) != 2 {
		t.Fatalf("pod metrics %+v", pm)
	}
	// Sorted by namespace and name: "new", then "p".
	if got := pm[1].Containers[0].Usage.Cpu().MilliValue(); pm[1].Name != "p" || got != 200 || pm[1].Window.Duration != 15*time.Second {
		t.Errorf("old pod cpu %dm window %v, want 200m over 15s", got, pm[1].Window.Duration)
	}
	if got := pm[0].Containers[0].Usage.Cpu().MilliValue(); pm[0].Name != "new" || got != 500 || pm[0].Window.Duration != 10*time.Second {
		t.Errorf("new pod cpu %dm window %v, want 500m over 10s", got, pm[0].Window.Duration)
	}

	// A restart (new start time, counter back to low) gives no negative rate.
	t2 := t1.Add(15 * time.Second)
	s.store("n", nodeBatch{node: &point{at: t2, cpu: 130e9, memory: 20}, containers: map[containerKey]point{
		ck: {at: t2, cpu: 1e9, memory: 6, started: t2.Add(-2 * time.Second)},
	}}, t2)
	pm = s.podMetrics([]*corev1.Pod{pod, newPod})
	if len(pm) != 1 || pm[0].Name != "p" || pm[0].Containers[0].Usage.Cpu().MilliValue() != 500 {
		t.Errorf("after a restart and a removal: %+v", pm)
	}

	// A node gone from the cluster is forgotten.
	s.forget(map[string]bool{})
	if got := s.nodeMetrics([]*corev1.Node{node}); len(got) != 0 {
		t.Errorf("forgotten node still has metrics: %+v", got)
	}
}

func TestHandler(t *testing.T) {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, n := range []string{"a", "b"} {
		_ = nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": n}}})
	}
	for _, p := range []struct{ ns, name, app string }{{"x", "p1", "web"}, {"x", "p2", "db"}, {"y", "p3", "web"}} {
		_ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app}}})
	}
	api, err := New(Config{}, corelisters.NewNodeLister(nodes), corelisters.NewPodLister(pods))
	if err != nil {
		t.Fatal(err)
	}
	t0, t1 := time.Unix(1000, 0), time.Unix(1015, 0)
	for i, at := range []time.Time{t0, t1} {
		for _, n := range []string{"a", "b"} {
			cs := map[containerKey]point{}
			for _, p := range []struct{ ns, name string }{{"x", "p1"}, {"x", "p2"}, {"y", "p3"}} {
				cs[containerKey{p.ns, p.name, "c"}] = point{at: at, cpu: uint64(i) * 15e9, memory: 1 << 20}
			}
			if n == "b" {
				cs = nil
			}
			api.store.store(n, nodeBatch{node: &point{at: at, cpu: uint64(i) * 30e9, memory: 1 << 30}, containers: cs}, at)
		}
	}
	for _, tc := range []struct {
		path  string
		code  int
		names []string
	}{
		{"/apis/metrics.k8s.io/v1beta1/nodes", 200, []string{"a", "b"}},
		{"/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=zone%3Db", 200, []string{"b"}},
		{"/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=metadata.name%3Da", 200, []string{"a"}},
		{"/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=spec.unschedulable%3Dfalse", 400, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes/a", 200, []string{"a"}},
		{"/apis/metrics.k8s.io/v1beta1/nodes/zz", 404, nil},
		{"/apis/metrics.k8s.io/v1beta1/pods", 200, []string{"p1", "p2", "p3"}},
		{"/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3Dweb", 200, []string{"p1", "p3"}},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/x/pods", 200, []string{"p1", "p2"}},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/x/pods?fieldSelector=metadata.name%3Dp2", 200, []string{"p2"}},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/y/pods/p3", 200, []string{"p3"}},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/y/pods/p1", 404, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes?watch=true", 405, nil},
		{"/apis/metrics.k8s.io/v1beta1/services", 404, nil},
	} {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s: code %d, want %d: %s", tc.path, rec.Code, tc.code, rec.Body)
			continue
		}
		if tc.code != 200 {
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || int(st.Code) != tc.code {
				t.Errorf("%s: not a Status: %s", tc.path, rec.Body)
			}
			continue
		}
		var obj struct {
			Kind     string
			Metadata metav1.ObjectMeta
			Items    []struct{ Metadata metav1.ObjectMeta }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &obj); err != nil {
			t.Fatal(err)
		}
		var names []string
		if len(obj.Items) > 0 || obj.Metadata.Name == "" {
			for _, it := range obj.Items {
				names = append(names, it.Metadata.Name)
			}
		} else {
			names = []string{obj.Metadata.Name}
		}
		if len(names) != len(tc.names) {
			t.Errorf("%s: got %v, want %v", tc.path, names, tc.names)
			continue
		}
		for i := range names {
			if names[i] != tc.names[i] {
				t.Errorf("%s: got %v, want %v", tc.path, names, tc.names)
				break
			}
		}
	}
	// One node's full object: what kubectl top reads.
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes/a", nil))
	var nm metricsv1beta1.NodeMetrics
	if err := json.Unmarshal(rec.Body.Bytes(), &nm); err != nil {
		t.Fatal(err)
	}
	if nm.Kind != "NodeMetrics" || nm.APIVersion != "metrics.k8s.io/v1beta1" || nm.Usage.Cpu().MilliValue() != 2000 ||
		nm.Usage.Memory().Value() != 1<<30 || nm.Window.Duration != 15*time.Second || !nm.Timestamp.Time.Equal(t1) {
		t.Errorf("node metrics %+v", nm)
	}
	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/metrics.k8s.io/v1beta1", nil))
	var rl metav1.APIResourceList
	if err := json.Unmarshal(rec.Body.Bytes(), &rl); err != nil || rl.GroupVersion != "metrics.k8s.io/v1beta1" || len(rl.APIResources) != 2 {
		t.Errorf("resource list %s: %v", rec.Body, err)
	}
}
