// Command proxy benchmarks k1s's service proxy (agent/proxy) against
// upstream kube-proxy in nftables mode, both programming the same Services
// from the same apiserver, and prints figures for docs/BENCHMARKS.md.
// Needs root, nft and ip(8); build kube-proxy first or let it (below).
//
//	go run -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo ./tests/bench/proxy -bin bin/k1s
//
// It starts `k1s server --disable-agent` (control plane only, loopback,
// a temporary data dir, free ports) and creates -services ClusterIP
// Services without selector in namespace "bench" (svc-0 …, one TCP port
// "http" 80 → 8080), each with one EndpointSlice of -endpoints ready
// endpoints in 10.244.0.0/16 (labels kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by=bench.k1s.io, so no controller
// touches them), and a Node "bench-node" (InternalIP 10.250.0.1) for
// kube-proxy's node manager. Then, -runs times, k1s's proxy and then
// kube-proxy, each in a new network namespace of its own (`ip netns add
// k1s-bench-proxy-<pid>-<n>`, deleted afterwards with everything in it:
// the host's nftables are never touched, and no packet is sent). The
// namespace has lo and a veth pair holding the node IP 10.250.0.1/24;
// the apiserver is reached at the same 127.0.0.1:<port> through a relay
// the benchmark runs (a listener in the namespace whose connections it
// passes to the host's loopback). For each proxy it measures:
//
//   - full sync: from starting the process until its table's service-ips
//     map (`nft list map ip <table> service-ips`, run in the namespace
//     with -poll between two runs) has an element for each of the
//     -services Services; the time taken is the start of that listing.
//     Both write their first rule set in one transaction, so at that
//     moment every chain and rule of every Service is in the kernel.
//   - RSS: VmRSS of the proxy process -settle after that, and VmRSS and
//     VmHWM after the changes; CPU: user and system time of the process
//     and of the nft commands it ran, from start to end.
//   - change → kernel: -changes times, -gap (plus up to 200 ms of jitter)
//     after the previous change was seen: one random Service's slice gets
//     one endpoint replaced by a new address (an Update through the API).
//     The clock starts when the Update request is sent and stops when the
//     kernel holds a rule of that Service's chain
//     (service-<hash>-bench/svc-N/tcp/http) naming the new address:
//     kube-proxy's jumps through a numgen vmap to
//     endpoint-<hash>-…__<ip>/8080, whose DNAT rule came in the same
//     transaction; k1s's DNATs through a numgen map to <ip> . 8080. With
//     -watch monitor (the default) `nft monitor new rules` runs in the
//     namespace from the full sync on: the kernel announces each rule of
//     a transaction as it commits it, nft prints it whole, and the
//     benchmark stamps the line when it reads it. With -watch poll it
//     lists the chain (`nft list chain ip <table> <chain>`) with -poll
//     between two listings, and takes the start of the first listing that
//     has the address; nft 1.0.x fetches every anonymous set of the table
//     for that (one netlink request per Service), so at 1000 Services one
//     listing takes tens of milliseconds, and that is the resolution.
//     p50, p99 and max.
//
// k1s's proxy runs as this command re-executed (a hidden mode,
// `run-k1s-proxy`): proxy.New with the Services and EndpointSlices
// informers of a shared factory (10 min resync, protobuf, as the agent),
// NodeName bench-node, NodeIPs 10.250.0.1, ClusterCIDRs 10.42.0.0/16,
// ServiceCIDRs 10.43.0.0/16 (k1s server's default service range),
// HealthzBindAddress "-", metrics registered as the agent does. kube-proxy
// runs with --proxy-mode=nftables --kubeconfig <admin kubeconfig>
// --hostname-override bench-node --cluster-cidr 10.42.0.0/16
// --conntrack-max-per-core 0, its healthz and metrics on the namespace's
// 127.0.0.1, everything else default: notably a minimum of 1 s from the
// end of one sync to the start of the next (--iptables-min-sync-period,
// which nftables mode reads too), which -gap stays above so that each
// change is timed alone. -kube-proxy-args adds flags. Both run at the
// benchmark's nice level.
//
// The kube-proxy binary: -kube-proxy, default /tmp/bench-build/kube-proxy.
// When it is missing the benchmark first builds it, with nice -n 19, from
// k8s.io/kubernetes@-kube-version (v1.37.1, the version k1s's libraries
// are at) in a scratch module, -build-dir/kube-proxy-mod, never in k1s's
// go.mod: a go.mod requiring k8s.io/kubernetes with its staging modules
// replaced by their v0.x tags, then `go build -trimpath -ldflags=-s -w
// k8s.io/kubernetes/cmd/kube-proxy` (CGO off). By hand, the same:
//
//	mkdir -p /tmp/bench-build/kube-proxy-mod && cd /tmp/bench-build/kube-proxy-mod
//	cp /work/shared/conformance/go.mod /work/shared/conformance/go.sum .   # k8s.io/kubernetes v1.37.1 and its replaces
//	CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 19 go build -trimpath -ldflags='-s -w' -o /tmp/bench-build/kube-proxy k8s.io/kubernetes/cmd/kube-proxy
//
// Logs of every process go to the run's temporary directory, deleted at
// the end unless -keep (errors quote the end of the log concerned).
// Ctrl-C, SIGTERM or an error stop the processes and delete the
// namespaces and the directory; a second Ctrl-C kills the processes
// without waiting for them to stop.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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

	"github.com/k1s/k1s/agent/proxy"
	"github.com/k1s/k1s/tests/bench/benchenv"
)

