package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

// The kernel tests run the proxy against the real nft command and kernel,
// with real traffic, inside network namespaces they make: the test binary
// re-runs itself inside a "node" namespace (so every nft the proxy runs
// changes only that namespace), which gets a bridge with two "pod"
// namespaces on it.

const kernelEnv = "K1S_PROXY_KERNEL_TEST"

func runInNodeNetns(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv(kernelEnv) == "1" {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed")
	}
	ns := fmt.Sprintf("k1sp-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	defer func() { _ = exec.Command("ip", "netns", "del", ns).Run() }()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), kernelEnv+"=1", "K1S_PROXY_NETNS_PREFIX="+ns)
	out, err := cmd.CombinedOutput()
	t.Logf("in netns %s:\n%s", ns, out)
	if err != nil {
		t.Fatalf("kernel test failed: %v", err)
	}
	return false
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// pod is a network namespace on the test bridge.
type pod struct {
	name, ip string
	ns       netns.NsHandle
}

// do runs f on a thread inside the pod's namespace; sockets f opens stay
// there.
func (p *pod) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		if err := netns.Set(p.ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		} // else the thread dies with the goroutine
	}()
	return <-errc
}

func newPod(t *testing.T, prefix string, i int) *pod {
	name := fmt.Sprintf("%s-pod%d", prefix, i)
	ip := fmt.Sprintf("10.42.0.%d", 10+i)
	veth := fmt.Sprintf("veth%d", i)
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	sh(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
	sh(t, "ip", "link", "set", veth, "master", "br0", "up")
	sh(t, "ip", "link", "set", veth, "type", "bridge_slave", "hairpin", "on")
	sh(t, "ip", "-n", name, "addr", "add", ip+"/24", "dev", "eth0")
	sh(t, "ip", "-n", name, "link", "set", "eth0", "up")
	sh(t, "ip", "-n", name, "link", "set", "lo", "up")
	sh(t, "ip", "-n", name, "route", "add", "default", "via", "10.42.0.1")
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &pod{name: name, ip: ip, ns: h}
}

// serve answers every TCP connection and UDP datagram on port with the
// pod's name.
func (p *pod) serve(t *testing.T, port int) {
	var ln net.Listener
	var pc net.PacketConn
	err := p.do(func() error {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(port))); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp", net.JoinHostPort(p.ip, strconv.Itoa(port)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(p.name))
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(p.name), from)
		}
	}()
}

// get connects to addr over TCP from the pod (nil: the node) and returns
// what the server said.
func get(from *pod, addr string) (string, error) {
	var out string
	dial := func() error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		b, err := io.ReadAll(c)
		out = string(b)
		return err
	}
	if from == nil {
		return out, dial()
	}
	return out, from.do(dial)
}

func udpGet(from *pod, addr string) (string, error) {
	var out string
	dial := func() error {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("hi")); err != nil {
			return err
		}
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		out = string(buf[:n])
		return err
	}
	if from == nil {
		return out, dial()
	}
	return out, from.do(dial)
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func slice(ns, svc, name string, port int32, proto corev1.Protocol, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(port), Protocol: ptr.To(proto)}},
		Endpoints:   eps,
	}
}

func ep(ip, node string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(node),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)}}
}

// kernelNode is the node namespace of a kernel test: a pod bridge with two
// pods, a node address, and a running proxy fed by a fake clientset.
type kernelNode struct {
	ctx        context.Context
	pod1, pod2 *pod
	client     *fake.Clientset
	proxy      *Proxy
	prefix     string
}

