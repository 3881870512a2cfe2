package proxy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/knftables"
)

// recordingNFT is knftables' fake, keeping the text of every transaction.
// While held, its listings wait until released.
type recordingNFT struct {
	*knftables.Fake
	mu      sync.Mutex
	txs     []string
	gate    chan struct{} // closed on release; nil: not held
	waiting int           // listings waiting at the gate
}

// hold makes listings wait until the returned release is called.
func (r *recordingNFT) hold() (release func()) {
	gate := make(chan struct{})
	r.mu.Lock()
	r.gate = gate
	r.mu.Unlock()
	return sync.OnceFunc(func() {
		r.mu.Lock()
		r.gate = nil
		r.mu.Unlock()
		close(gate)
	})
}

func (r *recordingNFT) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}

func (r *recordingNFT) wait(ctx context.Context) {
	r.mu.Lock()
	gate := r.gate
	if gate != nil {
		r.waiting++
	}
	r.mu.Unlock()
	if gate == nil {
		return
	}
	select {
	case <-gate:
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.waiting--
	r.mu.Unlock()
}

func (r *recordingNFT) ListAll(ctx context.Context) (map[string][]string, error) {
	r.wait(ctx)
	return r.Fake.ListAll(ctx)
}

func (r *recordingNFT) ListRules(ctx context.Context, chain string) ([]*knftables.Rule, error) {
	r.wait(ctx)
	return r.Fake.ListRules(ctx, chain)
}

func (r *recordingNFT) ListElements(ctx context.Context, typ, name string) ([]*knftables.Element, error) {
	r.wait(ctx)
	return r.Fake.ListElements(ctx, typ, name)
}

func (r *recordingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	r.mu.Lock()
	r.txs = append(r.txs, tx.String())
	r.mu.Unlock()
	return r.Fake.Run(ctx, tx)
}

func (r *recordingNFT) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.txs[n:]...)
}

func (r *recordingNFT) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.txs)
}

type fakeConntrack struct {
	mu      sync.Mutex
	cleared [][]udpFrontend
}

func (f *fakeConntrack) ClearStale(fe []udpFrontend) error {
	f.mu.Lock()
	f.cleared = append(f.cleared, fe)
	f.mu.Unlock()
	return nil
}

type testProxy struct {
	*Proxy
	nft    *recordingNFT
	ct     *fakeConntrack
	client *fake.Clientset
	cancel func()
	done   chan error
}

func startTestProxy(t *testing.T, objs ...any) *testProxy {
	t.Helper()
	return startTestProxyWithClock(t, clock.RealClock{}, objs...)
}

