// Command dns benchmarks k1s's cluster DNS (agent/dns) against CoreDNS
// with its kubernetes plugin, both serving the same Services from the
// same apiserver, and prints figures for docs/BENCHMARKS.md. Needs root
// and ip(8); build CoreDNS first or let it (below).
//
//	go run -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo ./tests/bench/dns -bin bin/k1s
//
// It starts `k1s server --disable-agent` (control plane only, loopback,
// a temporary data dir, free ports) and creates -services Services in
// namespace "bench" (svc-0 …; every -headless-every-th one headless, the
// others ClusterIP), each with an EndpointSlice of -endpoints ready
// endpoints (label endpointslice.kubernetes.io/managed-by=bench.k1s.io,
// so no controller touches them).
//
// Where the traffic goes: two network namespaces of the benchmark's own,
// "node" and "pod" (`ip netns add k1s-bench-dns-<pid>-{node,pod}`,
// deleted afterwards), joined by a veth pair, 10.251.0.1 on the node side
// and 10.251.0.2 on the pod side. The DNS servers run in the node
// namespace and listen on 10.251.0.1:53; the load comes from the pod
// namespace across the veth, as a pod's queries do. In the node namespace
// the benchmark also runs the upstream resolver both servers forward to
// (127.0.0.1:5300, miekg/dns, answering www.bench.example. A 192.0.2.10
// with TTL 300 and NXDOMAIN to everything else: no real name is ever
// resolved) and a relay to the apiserver (a listener on the namespace's
// 127.0.0.1:<port> whose connections go to the host's loopback, so the
// admin kubeconfig works unchanged). The load generator is this process:
// its goroutines share the machine's CPUs with the server under test, its
// sockets are in the pod namespace. Nothing leaves the namespaces but the
// relayed apiserver connections.
//
// -runs times, k1s's DNS and then CoreDNS:
//
//   - ready: from starting the process until svc-0's A record is answered;
//     RSS (VmRSS) 2 s after that.
//   - for each query kind, -warmup of load (not counted) and then
//     -duration of it: -clients clients, each one UDP socket in the pod
//     namespace with one query outstanding (sent, answer awaited — 1 s at
//     most — then the next). Kinds: "service", an A query for a random
//     ClusterIP Service (svc-N.bench.svc.cluster.local.); "external",
//     www.bench.example. A, which after the first query both answer from
//     their caches; "headless" (not by default), a random headless
//     Service. Reported: answers per second, p50 and p99 of the time from
//     sending a query to reading its answer, errors (not NOERROR with an
//     answer) and timeouts, and the server's CPU time per answer.
//   - RSS at the end (VmRSS and VmHWM), and how often the upstream was
//     asked.
//
// k1s's DNS runs as this command re-executed (a hidden mode,
// `run-k1s-dns`): dns.New with ListenAddress 10.251.0.1:53, Upstreams the
// resolver above, the Services and EndpointSlices informers of a shared
// factory (10 min resync, protobuf, as the agent) and, with -metrics,
// a metrics registry as the agent passes. CoreDNS runs with
//
//	.:53 {
//	    bind 10.251.0.1
//	    kubernetes cluster.local in-addr.arpa ip6.arpa {
//	        kubeconfig <admin kubeconfig>
//	        pods insecure
//	        fallthrough in-addr.arpa ip6.arpa
//	    }
//	    prometheus 127.0.0.1:9153     (with -metrics, the default)
//	    forward . 127.0.0.1:5300
//	    cache 30
//	}
//
// -metrics=false drops the prometheus plugin and k1s's registry alike.
//
// The CoreDNS binary: -coredns (default /tmp/bench-build/coredns). When
// it is missing the benchmark builds it first, with nice -n 19, from
// github.com/coredns/coredns@-coredns-version (v1.15.0, on client-go
// v0.37, k1s's minor version) in a scratch module under -build-dir (never
// in k1s's go.mod): `go build github.com/coredns/coredns`, the stock
// binary with every plugin, stripped as upstream's releases. By hand, the
// same:
//
//	mkdir -p /tmp/bench-build/coredns-mod && cd /tmp/bench-build/coredns-mod
//	printf 'module benchcoredns\n\ngo 1.26.0\n\nrequire github.com/coredns/coredns v1.15.0\n' > go.mod
//	CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 19 go build -trimpath -ldflags='-s -w' -o /tmp/bench-build/coredns github.com/coredns/coredns
//
// Logs of every process go to the run's temporary directory, deleted at
// the end unless -keep (errors quote the end of the log concerned).
// Ctrl-C, SIGTERM or an error stop the processes and delete the
// namespaces and the directory; a second Ctrl-C kills the processes
// without waiting for them to stop.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/ptr"

	k1sdns "github.com/k1s/k1s/agent/dns"
	"github.com/k1s/k1s/tests/bench/benchenv"
)