func startKernelNode(t *testing.T) *kernelNode {
	t.Helper()
	prefix := os.Getenv("K1S_PROXY_NETNS_PREFIX")
	sh(t, "ip", "link", "set", "lo", "up")
	sh(t, "ip", "link", "add", "br0", "type", "bridge")
	sh(t, "ip", "addr", "add", "10.42.0.1/24", "dev", "br0")
	sh(t, "ip", "link", "set", "br0", "up")
	sh(t, "ip", "link", "add", "node0", "type", "bridge") // no dummy links on every kernel
	sh(t, "ip", "addr", "add", "10.250.0.1/24", "dev", "node0")
	sh(t, "ip", "link", "set", "node0", "up")
	sh(t, "ip", "route", "add", "default", "dev", "node0")
	pod1, pod2 := newPod(t, prefix, 1), newPod(t, prefix, 2)
	pod1.serve(t, 8080)
	pod2.serve(t, 8080)

	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	_, clusterCIDR, _ := net.ParseCIDR("10.42.0.0/16")
	_, serviceCIDR, _ := net.ParseCIDR("10.43.0.0/16")
	p, err := New(Config{
		NodeName:           "node",
		NodeIPs:            []net.IP{net.ParseIP("10.250.0.1")},
		ClusterCIDRs:       []*net.IPNet{clusterCIDR},
		ServiceCIDRs:       []*net.IPNet{serviceCIDR},
		ExemptIPs:          []net.IP{net.ParseIP("10.43.0.10")},
		HealthzBindAddress: "127.0.0.1:0",
		SyncPeriod:         time.Second,
	}, Deps{
		Services:       factory.Core().V1().Services().Informer(),
		EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-p.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("proxy not ready")
	}
	return &kernelNode{ctx: ctx, pod1: pod1, pod2: pod2, client: client, proxy: p, prefix: prefix}
}

func TestKernelTraffic(t *testing.T) {
	if !runInNodeNetns(t, "TestKernelTraffic") {
		return
	}
	n := startKernelNode(t)
	ctx, client, pod1, pod2 := n.ctx, n.client, n.pod1, n.pod2

	svcs := client.CoreV1().Services("default")
	slices := client.DiscoveryV1().EndpointSlices("default")
	mk := func(svc *corev1.Service) {
		t.Helper()
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, ClusterIP: "10.43.0.20", ClusterIPs: []string{"10.43.0.20"},
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}},
	}}
	mk(web)
	if _, err := slices.Create(ctx, slice("default", "web", "web-1", 8080, corev1.ProtocolTCP, ep(pod1.ip, "node", true), ep(pod2.ip, "node", true)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	udp := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "udp"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.21", ClusterIPs: []string{"10.43.0.21"},
		Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}},
	}}
	mk(udp)
	if _, err := slices.Create(ctx, slice("default", "udp", "udp-1", 8080, corev1.ProtocolUDP, ep(pod2.ip, "node", true)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	empty := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "empty"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.22", ClusterIPs: []string{"10.43.0.22"},
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
	}}
	mk(empty)

	// The cluster IP answers from both pods, from a pod (pod1 reaches
	// itself: hairpin) and from the node.
	for _, from := range []*pod{pod1, nil} {
		seen := map[string]bool{}
		eventually(t, "cluster IP reaches both endpoints", func() error {
			out, err := get(from, "10.43.0.20:80")
			if err != nil {
				return err
			}
			seen[out] = true
			if len(seen) < 2 {
				return fmt.Errorf("answers so far: %v", seen)
			}
			return nil
		})
	}
	// The node port, on the node's address.
	eventually(t, "node port", func() error {
		out, err := get(pod2, "10.250.0.1:30080")
		if err == nil && !strings.Contains(out, "pod") {
			err = fmt.Errorf("answer %q", out)
		}
		return err
	})
	eventually(t, "node port from the node", func() error {
		_, err := get(nil, "10.250.0.1:30080")
		return err
	})
	// UDP.
	eventually(t, "UDP service", func() error {
		out, err := udpGet(pod1, "10.43.0.21:53")
		if err == nil && out != pod2.name {
			err = fmt.Errorf("answer %q", out)
		}
		return err
	})
	// No endpoints, a wrong port, an address no Service holds: refused at once.
	for _, addr := range []string{"10.43.0.22:80", "10.43.0.20:81", "10.43.0.99:80"} {
		start := time.Now()
		_, err := get(pod1, addr)
		if !refused(err) {
			t.Errorf("%s: err = %v, want connection refused", addr, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refused after %s", addr, d)
		}
	}

	// An endpoint going away is taken out; the only one left answers.
	if _, err := slices.Update(ctx, slice("default", "web", "web-1", 8080, corev1.ProtocolTCP, ep(pod1.ip, "node", true), ep(pod2.ip, "node", false)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "only the ready endpoint answers", func() error {
		for range 10 {
			out, err := get(pod2, "10.43.0.20:80")
			if err != nil {
				return err
			}
			if out != pod1.name {
				return fmt.Errorf("answer from %q", out)
			}
		}
		return nil
	})

	// Someone flushes the table: the periodic check rewrites it.
	sh(t, "nft", "flush", "table", "ip", DefaultTable)
	eventually(t, "rules restored after a flush", func() error {
		_, err := get(pod2, "10.43.0.20:80")
		return err
	})

	// Deleting the Service takes its rules away: the address is refused.
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted service refused", func() error {
		_, err := get(pod2, "10.43.0.20:80")
		if !refused(err) {
			return fmt.Errorf("err = %v, want refused", err)
		}
		return nil
	})
	// And its chains are gone (after the stale-chain delay).
	nft, _ := knftables.New(knftables.IPv4Family, DefaultTable)
	eventually(t, "chains of the deleted service removed", func() error {
		chains, err := nft.List(ctx, "chains")
		if err != nil {
			return err
		}
		for _, c := range chains {
			if strings.Contains(c, "default/web/") {
				return fmt.Errorf("chain %s left", c)
			}
		}
		return nil
	})
}