const (
	namespace  = "bench"
	nodeName   = "bench-node"
	nodeIP     = "10.250.0.1"
	portName   = "http"
	targetPort = 8080
	managedBy  = "bench.k1s.io"
)

type options struct {
	bin, kubeProxy, kubeVersion, buildDir, kubeProxyArgs string
	services, endpoints, changes, runs                   int
	poll, gap, settle                                    time.Duration
	only, watch                                          string
	keep                                                 bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run-k1s-proxy" {
		if err := runK1sProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "k1s proxy:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.bin, "bin", "bin/k1s", "k1s binary (runs the control plane)")
	flag.StringVar(&o.kubeProxy, "kube-proxy", "/tmp/bench-build/kube-proxy", "kube-proxy binary; built when missing")
	flag.StringVar(&o.kubeVersion, "kube-version", "v1.37.1", "k8s.io/kubernetes version kube-proxy is built from when missing")
	flag.StringVar(&o.buildDir, "build-dir", "/tmp/bench-build", "scratch module directory for building kube-proxy")
	flag.StringVar(&o.kubeProxyArgs, "kube-proxy-args", "", "extra kube-proxy flags, space-separated")
	flag.IntVar(&o.services, "services", 1000, "Services")
	flag.IntVar(&o.endpoints, "endpoints", 10, "endpoints per Service")
	flag.IntVar(&o.changes, "changes", 100, "single endpoint changes timed per proxy and run")
	flag.IntVar(&o.runs, "runs", 3, "runs; each runs k1s's proxy, then kube-proxy")
	flag.DurationVar(&o.poll, "poll", 2*time.Millisecond, "pause between two nft polls (each poll also takes the nft command's own time)")
	flag.DurationVar(&o.gap, "gap", 1500*time.Millisecond, "pause after a change is seen before the next (kube-proxy waits 1 s after a sync ends before the next)")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "wait after the full sync before reading RSS and starting changes")
	flag.StringVar(&o.watch, "watch", "monitor", "how a change is seen in the kernel: monitor (nft monitor's events) or poll (nft list chain every -poll)")
	flag.StringVar(&o.only, "only", "", "run only this proxy: k1s or kube-proxy")
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

// result is one proxy's figures in one run.
type result struct {
	impl     string
	run      int
	full     time.Duration
	lat      []time.Duration // sorted
	timeouts int
	rssIdle  float64
	rssEnd   float64
	hwm      float64
	cpu      float64
	mapPoll  time.Duration // the successful `nft list map` poll's own time
	pollCost time.Duration // median time of one `nft list chain` poll (-watch poll)
}

type impl struct {
	name, table string
	argv        func(kubeconfig string) []string
}