const (
	namespace    = "bench"
	managedBy    = "bench.k1s.io"
	serverIP     = "10.251.0.1"
	clientIP     = "10.251.0.2"
	serverAddr   = serverIP + ":53"
	upstreamAddr = "127.0.0.1:5300"
	externalName = "www.bench.example."
	externalIP   = "192.0.2.10"
)

type options struct {
	bin, coredns, corednsVersion, buildDir, kinds, only string
	services, headlessEvery, endpoints, clients, runs   int
	duration, warmup                                    time.Duration
	metrics, keep                                       bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run-k1s-dns" {
		if err := runK1sDNS(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "k1s dns:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.bin, "bin", "bin/k1s", "k1s binary (runs the control plane)")
	flag.StringVar(&o.coredns, "coredns", "/tmp/bench-build/coredns", "CoreDNS binary; built when missing")
	flag.StringVar(&o.corednsVersion, "coredns-version", "v1.15.0", "github.com/coredns/coredns version built when the binary is missing")
	flag.StringVar(&o.buildDir, "build-dir", "/tmp/bench-build", "scratch module directory for building CoreDNS")
	flag.IntVar(&o.services, "services", 1000, "Services")
	flag.IntVar(&o.headlessEvery, "headless-every", 10, "every this many Services one is headless (0: none)")
	flag.IntVar(&o.endpoints, "endpoints", 3, "endpoints per Service")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients, one UDP socket and one query in flight each")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured load per server, run and query kind")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measurement, not counted")
	flag.IntVar(&o.runs, "runs", 3, "runs; each measures k1s's DNS, then CoreDNS")
	flag.StringVar(&o.kinds, "kinds", "service,external", "query kinds, comma-separated: service, external, headless")
	flag.BoolVar(&o.metrics, "metrics", true, "metrics on both sides (k1s's registry, CoreDNS's prometheus plugin), as deployed")
	flag.StringVar(&o.only, "only", "", "run only this server: k1s or coredns")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, data dir)")
	flag.Parse()
	ctx := benchenv.SignalContext()
	err := run(ctx, o)
	benchenv.Cleanup.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// kindResult is one query kind's load against one server.
type kindResult struct {
	kind             string
	qps              float64
	p50, p99         time.Duration
	errors, timeouts int
	cpuPerQuery      time.Duration
}

// result is one server's figures in one run.
type result struct {
	impl                 string
	run                  int
	ready                time.Duration
	rssIdle, rssEnd, hwm float64
	upstream             int64
	kinds                []kindResult
}

type server struct {
	name string
	argv func(kubeconfig, dir string) ([]string, error)
}