func startTestProxyWithClock(t *testing.T, clk clock.WithTicker, objs ...any) *testProxy {
	t.Helper()
	cfg := testConfig()
	cfg.HealthzBindAddress = "-"
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			_, err = client.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *discoveryv1.EndpointSlice:
			_, err = client.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	nft := &recordingNFT{Fake: knftables.NewFake(knftables.IPv4Family, DefaultTable)}
	ct := &fakeConntrack{}
	p, err := New(*cfg, Deps{
		Services:       factory.Core().V1().Services().Informer(),
		EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
		NFTables:       func(knftables.Family, string) (knftables.Interface, error) { return nft, nil },
		Conntrack:      ct,
		Sysctl:         func(string, string) error { return nil },
		Clock:          clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Register(metrics.NewKubeRegistry())
	factory.Start(ctx.Done())
	tp := &testProxy{Proxy: p, nft: nft, ct: ct, client: client, cancel: cancel, done: make(chan error, 1)}
	go func() { tp.done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-tp.done; err != nil {
			t.Error(err)
		}
		factory.Shutdown()
	})
	select {
	case <-p.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("proxy not ready")
	}
	return tp
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBaseTable(t *testing.T) {
	tp := startTestProxy(t)
	dump := tp.nft.Dump()
	for _, want := range []string{
		"add chain ip k1s-proxy nat-prerouting { type nat hook prerouting priority -100 ; }",
		"add chain ip k1s-proxy filter-forward { type filter hook forward priority 0 ; }",
		"add rule ip k1s-proxy nat-prerouting jump services",
		"add rule ip k1s-proxy nat-output jump services",
		"add rule ip k1s-proxy nat-postrouting jump masquerading",
		"add rule ip k1s-proxy filter-forward ct state new jump cluster-ips-check",
		"add rule ip k1s-proxy cluster-ips-check ip daddr { 10.43.0.10 } return",
		"add rule ip k1s-proxy cluster-ips-check ip daddr @cluster-ips reject",
		"add rule ip k1s-proxy cluster-ips-check ip daddr { 10.43.0.0/16 } reject",
		"add rule ip k1s-proxy services ip daddr @cluster-ips ip saddr != 10.42.0.0/16 mark set mark or 0x00004000",
		"add rule ip k1s-proxy services ip daddr . meta l4proto . th dport vmap @service-ips",
		"add rule ip k1s-proxy services ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
		"add rule ip k1s-proxy masquerading mark and 0x00004000 != 0 mark set mark xor 0x00004000 masquerade fully-random",
		"add rule ip k1s-proxy masquerading ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random",
		"add element ip k1s-proxy nodeport-ips { 192.0.2.10 }",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("table lacks %q:\n%s", want, dump)
		}
	}
}

func TestIncrementalSync(t *testing.T) {
	a := testService(nil)
	b := testService(func(s *corev1.Service) {
		s.Name, s.Spec.ClusterIP, s.Spec.ClusterIPs = "api", "10.43.0.30", []string{"10.43.0.30"}
		s.Spec.Ports[0].Protocol = corev1.ProtocolUDP
	})
	sa := testSlice(localReady, remoteReady)
	sb := testSlice(remoteReady)
	sb.Name, sb.Labels[discoveryv1.LabelServiceName] = "api-abc", "api"
	sb.Ports[0].Protocol = &b.Spec.Ports[0].Protocol
	// The kube-dns Service at the exempt address is left to the node's DNS.
	dns := testService(func(s *corev1.Service) {
		s.Namespace, s.Name, s.Spec.ClusterIP, s.Spec.ClusterIPs = "kube-system", "kube-dns", "10.43.0.10", []string{"10.43.0.10"}
	})
	tp := startTestProxy(t, a, b, sa, sb, dns)
	dump := tp.nft.Dump()
	for _, want := range []string{"ns/web/tcp/http", "ns/api/udp/http", "10.43.0.30 . udp . 80"} {
		if !strings.Contains(dump, want) {
			t.Fatalf("first sync lacks %q:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "kube-dns") || strings.Contains(dump, "element ip k1s-proxy cluster-ips { 10.43.0.10 }") {
		t.Errorf("the cluster DNS service was programmed:\n%s", dump)
	}

	// One endpoint of api changes: one transaction, about api only.
	n := tp.nft.count()
	sb.Endpoints[0].Addresses = []string{"10.42.1.99"}
	if _, err := tp.client.DiscoveryV1().EndpointSlices("ns").Update(context.Background(), sb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update written", func() bool { return strings.Contains(tp.nft.Dump(), "10.42.1.99:8080") })
	txs := tp.nft.since(n)
	if len(txs) != 1 {
		t.Fatalf("transactions = %d, want 1:\n%s", len(txs), strings.Join(txs, "\n---\n"))
	}
	if strings.Contains(txs[0], "ns/web/") || strings.Contains(txs[0], "flush table") || strings.Contains(txs[0], "delete table") {
		t.Errorf("the update rewrote more than api:\n%s", txs[0])
	}
	if !strings.Contains(txs[0], "flush chain ip k1s-proxy service-") || !strings.Contains(txs[0], "ns/api/udp/http") {
		t.Errorf("api's chain not rewritten:\n%s", txs[0])
	}
	// A UDP service's endpoints changed: its stale flows are cleared.
	waitFor(t, "conntrack clean-up", func() bool {
		tp.ct.mu.Lock()
		defer tp.ct.mu.Unlock()
		for _, c := range tp.ct.cleared {
			for _, f := range c {
				if len(f.endpoints) == 1 && f.endpoints[0] == "10.42.1.99:8080" && f.ips[0] == "10.43.0.30" {
					return true
				}
			}
		}
		return false
	})

	// Deleting web: its element goes at once, its chain is flushed and
	// deleted a moment later.
	if err := tp.client.CoreV1().Services("ns").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web's elements removed", func() bool { return !strings.Contains(tp.nft.Dump(), "10.43.0.20") })
	waitFor(t, "web's chain deleted", func() bool { return !strings.Contains(tp.nft.Dump(), "ns/web/") })
	// The hairpin element web shared with nobody went with it.
	if strings.Contains(tp.nft.Dump(), "hairpin-connections { 10.42.0.5") {
		t.Errorf("hairpin element left:\n%s", tp.nft.Dump())
	}
}

func TestSharedElementsAreReferenceCounted(t *testing.T) {
	// Two Services select the same local pod port: one hairpin element.
	a := testService(nil)
	b := testService(func(s *corev1.Service) {
		s.Name, s.Spec.ClusterIP, s.Spec.ClusterIPs = "web2", "10.43.0.21", []string{"10.43.0.21"}
	})
	sa := testSlice(localReady)
	sb := testSlice(localReady)
	sb.Name, sb.Labels[discoveryv1.LabelServiceName] = "web2-abc", "web2"
	tp := startTestProxy(t, a, b, sa, sb)
	hairpin := "add element ip k1s-proxy hairpin-connections { 10.42.0.5 . 10.42.0.5 . tcp . 8080 }"
	if strings.Count(tp.nft.Dump(), hairpin) != 1 {
		t.Fatalf("want one hairpin element:\n%s", tp.nft.Dump())
	}
	if err := tp.client.CoreV1().Services("ns").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web removed", func() bool { return !strings.Contains(tp.nft.Dump(), "10.43.0.20") })
	if !strings.Contains(tp.nft.Dump(), hairpin) {
		t.Errorf("web2's hairpin element went with web:\n%s", tp.nft.Dump())
	}
	if err := tp.client.CoreV1().Services("ns").Delete(context.Background(), "web2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hairpin element removed with the last user", func() bool { return !strings.Contains(tp.nft.Dump(), hairpin) })
}

func TestFailedWriteFallsBackToFullSync(t *testing.T) {
	tp := startTestProxy(t, testService(nil), testSlice(remoteReady))
	// Someone deletes the table behind the proxy's back: the next partial
	// write fails, and the one after writes everything again.
	tx := tp.nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := tp.nft.Fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	s := testSlice(remoteReady, testEP{ip: "10.42.1.8", node: "n2", ready: true, serving: true})
	if _, err := tp.client.DiscoveryV1().EndpointSlices("ns").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the table written whole again", func() bool {
		d := tp.nft.Dump()
		return strings.Contains(d, "nat-prerouting jump services") && strings.Contains(d, "10.42.1.8 . 8080")
	})
}

// checksJudged is how many consistency checks the proxy has acted on.
func (tp *testProxy) checksJudged() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.checks
}

func (tp *testProxy) drifts(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(tp.metrics.drift)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// apiService is a second Service, with one endpoint.
func apiService() (*corev1.Service, *discoveryv1.EndpointSlice) {
	svc := testService(func(s *corev1.Service) {
		s.Name, s.Spec.ClusterIP, s.Spec.ClusterIPs = "api", "10.43.0.30", []string{"10.43.0.30"}
	})
	sl := testSlice(remoteReady)
	sl.Name, sl.Labels[discoveryv1.LabelServiceName] = "api-abc", "api"
	return svc, sl
}

func (tp *testProxy) create(t *testing.T, svc *corev1.Service, sl *discoveryv1.EndpointSlice) {
	t.Helper()
	ctx := context.Background()
	if _, err := tp.client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.client.DiscoveryV1().EndpointSlices(sl.Namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startHeldCheck starts a consistency check whose listings wait until
// the returned release is called.
func (tp *testProxy) startHeldCheck(t *testing.T, clk *clocktesting.FakeClock) (release func()) {
	t.Helper()
	release = tp.nft.hold()
	t.Cleanup(release)
	clk.Step(tp.cfg.SyncPeriod)
	waitFor(t, "the check listing the table", func() bool { return tp.nft.held() > 0 })
	return release
}

func TestSyncsDoNotWaitForTheCheck(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	tp := startTestProxyWithClock(t, clk, testService(nil), testSlice(remoteReady))
	release := tp.startHeldCheck(t, clk)

	// A Service made while the check waits for the kernel is written at
	// once.
	api, apiSlice := apiService()
	tp.create(t, api, apiSlice)
	waitFor(t, "api written during the check", func() bool {
		d := tp.nft.Dump()
		return strings.Contains(d, "ns/api/tcp/http") && strings.Contains(d, "10.43.0.30 . tcp . 80")
	})
	if tp.nft.held() == 0 || tp.checksJudged() != 0 {
		t.Fatal("the check ended before it was released")
	}

	// The check then lists api's chains and elements, which were not
	// there when it started: that is no drift.
	n := tp.nft.count()
	release()
	waitFor(t, "the check judged", func() bool { return tp.checksJudged() == 1 })
	if d := tp.drifts(t); d != 0 {
		t.Errorf("drift reported %v times for a Service written during the check", d)
	}
	// A change after the verdict is written alone, not with the whole table.
	s := testSlice(remoteReady, testEP{ip: "10.42.1.8", node: "n2", ready: true, serving: true})
	if _, err := tp.client.DiscoveryV1().EndpointSlices("ns").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update written", func() bool { return strings.Contains(tp.nft.Dump(), "10.42.1.8 . 8080") })
	for _, tx := range tp.nft.since(n) {
		if strings.Contains(tx, "delete table") {
			t.Errorf("the table was written whole after the check:\n%s", tx)
		}
	}
}

func TestCheckFindsDriftBesideWrites(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	tp := startTestProxyWithClock(t, clk, testService(nil), testSlice(remoteReady))
	release := tp.startHeldCheck(t, clk)

	// While the check waits, someone deletes web's service-ips element
	// behind the proxy's back, and api is written.
	api, apiSlice := apiService()
	tx := tp.nft.NewTransaction()
	tx.Delete(&knftables.Element{Map: mapServiceIPs, Key: []string{"10.43.0.20", "tcp", "80"}})
	if err := tp.nft.Fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	tp.create(t, api, apiSlice)
	waitFor(t, "api written during the check", func() bool { return strings.Contains(tp.nft.Dump(), "10.43.0.30 . tcp . 80") })

	// The write does not hide the element the proxy did not write: the
	// table is written whole again.
	n := tp.nft.count()
	release()
	waitFor(t, "the table written whole", func() bool {
		for _, tx := range tp.nft.since(n) {
			if strings.Contains(tx, "delete table") {
				return true
			}
		}
		return false
	})
	d := tp.nft.Dump()
	for _, want := range []string{"service-ips { 10.43.0.20 . tcp . 80", "service-ips { 10.43.0.30 . tcp . 80"} {
		if !strings.Contains(d, want) {
			t.Errorf("table lacks %q after the rewrite:\n%s", want, d)
		}
	}
	if v := tp.drifts(t); v != 1 {
		t.Errorf("drift counted %v times, want 1", v)
	}
}
