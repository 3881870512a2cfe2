package dns

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"
)

// testEpoch is the fake clock's start, and so the SOA serial.
var testEpoch = time.Unix(1700000000, 0)

type testEnv struct {
	s       *Server
	ctx     context.Context
	clock   *clocktesting.FakeClock
	client  *fake.Clientset
	reg     metrics.KubeRegistry
	factory informers.SharedInformerFactory
}

// newTestEnv builds a server over informers fed from a fake clientset
// holding objs. With start false the informers never start (not synced).
func newTestEnv(t testing.TB, cfg Config, start bool, objs ...runtime.Object) *testEnv {
	t.Helper()
	if cfg.ClusterDNS == nil {
		cfg.ClusterDNS = net.ParseIP("10.43.0.10")
	}
	if cfg.ListenAddress == "" && cfg.LinkName == "" {
		cfg.ListenAddress = "127.0.0.1:0"
	}
	if len(cfg.Upstreams) == 0 && cfg.ResolvConf == "" {
		// No name servers: nothing leaves the test.
		cfg.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
		if err := os.WriteFile(cfg.ResolvConf, []byte("# none\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(testEpoch)
	reg := metrics.NewKubeRegistry()
	s, err := New(cfg, Deps{
		Services:       factory.Core().V1().Services().Informer(),
		EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
		Metrics:        reg,
		Clock:          clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	if start {
		factory.Start(ctx.Done())
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.Fatalf("%v did not sync", typ)
			}
		}
	}
	return &testEnv{s: s, ctx: ctx, clock: clk, client: client, reg: reg, factory: factory}
}

// recorder is a dns.ResponseWriter keeping what is written.
type recorder struct {
	tcp  bool
	v6   bool
	last []byte
}

func (r *recorder) addr() (ip net.IP) {
	if r.v6 {
		return net.ParseIP("fd00::1")
	}
	return net.IPv4(10, 42, 0, 1)
}

func (r *recorder) LocalAddr() net.Addr {
	if r.tcp {
		return &net.TCPAddr{IP: net.IPv4(10, 43, 0, 10), Port: 53}
	}
	return &net.UDPAddr{IP: net.IPv4(10, 43, 0, 10), Port: 53}
}

func (r *recorder) RemoteAddr() net.Addr {
	if r.tcp {
		return &net.TCPAddr{IP: r.addr(), Port: 40000}
	}
	return &net.UDPAddr{IP: r.addr(), Port: 40000}
}

func (r *recorder) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = r.Write(b)
	return err
}

func (r *recorder) Write(b []byte) (int, error) {
	r.last = append(r.last[:0], b...)
	return len(b), nil
}

func (r *recorder) Close() error        { return nil }
func (r *recorder) TsigStatus() error   { return nil }
func (r *recorder) TsigTimersOnly(bool) {}
func (r *recorder) Hijack()             {}

// ask sends one question through the handler and returns the decoded
// response and its size.
func (e *testEnv) ask(t testing.TB, req *dns.Msg, tcp bool) (*dns.Msg, int) {
	t.Helper()
	w := &recorder{tcp: tcp}
	e.s.handle(e.ctx, w, req)
	if w.last == nil {
		t.Fatalf("no response to %v", req.Question)
	}
	m := new(dns.Msg)
	if err := m.Unpack(w.last); err != nil {
		t.Fatalf("unpack response: %v", err)
	}
	if m.Id != req.Id {
		t.Fatalf("response ID %d, want %d", m.Id, req.Id)
	}
	return m, len(w.last)
}

func question(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

// rrs renders records as single-spaced strings.
func rrs(rs []dns.RR) []string {
	var out []string
	for _, rr := range rs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	return out
}

// Objects.

func clusterIPService(ns, name string, ips []string, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: ips, Ports: ports},
	}
	if len(ips) > 0 {
		svc.Spec.ClusterIP = ips[0]
	}
	return svc
}

func headlessService(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone,
			ClusterIPs: []string{corev1.ClusterIPNone}, Ports: ports,
		},
	}
}

func externalService(ns, name, target string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
	}
}

func svcPort(name string, port int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: proto}
}

func slicePort(name string, port int32, proto corev1.Protocol) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto}
}

type ep struct {
	ip       string
	hostname string
	ready    *bool
}

var (
	yes = func() *bool { b := true; return &b }()
	no  = func() *bool { b := false; return &b }()
)

func endpointSlice(ns, name, svc string, family discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
		Ports:       ports,
	}
	for _, e := range eps {
		d := discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: e.ready}}
		if e.hostname != "" {
			h := e.hostname
			d.Hostname = &h
		}
		sl.Endpoints = append(sl.Endpoints, d)
	}
	return sl
}