func run(ctx context.Context, o options) error {
	if o.services < 1 || o.endpoints < 1 || o.runs < 1 {
		return errors.New("-services, -endpoints and -runs must be at least 1")
	}
	if o.watch != "monitor" && o.watch != "poll" {
		return fmt.Errorf("-watch %q: want monitor or poll", o.watch)
	}
	if n := o.services*o.endpoints + 2*o.runs*o.changes; n > 65000 {
		return fmt.Errorf("%d endpoint addresses needed; 10.244.0.0/16 holds 65000", n)
	}
	for _, tool := range []string{"nft", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s: %w", tool, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	impls := []impl{
		{name: "k1s", table: proxy.DefaultTable, argv: func(kc string) []string {
			return []string{self, "run-k1s-proxy", "-kubeconfig", kc}
		}},
		{name: "kube-proxy", table: "kube-proxy", argv: func(kc string) []string {
			return append([]string{o.kubeProxy, "--proxy-mode=nftables", "--kubeconfig", kc,
				"--hostname-override", nodeName, "--cluster-cidr", "10.42.0.0/16", "--conntrack-max-per-core", "0",
				"--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249"},
				strings.Fields(o.kubeProxyArgs)...)
		}},
	}
	switch o.only {
	case "":
	case "k1s":
		impls = impls[:1]
	case "kube-proxy":
		impls = impls[1:]
	default:
		return fmt.Errorf("-only %q: want k1s or kube-proxy", o.only)
	}
	if o.only != "k1s" {
		if _, err := os.Stat(o.kubeProxy); err != nil {
			if err := buildKubeProxy(ctx, o); err != nil {
				return err
			}
		}
	}

	dir, err := os.MkdirTemp("", "k1s-bench-proxy")
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
	fmt.Printf("machine: %s; %d Services × %d endpoints, %d changes per proxy and run (seen by %s), poll pause %v, gap %v\n",
		machine(), o.services, o.endpoints, o.changes, o.watch, o.poll, o.gap)
	ips := &addrs{}
	svcs, err := setup(ctx, c, o, ips)
	if err != nil {
		return err
	}

	var results []result
	seq := 0
	for r := 1; r <= o.runs; r++ {
		for _, im := range impls {
			seq++
			res, err := measure(ctx, c, o, cp, dir, im, r, seq, svcs, ips)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", im.name, r, err)
			}
			results = append(results, res)
			printResult(res)
		}
	}
	summarize(results, o)
	return nil
}

func machine() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// addrs hands out endpoint addresses in 10.244.0.0/16, never one twice.
type addrs struct{ next int }

func (a *addrs) get() string {
	for {
		a.next++
		lo := a.next & 255
		if lo == 0 || lo == 255 {
			continue
		}
		return fmt.Sprintf("10.244.%d.%d", a.next>>8, lo)
	}
}

type benchService struct {
	name  string
	slice *discoveryv1.EndpointSlice
}

// setup creates the namespace, the Node and the Services with their
// slices.
func setup(ctx context.Context, c kubernetes.Interface, o options, ips *addrs) ([]*benchService, error) {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node: %w", err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}, {Type: corev1.NodeHostName, Address: nodeName}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("node status: %w", err)
	}

	svcs := make([]*benchService, o.services)
	for i := range svcs {
		s := &benchService{name: fmt.Sprintf("svc-%d", i)}
		s.slice = &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: s.name + "-bench", Namespace: namespace, Labels: map[string]string{
				discoveryv1.LabelServiceName: s.name, discoveryv1.LabelManagedBy: managedBy}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To[int32](targetPort), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for range o.endpoints {
			s.slice.Endpoints = append(s.slice.Endpoints, discoveryv1.Endpoint{
				Addresses: []string{ips.get()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
		svcs[i] = s
	}
	t0 := time.Now()
	work := make(chan *benchService)
	errc := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: namespace},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{
						Name: portName, Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(targetPort)}}},
				}
				if _, err := c.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					errc <- fmt.Errorf("create service %s: %w", s.name, err)
					return
				}
				created, err := c.DiscoveryV1().EndpointSlices(namespace).Create(ctx, s.slice, metav1.CreateOptions{})
				if err != nil {
					errc <- fmt.Errorf("create endpoint slice %s: %w", s.slice.Name, err)
					return
				}
				s.slice = created
			}
		}()
	}
	var err2 error