func run(ctx context.Context, o options) error {
	if o.services < 2 || o.endpoints < 1 || o.runs < 1 || o.clients < 1 || o.headlessEvery == 1 || o.headlessEvery < 0 {
		return errors.New("-services must be at least 2, -endpoints, -runs and -clients at least 1, -headless-every 0 or at least 2")
	}
	kinds := strings.Split(o.kinds, ",")
	for _, k := range kinds {
		if k != "service" && k != "external" && k != "headless" {
			return fmt.Errorf("-kinds: unknown kind %q", k)
		}
		if k == "headless" && o.headlessEvery == 0 {
			return errors.New("-kinds headless needs -headless-every")
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	servers := []server{
		{name: "k1s", argv: func(kc, _ string) ([]string, error) {
			return []string{self, "run-k1s-dns", "-kubeconfig", kc, "-listen", serverAddr,
				"-upstream", upstreamAddr, fmt.Sprintf("-metrics=%t", o.metrics)}, nil
		}},
		{name: "coredns", argv: func(kc, dir string) ([]string, error) {
			prom := ""
			if o.metrics {
				prom = "\n    prometheus 127.0.0.1:9153"
			}
			corefile := fmt.Sprintf(`.:53 {
    bind %s
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }%s
    forward . %s
    cache 30
}
`, serverIP, kc, prom, upstreamAddr)
			path := filepath.Join(dir, "Corefile")
			if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
				return nil, err
			}
			return []string{o.coredns, "-conf", path}, nil
		}},
	}
	switch o.only {
	case "":
	case "k1s":
		servers = servers[:1]
	case "coredns":
		servers = servers[1:]
	default:
		return fmt.Errorf("-only %q: want k1s or coredns", o.only)
	}
	if o.only != "k1s" {
		if _, err := os.Stat(o.coredns); err != nil {
			gomod := fmt.Sprintf("module benchcoredns\n\ngo 1.26.0\n\nrequire github.com/coredns/coredns %s\n", o.corednsVersion)
			if err := benchenv.GoBuild(ctx, filepath.Join(o.buildDir, "coredns-mod"), gomod, "github.com/coredns/coredns", o.coredns); err != nil {
				return err
			}
		}
	}

	dir, err := os.MkdirTemp("", "k1s-bench-dns")
	if err != nil {
		return err
	}
	benchenv.Cleanup.Add(func() {
		if o.keep {
			fmt.Fprintf(os.Stderr, "bench: logs kept in %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	})
	cp, err := benchenv.StartControlPlane(ctx, o.bin, dir)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 2000, 2000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	clusterIP, headless, err := setup(ctx, c, o)
	if err != nil {
		return err
	}

	node, pod, err := network(cp.Port)
	if err != nil {
		return err
	}
	var upstreamQueries atomic.Int64
	if err := startUpstream(node, &upstreamQueries); err != nil {
		return err
	}
	queries := map[string][][]byte{}
	for kind, names := range map[string][]string{"service": clusterIP, "headless": headless, "external": {externalName}} {
		if queries[kind], err = packQueries(names); err != nil {
			return err
		}
	}
	fmt.Printf("machine: %s; %d Services (%d headless) × %d endpoints; %d clients, %v per kind (after %v warm-up); load from a pod namespace over a veth\n",
		loadavg(), o.services, len(headless), o.endpoints, o.clients, o.duration, o.warmup)

	var results []result
	for r := 1; r <= o.runs; r++ {
		for _, s := range servers {
			res, err := measure(ctx, o, cp, dir, s, r, node, pod, queries, kinds, &upstreamQueries)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.name, r, err)
			}
			results = append(results, res)
			printResult(res)
		}
	}
	summarize(results, o, kinds)
	return nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// setup creates the Services and slices; it returns the fully qualified
// names of the ClusterIP and of the headless ones.
func setup(ctx context.Context, c kubernetes.Interface, o options) (clusterIP, headless []string, err error) {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, nil, fmt.Errorf("create namespace: %w", err)
	}
	t0 := time.Now()
	work := make(chan int)
	errc := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := createService(ctx, c, o, i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
feed:
	for i := range o.services {
		select {
		case work <- i:
		case err = <-errc:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	if err != nil {
		return nil, nil, err
	}
	for i := range o.services {
		name := fmt.Sprintf("svc-%d.%s.svc.cluster.local.", i, namespace)
		if isHeadless(o, i) {
			headless = append(headless, name)
		} else {
			clusterIP = append(clusterIP, name)
		}
	}
	fmt.Printf("created %d Services and their EndpointSlices in %v\n", o.services, time.Since(t0).Round(time.Millisecond))
	return clusterIP, headless, nil
}

func isHeadless(o options, i int) bool {
	return o.headlessEvery > 0 && i%o.headlessEvery == o.headlessEvery-1
}

func createService(ctx context.Context, c kubernetes.Interface, o options, i int) error {
	name := fmt.Sprintf("svc-%d", i)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if isHeadless(o, i) {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	if _, err := c.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s: %w", name, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-bench", Namespace: namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for j := range o.endpoints {
		n := i*o.endpoints + j + 1
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.%d.%d", n/250, n%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	if _, err := c.DiscoveryV1().EndpointSlices(namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create endpoint slice %s: %w", slice.Name, err)
	}
	return nil
}

// network makes the node and pod namespaces, the veth pair between them
// and the apiserver relay into the node namespace.
func network(apiPort int) (node, pod *benchenv.Netns, err error) {
	base := fmt.Sprintf("k1s-bench-dns-%d", os.Getpid())
	if node, err = benchenv.NewNetns(base + "-node"); err != nil {
		return nil, nil, err
	}
	if pod, err = benchenv.NewNetns(base + "-pod"); err != nil {
		return nil, nil, err
	}
	steps := []struct {
		ns   *benchenv.Netns
		args []string
	}{
		{node, []string{"link", "add", "bench0", "type", "veth", "peer", "name", "bench1", "netns", pod.Name}},
		{node, []string{"addr", "add", serverIP + "/24", "dev", "bench0"}},
		{node, []string{"link", "set", "bench0", "up"}},
		{pod, []string{"addr", "add", clientIP + "/24", "dev", "bench1"}},
		{pod, []string{"link", "set", "bench1", "up"}},
	}
	for _, s := range steps {
		if err := s.ns.IP(s.args...); err != nil {
			return nil, nil, err
		}
	}
	if _, err := benchenv.ForwardAPI(node, apiPort); err != nil {
		return nil, nil, err
	}
	return node, pod, nil
}

// startUpstream serves the resolver both servers forward to, on UDP and
// TCP at upstreamAddr in the node namespace.
func startUpstream(node *benchenv.Netns, count *atomic.Int64) error {
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		count.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		if len(r.Question) == 1 && strings.EqualFold(r.Question[0].Name, externalName) {
			if r.Question[0].Qtype == dns.TypeA {
				m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: externalName, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300},
					A: net.ParseIP(externalIP).To4()}}
			}
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	var pc net.PacketConn
	var ln net.Listener
	if err := node.Do(func() error {
		var err error
		if pc, err = net.ListenPacket("udp4", upstreamAddr); err != nil {
			return err
		}
		ln, err = net.Listen("tcp4", upstreamAddr)
		return err
	}); err != nil {
		return fmt.Errorf("upstream resolver: %w", err)
	}
	udp := &dns.Server{PacketConn: pc, Handler: handler}
	tcp := &dns.Server{Listener: ln, Handler: handler}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	benchenv.Cleanup.Add(func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
	})
	return nil
}

// packQueries packs an A query (RD set, no EDNS0, as glibc's stub sends)
// for each name.
func packQueries(names []string) ([][]byte, error) {
	var out [][]byte
	for _, n := range names {
		m := new(dns.Msg)
		m.SetQuestion(n, dns.TypeA)
		b, err := m.Pack()
		if err != nil {
			return nil, fmt.Errorf("pack a query for %s: %w", n, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func measure(ctx context.Context, o options, cp *benchenv.ControlPlane, dir string, s server, run int, node, pod *benchenv.Netns, queries map[string][][]byte, kinds []string, upstream *atomic.Int64) (res result, err error) {
	res = result{impl: s.name, run: run}
	argv, err := s.argv(cp.Kubeconfig, dir)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	p, err := benchenv.StartChild(s.name, filepath.Join(dir, fmt.Sprintf("%s-run%d.log", s.name, run)), node.Exec(argv...)...)
	if err != nil {
		return res, err
	}
	defer p.Stop()

	probe, err := newClient(pod)
	if err != nil {
		return res, err
	}
	defer probe.Close()
	for {
		if ok, _ := probe.ask(queries["service"][0], 200*time.Millisecond); ok {
			res.ready = time.Since(t0)
			break
		}
		if p.Exited() {
			return res, fmt.Errorf("exited: %s", p.Tail())
		}
		if time.Since(t0) > 2*time.Minute {
			return res, fmt.Errorf("no answer for svc-0 within 2m: %s", p.Tail())
		}
		if err := benchenv.Sleep(ctx, 20*time.Millisecond); err != nil {
			return res, err
		}
	}
	if err := benchenv.Sleep(ctx, 2*time.Second); err != nil {
		return res, err
	}
	res.rssIdle = benchenv.ProcStatusMB(p.Pid(), "VmRSS")
	upstream.Store(0)
	for _, kind := range kinds {
		if o.warmup > 0 {
			if _, err := load(ctx, pod, queries[kind], o.clients, o.warmup); err != nil {
				return res, err
			}
		}
		cpu0 := benchenv.CPUSeconds(p.Pid())
		lr, err := load(ctx, pod, queries[kind], o.clients, o.duration)
		if err != nil {
			return res, err
		}
		if p.Exited() {
			return res, fmt.Errorf("exited: %s", p.Tail())
		}
		kr := kindResult{kind: kind, qps: float64(len(lr.lat)) / lr.elapsed.Seconds(),
			p50: benchenv.Pct(lr.lat, 0.5), p99: benchenv.Pct(lr.lat, 0.99), errors: lr.errors, timeouts: lr.timeouts}
		if len(lr.lat) > 0 {
			kr.cpuPerQuery = time.Duration((benchenv.CPUSeconds(p.Pid()) - cpu0) * float64(time.Second) / float64(len(lr.lat)))
		}
		res.kinds = append(res.kinds, kr)
	}
	res.upstream = upstream.Load()
	res.rssEnd = benchenv.ProcStatusMB(p.Pid(), "VmRSS")
	res.hwm = benchenv.ProcStatusMB(p.Pid(), "VmHWM")
	p.Stop()
	return res, nil
}

// client is a UDP socket in the pod namespace, connected to the server.
type client struct {
	*net.UDPConn
	buf []byte
	msg []byte
	rng *rand.Rand
}

var seeds atomic.Uint64

func newClient(pod *benchenv.Netns) (*client, error) {
	var c *net.UDPConn
	if err := pod.Do(func() error {
		var err error
		c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(serverAddr)))
		return err
	}); err != nil {
		return nil, err
	}
	return &client{UDPConn: c, buf: make([]byte, 4096), msg: make([]byte, 512), rng: rand.New(rand.NewPCG(seeds.Add(1), 3))}, nil
}

// ask sends query q with a random ID and waits up to timeout for its
// answer; ok is true for NOERROR with at least one answer record, and err
// is set when no answer came.
func (c *client) ask(q []byte, timeout time.Duration) (ok bool, err error) {
	n := copy(c.msg, q)
	binary.BigEndian.PutUint16(c.msg, uint16(c.rng.Uint32()))
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return false, err
	}
	if _, err := c.Write(c.msg[:n]); err != nil {
		return false, err
	}
	for {
		m, err := c.Read(c.buf)
		if err != nil {
			return false, err
		}
		if m < 12 || c.buf[0] != c.msg[0] || c.buf[1] != c.msg[1] {
			continue // a late answer to an earlier query
		}
		return c.buf[3]&0x0f == dns.RcodeSuccess && binary.BigEndian.Uint16(c.buf[6:8]) > 0, nil
	}
}

type loadResult struct {
	lat              []time.Duration // sorted
	errors, timeouts int
	elapsed          time.Duration
}

// load runs clients closed-loop clients for d, each asking random queries
// from qs.
func load(ctx context.Context, pod *benchenv.Netns, qs [][]byte, clients int, d time.Duration) (loadResult, error) {
	var res loadResult
	cs := make([]*client, clients)
	for i := range cs {
		c, err := newClient(pod)
		if err != nil {
			return res, err
		}
		defer c.Close()
		cs[i] = c
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			var errs, timeouts int
			for ctx.Err() == nil {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				ok, err := c.ask(qs[c.rng.IntN(len(qs))], time.Second)
				switch {
				case err != nil:
					timeouts++
				case !ok:
					errs++
				default:
					lat = append(lat, time.Since(t))
				}
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			res.timeouts += timeouts
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	sort.Slice(res.lat, func(a, b int) bool { return res.lat[a] < res.lat[b] })
	return res, ctx.Err()
}

func printResult(r result) {
	fmt.Printf("run %d %-7s ready %v, RSS %.1f MB idle, %.1f MB end, HWM %.1f MB, upstream asked %d times\n",
		r.run, r.impl, r.ready.Round(time.Millisecond), r.rssIdle, r.rssEnd, r.hwm, r.upstream)
	for _, k := range r.kinds {
		fmt.Printf("      %-8s %8.0f q/s  p50 %6.3f ms  p99 %6.3f ms  %d errors  %d timeouts  server CPU %.1f µs/query\n",
			k.kind, k.qps, benchenv.MS(k.p50), benchenv.MS(k.p99), k.errors, k.timeouts, float64(k.cpuPerQuery)/float64(time.Microsecond))
	}
}

func summarize(results []result, o options, kinds []string) {
	fmt.Printf("\n== %d Services, %d clients, %v per kind; min / median / max over %d runs\n", o.services, o.clients, o.duration, o.runs)
	var names []string
	by := map[string][]result{}
	for _, r := range results {
		if _, ok := by[r.impl]; !ok {
			names = append(names, r.impl)
		}
		by[r.impl] = append(by[r.impl], r)
	}
	values := func(n string, get func(result) float64) []float64 {
		var vs []float64
		for _, r := range by[n] {
			vs = append(vs, get(r))
		}
		return vs
	}
	fmt.Printf("%-32s", "figure")
	for _, n := range names {
		fmt.Printf(" | %-26s", n)
	}
	fmt.Println()
	row := func(label, format string, get func(result) float64) {
		fmt.Printf("%-32s", label)
		for _, n := range names {
			fmt.Printf(" | %-26s", benchenv.Spread(values(n, get), format))
		}
		fmt.Println()
	}
	type goal struct {
		label, format string
		get           func(result) float64
		higher        bool // k1s's must be at least CoreDNS's
	}
	var goals []goal
	for i, kind := range kinds {
		qps := func(r result) float64 { return r.kinds[i].qps }
		p99 := func(r result) float64 { return benchenv.MS(r.kinds[i].p99) }
		row(kind+": queries/s", "%.0f", qps)
		row(kind+": p50 (ms)", "%.3f", func(r result) float64 { return benchenv.MS(r.kinds[i].p50) })
		row(kind+": p99 (ms)", "%.3f", p99)
		row(kind+": errors + timeouts", "%.0f", func(r result) float64 { return float64(r.kinds[i].errors + r.kinds[i].timeouts) })
		row(kind+": server CPU (µs/query)", "%.1f", func(r result) float64 { return float64(r.kinds[i].cpuPerQuery) / float64(time.Microsecond) })
		goals = append(goals, goal{kind + " queries/s", "%.0f", qps, true}, goal{kind + " p99 (ms)", "%.3f", p99, false})
	}
	rssEnd := func(r result) float64 { return r.rssEnd }
	hwm := func(r result) float64 { return r.hwm }
	row("start → first answer (ms)", "%.0f", func(r result) float64 { return benchenv.MS(r.ready) })
	row("RSS idle, synced (MB)", "%.1f", func(r result) float64 { return r.rssIdle })
	row("RSS at end (MB)", "%.1f", rssEnd)
	row("VmHWM (MB)", "%.1f", hwm)
	row("upstream queries", "%.0f", func(r result) float64 { return float64(r.upstream) })
	if len(by["k1s"]) == 0 || len(by["coredns"]) == 0 {
		return
	}
	// The goal: k1s ≥ CoreDNS's throughput and ≤ its p99, with less memory.
	goals = append(goals, goal{"RSS at end (MB)", "%.1f", rssEnd, false}, goal{"VmHWM (MB)", "%.1f", hwm, false})
	for _, g := range goals {
		k, c := benchenv.Median(values("k1s", g.get)), benchenv.Median(values("coredns", g.get))
		met, rel := k <= c, "≤"
		if g.higher {
			met, rel = k >= c, "≥"
		}
		verdict := "met"
		if !met {
			verdict = "NOT met"
		}
		fmt.Printf("goal %s, k1s %s CoreDNS (medians): "+g.format+" vs "+g.format+": %s\n", g.label, rel, k, c, verdict)
	}
}

// runK1sDNS is the hidden child mode: k1s's cluster DNS alone, as the
// agent assembles it, until SIGTERM.
func runK1sDNS(args []string) error {
	fs := flag.NewFlagSet("run-k1s-dns", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig")
	listen := fs.String("listen", "", "address:port to serve on")
	upstream := fs.String("upstream", "", "resolver to forward to")
	withMetrics := fs.Bool("metrics", true, "register metrics")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.ContentType = k8sruntime.ContentTypeProtobuf
	cfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	deps := k1sdns.Deps{
		Services:       factory.Core().V1().Services().Informer(),
		EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
	}
	if *withMetrics {
		deps.Metrics = metrics.NewKubeRegistry()
	}
	srv, err := k1sdns.New(k1sdns.Config{
		ClusterDNS:    net.ParseIP("10.43.0.10"),
		ListenAddress: *listen,
		Upstreams:     []string{*upstream},
	}, deps)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	return srv.Run(ctx)
}