// serveWhoami answers TCP connections on port with the pod's name and the
// client address it sees.
func (p *pod) serveWhoami(t *testing.T, port int) {
	var ln net.Listener
	if err := p.do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			_, _ = c.Write([]byte(p.name + " " + host))
			c.Close()
		}
	}()
}

// newOutside makes a host outside the cluster: a namespace on a link of
// its own to the node, routing everything through it.
func newOutside(t *testing.T, prefix string) *pod {
	name := prefix + "-out"
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	sh(t, "ip", "link", "add", "ext0", "type", "veth", "peer", "name", "eth0", "netns", name)
	sh(t, "ip", "addr", "add", "192.168.50.1/24", "dev", "ext0")
	sh(t, "ip", "link", "set", "ext0", "up")
	sh(t, "ip", "-n", name, "addr", "add", "192.168.50.2/24", "dev", "eth0")
	sh(t, "ip", "-n", name, "link", "set", "eth0", "up")
	sh(t, "ip", "-n", name, "link", "set", "lo", "up")
	sh(t, "ip", "-n", name, "route", "add", "default", "via", "192.168.50.1")
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &pod{name: name, ip: "192.168.50.2", ns: h}
}

func TestKernelPolicies(t *testing.T) {
	if !runInNodeNetns(t, "TestKernelPolicies") {
		return
	}
	n := startKernelNode(t)
	ctx, pod1, pod2 := n.ctx, n.pod1, n.pod2
	out := newOutside(t, n.prefix)
	pod1.serveWhoami(t, 8081)
	pod2.serveWhoami(t, 8081)
	svcs := n.client.CoreV1().Services("default")
	slices := n.client.DiscoveryV1().EndpointSlices("default")
	create := func(svc *corev1.Service, sl *discoveryv1.EndpointSlice) {
		t.Helper()
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := slices.Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodePort := func(name, ip string, np int32, local bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: np}},
		}}
		if local {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		return s
	}
	// pod2 is on the bridge but counts as another node's.
	create(nodePort("local", "10.43.0.40", 30081, true), slice("default", "local", "local-1", 8081, corev1.ProtocolTCP, ep(pod1.ip, "node", true), ep(pod2.ip, "other", true)))
	create(nodePort("cluster", "10.43.0.41", 30082, false), slice("default", "cluster", "cluster-1", 8081, corev1.ProtocolTCP, ep(pod2.ip, "other", true)))

	t.Run("externalTrafficPolicy Local: this node's endpoints, client address kept", func(t *testing.T) {
		eventually(t, "local node port from outside", func() error {
			for range 10 {
				got, err := get(out, "10.250.0.1:30081")
				if err != nil {
					return err
				}
				if got != pod1.name+" 192.168.50.2" {
					return fmt.Errorf("answer %q, want %q", got, pod1.name+" 192.168.50.2")
				}
			}
			return nil
		})
	})
	t.Run("externalTrafficPolicy Cluster: masqueraded", func(t *testing.T) {
		eventually(t, "cluster node port from outside", func() error {
			got, err := get(out, "10.250.0.1:30082")
			if err != nil {
				return err
			}
			if got != pod2.name+" 10.42.0.1" {
				return fmt.Errorf("answer %q, want %q (the node's bridge address)", got, pod2.name+" 10.42.0.1")
			}
			return nil
		})
	})

	t.Run("load balancer health-check node port", func(t *testing.T) {
		lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lb"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.43.0.42", ClusterIPs: []string{"10.43.0.42"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 32001,
			Ports: []corev1.ServicePort{{Port: 8888, Protocol: corev1.ProtocolTCP, NodePort: 30083}},
		}, Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.250.0.1"}}}}}
		create(lb, slice("default", "lb", "lb-1", 8081, corev1.ProtocolTCP, ep(pod1.ip, "node", true)))
		health := func(wantCode int, wantBody string) func() error {
			return func() error {
				resp, err := http.Get("http://127.0.0.1:32001/")
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != wantCode || !strings.Contains(string(body), wantBody) {
					return fmt.Errorf("health check: %d %s", resp.StatusCode, body)
				}
				return nil
			}
		}
		eventually(t, "health check with a local endpoint", health(200, `"localEndpoints":1`))
		eventually(t, "load-balancer address from outside", func() error {
			got, err := get(out, "10.250.0.1:8888")
			if err == nil && got != pod1.name+" 192.168.50.2" {
				err = fmt.Errorf("answer %q", got)
			}
			return err
		})
		if _, err := slices.Update(ctx, slice("default", "lb", "lb-1", 8081, corev1.ProtocolTCP, ep(pod1.ip, "node", false)), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "health check without one", health(503, `"localEndpoints":0`))
	})

	t.Run("client IP affinity", func(t *testing.T) {
		sticky := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sticky"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.43", ClusterIPs: []string{"10.43.0.43"},
			SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports:           []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
		}}
		create(sticky, slice("default", "sticky", "sticky-1", 8081, corev1.ProtocolTCP, ep(pod1.ip, "node", true), ep(pod2.ip, "node", true)))
		var first string
		eventually(t, "sticky service", func() error {
			var err error
			first, err = get(out, "10.43.0.43:80")
			return err
		})
		for range 20 {
			if got, err := get(out, "10.43.0.43:80"); err != nil || got != first {
				t.Fatalf("affinity broken: %q then %q (%v)", first, got, err)
			}
		}
	})

	t.Run("UDP flows move when their endpoint goes", func(t *testing.T) {
		udp := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "udp"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.44", ClusterIPs: []string{"10.43.0.44"},
			Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}},
		}}
		create(udp, slice("default", "udp", "udp-1", 8080, corev1.ProtocolUDP, ep(pod2.ip, "node", true)))
		// One socket, one flow: without clearing conntrack it would stay
		// with pod2, which still answers.
		var conn net.Conn
		if err := out.do(func() error {
			var err error
			conn, err = net.Dial("udp", "10.43.0.44:53")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ask := func() (string, error) {
			_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
			if _, err := conn.Write([]byte("hi")); err != nil {
				return "", err
			}
			buf := make([]byte, 64)
			n, err := conn.Read(buf)
			return string(buf[:n]), err
		}
		eventually(t, "UDP answered by pod2", func() error {
			got, err := ask()
			if err == nil && got != pod2.name {
				err = fmt.Errorf("answer %q", got)
			}
			return err
		})
		if _, err := slices.Update(ctx, slice("default", "udp", "udp-1", 8080, corev1.ProtocolUDP, ep(pod1.ip, "node", true)), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the same flow answered by pod1", func() error {
			got, err := ask()
			if err == nil && got != pod1.name {
				err = fmt.Errorf("answer %q", got)
			}
			return err
		})
	})
}