feed:
	for _, s := range svcs {
		select {
		case work <- s:
		case err2 = <-errc:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err2 == nil {
		select {
		case err2 = <-errc:
		default:
		}
	}
	if err2 != nil {
		return nil, err2
	}
	fmt.Printf("created %d Services and %d EndpointSlices in %v\n", len(svcs), len(svcs), time.Since(t0).Round(time.Millisecond))
	return svcs, nil
}

var serviceChain = regexp.MustCompile(`^\s*chain (service-[A-Za-z0-9]+-` + namespace + `/svc-(\d+)/tcp/` + portName + `) \{`)

// measure runs one proxy in a namespace of its own and times it.
func measure(ctx context.Context, c kubernetes.Interface, o options, cp *benchenv.ControlPlane, dir string, im impl, run, seq int, svcs []*benchService, ips *addrs) (res result, err error) {
	res = result{impl: im.name, run: run}
	ns, err := benchenv.NewNetns(fmt.Sprintf("k1s-bench-proxy-%d-%d", os.Getpid(), seq))
	if err != nil {
		return res, err
	}
	defer ns.Del()
	for _, args := range [][]string{
		{"link", "add", "bench0", "type", "veth", "peer", "name", "bench1"},
		{"addr", "add", nodeIP + "/24", "dev", "bench0"},
		{"link", "set", "bench0", "up"},
		{"link", "set", "bench1", "up"},
	} {
		if err := ns.IP(args...); err != nil {
			return res, err
		}
	}
	stopRelay, err := benchenv.ForwardAPI(ns, cp.Port)
	if err != nil {
		return res, err
	}
	defer stopRelay()

	log := filepath.Join(dir, fmt.Sprintf("%s-run%d.log", im.name, run))
	t0 := time.Now()
	p, err := benchenv.StartChild(im.name, log, ns.Exec(im.argv(cp.Kubeconfig)...)...)
	if err != nil {
		return res, err
	}
	defer p.Stop()

	// (a) start → every Service in the service-ips map.
	want := "-" + namespace + "/svc-"
	for {
		p0 := time.Now()
		out, err := ns.Nft("list", "map", "ip", im.table, "service-ips")
		if err == nil && strings.Count(out, want) >= len(svcs) {
			res.full = p0.Sub(t0)
			res.mapPoll = time.Since(p0)
			break
		}
		if p.Exited() {
			return res, fmt.Errorf("exited before its rules were written: %s", p.Tail())
		}
		if time.Since(t0) > 3*time.Minute {
			return res, fmt.Errorf("rules for %d Services not written within 3m: %s", len(svcs), p.Tail())
		}
		if err := benchenv.Sleep(ctx, o.poll); err != nil {
			return res, err
		}
	}
	if err := benchenv.Sleep(ctx, o.settle); err != nil {
		return res, err
	}
	res.rssIdle = benchenv.ProcStatusMB(p.Pid(), "VmRSS")

	out, err := ns.Nft("list", "chains", "ip") // nft 1.0.6 takes no table here; the namespace has one
	if err != nil {
		return res, fmt.Errorf("list chains: %w", err)
	}
	chains := map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := serviceChain.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[2])
			chains[i] = m[1]
		}
	}
	if len(chains) != len(svcs) {
		return res, fmt.Errorf("found %d service chains in table ip %s, want %d", len(chains), im.table, len(svcs))
	}

	// (b) single endpoint changes.
	var mon *monitor
	if o.watch == "monitor" {
		if mon, err = startMonitor(ns, filepath.Join(dir, fmt.Sprintf("%s-run%d-monitor.log", im.name, run))); err != nil {
			return res, err
		}
		defer mon.proc.Stop()
	}
	rng := rand.New(rand.NewPCG(uint64(seq), 7))
	var polls []time.Duration
	for k := 0; k < o.changes; k++ {
		if err := benchenv.Sleep(ctx, o.gap+time.Duration(rng.IntN(200))*time.Millisecond); err != nil {
			return res, err
		}
		if p.Exited() {
			return res, fmt.Errorf("exited: %s", p.Tail())
		}
		i := rng.IntN(len(svcs))
		s := svcs[i]
		slice := s.slice.DeepCopy()
		ip := ips.get()
		slice.Endpoints[rng.IntN(len(slice.Endpoints))].Addresses = []string{ip}
		prefix := "add rule ip " + im.table + " " + chains[i] + " "
		if mon != nil {
			mon.drain()
		}
		start := time.Now()
		updated, err := c.DiscoveryV1().EndpointSlices(namespace).Update(ctx, slice, metav1.UpdateOptions{})
		if err != nil {
			return res, fmt.Errorf("update %s: %w", slice.Name, err)
		}
		s.slice = updated
		var seen time.Time
		var last string
		if mon != nil {
			seen, err = mon.wait(ctx, 30*time.Second, func(line string) bool {
				return strings.HasPrefix(line, prefix) && hasAddr(line, ip)
			})
			if err != nil {
				return res, err
			}
			last = "(nft monitor printed no rule of that chain with it)"
		} else {
			for time.Since(start) < 30*time.Second {
				p0 := time.Now()
				out, err := ns.Nft("list", "chain", "ip", im.table, chains[i])
				polls = append(polls, time.Since(p0))
				if err == nil && hasAddr(out, ip) {
					seen = p0
					break
				}
				last = fmt.Sprintf("%s(%v)", out, err)
				if err := benchenv.Sleep(ctx, o.poll); err != nil {
					return res, err
				}
			}
		}
		if seen.IsZero() {
			if res.timeouts == 0 {
				fmt.Fprintf(os.Stderr, "bench: %s: %s not in chain %s within 30 s: %s\n", im.name, ip, chains[i], last)
			}
			res.timeouts++
			continue
		}
		res.lat = append(res.lat, seen.Sub(start))
	}
	sort.Slice(res.lat, func(a, b int) bool { return res.lat[a] < res.lat[b] })
	sort.Slice(polls, func(a, b int) bool { return polls[a] < polls[b] })
	res.pollCost = benchenv.Pct(polls, 0.5)
	res.rssEnd = benchenv.ProcStatusMB(p.Pid(), "VmRSS")
	res.hwm = benchenv.ProcStatusMB(p.Pid(), "VmHWM")
	res.cpu = benchenv.CPUSeconds(p.Pid())
	p.Stop()
	return res, nil
}

// hasAddr tells whether the nft listing names the address ip as a whole
// (10.244.1.2 neither in 10.244.1.23 nor in 110.244.1.2): kube-proxy's
// service chain jumps to endpoint-…__<ip>/8080, k1s's DNATs through a
// numgen map with elements <ip> . 8080.
func hasAddr(listing, ip string) bool {
	for off := 0; ; {
		i := strings.Index(listing[off:], ip)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(ip)
		before := i == 0 || !strings.ContainsRune("0123456789.", rune(listing[i-1]))
		after := end == len(listing) || !strings.ContainsRune("0123456789", rune(listing[end]))
		if before && after {
			return true
		}
		off = i + 1
	}
}

func printResult(r result) {
	poll := ""
	if r.pollCost > 0 {
		poll = fmt.Sprintf("; one poll %.1f ms", benchenv.MS(r.pollCost))
	}
	fmt.Printf("run %d %-10s full sync %6.0f ms (map poll %.0f ms) | change→kernel p50 %5.1f p99 %6.1f max %6.1f ms (%d seen, %d not%s) | RSS %.1f MB idle, %.1f MB end, HWM %.1f MB | CPU %.2f s\n",
		r.run, r.impl, benchenv.MS(r.full), benchenv.MS(r.mapPoll), benchenv.MS(benchenv.Pct(r.lat, 0.5)), benchenv.MS(benchenv.Pct(r.lat, 0.99)), benchenv.MS(benchenv.Pct(r.lat, 1)), len(r.lat), r.timeouts,
		poll, r.rssIdle, r.rssEnd, r.hwm, r.cpu)
}

func summarize(results []result, o options) {
	fmt.Printf("\n== %d Services × %d endpoints; min / median / max over %d runs\n", o.services, o.endpoints, o.runs)
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
	fmt.Printf("%-34s", "figure")
	for _, n := range names {
		fmt.Printf(" | %-26s", n)
	}
	fmt.Println()
	row := func(label, format string, get func(result) float64) {
		fmt.Printf("%-34s", label)
		for _, n := range names {
			fmt.Printf(" | %-26s", benchenv.Spread(values(n, get), format))
		}
		fmt.Println()
	}
	full := func(r result) float64 { return benchenv.MS(r.full) }
	p50 := func(r result) float64 { return benchenv.MS(benchenv.Pct(r.lat, 0.5)) }
	p99 := func(r result) float64 { return benchenv.MS(benchenv.Pct(r.lat, 0.99)) }
	row("start → full rule set (ms)", "%.0f", full)
	row("change → kernel p50 (ms)", "%.1f", p50)
	row("change → kernel p99 (ms)", "%.1f", p99)
	row("change → kernel max (ms)", "%.1f", func(r result) float64 { return benchenv.MS(benchenv.Pct(r.lat, 1)) })
	row("changes not seen within 30 s", "%.0f", func(r result) float64 { return float64(r.timeouts) })
	row("RSS after full sync (MB)", "%.1f", func(r result) float64 { return r.rssIdle })
	row("RSS at end (MB)", "%.1f", func(r result) float64 { return r.rssEnd })
	row("VmHWM (MB)", "%.1f", func(r result) float64 { return r.hwm })
	row("CPU, process + its nft (s)", "%.2f", func(r result) float64 { return r.cpu })
	row("full-map nft poll (ms)", "%.0f", func(r result) float64 { return benchenv.MS(r.mapPoll) })
	if o.watch == "poll" {
		row("one nft list chain poll (ms)", "%.1f", func(r result) float64 { return benchenv.MS(r.pollCost) })
	}
	if len(by["k1s"]) == 0 || len(by["kube-proxy"]) == 0 {
		return
	}
	// The goal: k1s no slower than kube-proxy on either figure.
	for _, g := range []struct {
		label string
		get   func(result) float64
	}{{"start → full rule set", full}, {"change → kernel p50", p50}, {"change → kernel p99", p99}} {
		k, u := benchenv.Median(values("k1s", g.get)), benchenv.Median(values("kube-proxy", g.get))
		verdict := "met"
		if k > u {
			verdict = "NOT met"
		}
		fmt.Printf("goal %s, k1s ≤ kube-proxy (medians): %.1f ms vs %.1f ms: %s\n", g.label, k, u, verdict)
	}
}

// buildKubeProxy builds k8s.io/kubernetes/cmd/kube-proxy at -kube-version
// in a scratch module: k8s.io/kubernetes's go.mod replaces its staging
// modules by directories, which a dependent module must replace by their
// tags (k8s.io/api v0.37.1 for kubernetes v1.37.1).
func buildKubeProxy(ctx context.Context, o options) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "k8s.io/kubernetes@"+o.kubeVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go mod download k8s.io/kubernetes@%s: %w", o.kubeVersion, err)
	}
	m := regexp.MustCompile(`"GoMod": "([^"]+)"`).FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("go mod download k8s.io/kubernetes@%s: no go.mod in %s", o.kubeVersion, out)
	}
	gomod, err := os.ReadFile(string(m[1]))
	if err != nil {
		return err
	}
	staging := "v0" + strings.TrimPrefix(o.kubeVersion, "v1")
	var b strings.Builder
	fmt.Fprintf(&b, "module benchkubeproxy\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", o.kubeVersion)
	for _, r := range regexp.MustCompile(`(?m)^\s*(k8s\.io/[a-z0-9-]+) => \./staging/`).FindAllSubmatch(gomod, -1) {
		fmt.Fprintf(&b, "\t%s => %s %s\n", r[1], r[1], staging)
	}
	b.WriteString(")\n")
	return benchenv.GoBuild(ctx, filepath.Join(o.buildDir, "kube-proxy-mod"), b.String(), "k8s.io/kubernetes/cmd/kube-proxy", o.kubeProxy)
}

// runK1sProxy is the hidden child mode: k1s's service proxy alone, as the
// agent assembles it, until SIGTERM.
func runK1sProxy(args []string) error {
	fs := flag.NewFlagSet("run-k1s-proxy", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig")
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
	_, clusterCIDR, _ := net.ParseCIDR("10.42.0.0/16")
	_, serviceCIDR, _ := net.ParseCIDR("10.43.0.0/16")
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	px, err := proxy.New(proxy.Config{
		NodeName:           nodeName,
		NodeIPs:            []net.IP{net.ParseIP(nodeIP)},
		ClusterCIDRs:       []*net.IPNet{clusterCIDR},
		ServiceCIDRs:       []*net.IPNet{serviceCIDR},
		HealthzBindAddress: "-",
	}, proxy.Deps{
		Services:       factory.Core().V1().Services().Informer(),
		EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
	})
	if err != nil {
		return err
	}
	px.Register(metrics.NewKubeRegistry())
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	return px.Run(ctx)
}
