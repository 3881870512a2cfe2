package proxy

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func testConfig() *Config {
	_, cluster, _ := net.ParseCIDR("10.42.0.0/16")
	_, svc, _ := net.ParseCIDR("10.43.0.0/16")
	cfg := &Config{
		NodeName:     "n1",
		NodeIPs:      []net.IP{net.ParseIP("192.0.2.10")},
		ClusterCIDRs: []*net.IPNet{cluster},
		ServiceCIDRs: []*net.IPNet{svc},
		ExemptIPs:    []net.IP{net.ParseIP("10.43.0.10")},
	}
	cfg.SetDefaults()
	return cfg
}

func testService(mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.20", ClusterIPs: []string{"10.43.0.20"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if mut != nil {
		mut(s)
	}
	return s
}

type testEP struct {
	ip, node                    string
	ready, serving, terminating bool
}

func testSlice(eps ...testEP) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)},
		})
	}
	return s
}

var (
	localReady    = testEP{ip: "10.42.0.5", node: "n1", ready: true, serving: true}
	remoteReady   = testEP{ip: "10.42.1.5", node: "n2", ready: true, serving: true}
	remoteTerm    = testEP{ip: "10.42.1.6", node: "n2", serving: true, terminating: true}
	remoteGone    = testEP{ip: "10.42.1.7", node: "n2", terminating: true}
	localNotReady = testEP{ip: "10.42.0.9", node: "n1"}
)

// names replaces {svc}, {local}, {ext}, {fw}, {ep:IP}, {aff:IP} in the
// expected text with the chain and set names of ns/web:http.
func names(s string) string {
	return namesFor(s, corev1.ProtocolTCP)
}

func namesFor(s string, proto corev1.Protocol) string {
	sp := &servicePort{svc: types.NamespacedName{Namespace: "ns", Name: "web"}, portName: "http", protocol: proto}
	base := chainBase(sp, "")
	r := strings.NewReplacer(
		"{svc}", prefixClusterPolicyChain+base,
		"{local}", prefixLocalPolicyChain+base,
		"{ext}", prefixExternalChain+base,
		"{fw}", prefixFirewallChain+base,
	)
	s = r.Replace(s)
	for _, kind := range []struct{ tag, prefix string }{{"{ep:", prefixEndpointChain}, {"{aff:", prefixAffinitySet}} {
		for {
			i := strings.Index(s, kind.tag)
			if i < 0 {
				break
			}
			j := strings.Index(s[i:], "}") + i
			ip := s[i+len(kind.tag) : j]
			s = s[:i] + kind.prefix + chainBase(sp, (endpoint{ip: ip, port: 8080}).nameSuffix()) + s[j+1:]
		}
	}
	return s
}

// render prints a Service's rules as text: chains with their rules, then
// sets, then elements, each sorted.
func render(sr *serviceRules) string {
	var b strings.Builder
	for _, c := range sortedKeys(sr.chains) {
		b.WriteString("chain " + c + "\n")
		for _, r := range sr.chains[c] {
			b.WriteString("  " + r + "\n")
		}
	}
	var sets []string
	for _, s := range sr.sets {
		sets = append(sets, "set "+s.name+" timeout "+s.timeout.String())
	}
	slices.Sort(sets)
	var els []string
	for _, e := range sr.elements {
		line := "element " + e.container + " { " + strings.Join(e.key, " . ")
		if e.isMap {
			line += " : " + e.value
		}
		els = append(els, line+" }")
	}
	slices.Sort(els)
	for _, l := range append(sets, els...) {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func TestServiceRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		slice *discoveryv1.EndpointSlice
		want  string
		hc    map[int32]int
	}{{
		name:  "cluster IP with a local and a remote endpoint",
		svc:   testService(nil),
		slice: testSlice(localReady, remoteReady, localNotReady),
		want: `chain {svc}
  meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.42.0.5 . 8080, 1 : 10.42.1.5 . 8080 }
element cluster-ips { 10.43.0.20 }
element hairpin-connections { 10.42.0.5 . 10.42.0.5 . tcp . 8080 }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
`,
	}, {
		name:  "no endpoint: rejected",
		svc:   testService(nil),
		slice: testSlice(localNotReady, remoteGone),
		want: `element cluster-ips { 10.43.0.20 }
element no-endpoint-services { 10.43.0.20 . tcp . 80 : goto reject-chain }
`,
	}, {
		name:  "no ready endpoint: serving terminating ones are used",
		svc:   testService(nil),
		slice: testSlice(remoteTerm, remoteGone),
		want: `chain {svc}
  meta l4proto tcp dnat to 10.42.1.6:8080
element cluster-ips { 10.43.0.20 }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
`,
	}, {
		name: "node port, cluster policy: masqueraded",
		svc: testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
		}),
		slice: testSlice(remoteReady),
		want: `chain {ext}
  mark set mark or 0x00004000
  goto {svc}
chain {svc}
  meta l4proto tcp dnat to 10.42.1.5:8080
element cluster-ips { 10.43.0.20 }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
element service-nodeports { tcp . 30080 : goto {ext} }
`,
	}, {
		name: "load balancer, local policy, no local endpoint: outside traffic dropped, pods and node short-circuited",
		svc: testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32000
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
		}),
		slice: testSlice(remoteReady),
		hc:    map[int32]int{32000: 0},
		want: `chain {ext}
  ip saddr 10.42.0.0/16 goto {svc}
  fib saddr type local mark set mark or 0x00004000
  fib saddr type local goto {svc}
chain {svc}
  meta l4proto tcp dnat to 10.42.1.5:8080
element cluster-ips { 10.43.0.20 }
element no-endpoint-nodeports { tcp . 30080 : drop }
element no-endpoint-services { 192.0.2.10 . tcp . 80 : drop }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
element service-ips { 192.0.2.10 . tcp . 80 : goto {ext} }
element service-nodeports { tcp . 30080 : goto {ext} }
`,
	}, {
		name: "load balancer, local policy, a local endpoint; source ranges",
		svc: testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32000
			s.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
		}),
		slice: testSlice(localReady, remoteReady),
		hc:    map[int32]int{32000: 1},
		want: `chain {ext}
  ip saddr 10.42.0.0/16 goto {svc}
  fib saddr type local mark set mark or 0x00004000
  fib saddr type local goto {svc}
  goto {local}
chain {fw}
  ip saddr != { 198.51.100.0/24 } drop
chain {local}
  meta l4proto tcp dnat to 10.42.0.5:8080
chain {svc}
  meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.42.0.5 . 8080, 1 : 10.42.1.5 . 8080 }
element cluster-ips { 10.43.0.20 }
element firewall-ips { 192.0.2.10 . tcp . 80 : goto {fw} }
element hairpin-connections { 10.42.0.5 . 10.42.0.5 . tcp . 8080 }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
element service-ips { 192.0.2.10 . tcp . 80 : goto {ext} }
element service-nodeports { tcp . 30080 : goto {ext} }
`,
	}, {
		name: "internal traffic policy Local with only remote endpoints: dropped",
		svc: testService(func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		}),
		slice: testSlice(remoteReady),
		want: `element cluster-ips { 10.43.0.20 }
element no-endpoint-services { 10.43.0.20 . tcp . 80 : drop }
`,
	}, {
		name: "client IP affinity",
		svc: testService(func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
		}),
		slice: testSlice(localReady, remoteReady),
		want: `chain {ep:10.42.0.5}
  update @{aff:10.42.0.5} { ip saddr }
  meta l4proto tcp dnat to 10.42.0.5:8080
chain {ep:10.42.1.5}
  update @{aff:10.42.1.5} { ip saddr }
  meta l4proto tcp dnat to 10.42.1.5:8080
chain {svc}
  ip saddr @{aff:10.42.0.5} goto {ep:10.42.0.5}
  ip saddr @{aff:10.42.1.5} goto {ep:10.42.1.5}
  numgen random mod 2 vmap { 0 : goto {ep:10.42.0.5}, 1 : goto {ep:10.42.1.5} }
set {aff:10.42.0.5} timeout 1m0s
set {aff:10.42.1.5} timeout 1m0s
element cluster-ips { 10.43.0.20 }
element hairpin-connections { 10.42.0.5 . 10.42.0.5 . tcp . 8080 }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
`,
	}, {
		name: "external IP",
		svc: testService(func(s *corev1.Service) {
			s.Spec.ExternalIPs = []string{"198.51.100.7"}
		}),
		slice: testSlice(remoteReady),
		want: `chain {ext}
  mark set mark or 0x00004000
  goto {svc}
chain {svc}
  meta l4proto tcp dnat to 10.42.1.5:8080
element cluster-ips { 10.43.0.20 }
element service-ips { 10.43.0.20 . tcp . 80 : goto {svc} }
element service-ips { 198.51.100.7 . tcp . 80 : goto {ext} }
`,
	}, {
		name: "SCTP",
		svc: testService(func(s *corev1.Service) {
			s.Spec.Ports[0].Protocol = corev1.ProtocolSCTP
		}),
		slice: func() *discoveryv1.EndpointSlice {
			s := testSlice(remoteReady)
			s.Ports[0].Protocol = ptr.To(corev1.ProtocolSCTP)
			return s
		}(),
		want: `chain {svc}
  meta l4proto sctp dnat to 10.42.1.5:8080
element cluster-ips { 10.43.0.20 }
element service-ips { 10.43.0.20 . sctp . 80 : goto {svc} }
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			r := newFamilyRules(corev1.IPv4Protocol, cfg)
			ports := servicePorts(tc.svc, corev1.IPv4Protocol)
			eps := make([][]endpoint, len(ports))
			for i, sp := range ports {
				eps[i] = endpointsFor(sp, []*discoveryv1.EndpointSlice{tc.slice}, cfg.NodeName)
			}
			got := r.service(ports, eps)
			if diff := cmp.Diff(namesFor(tc.want, ports[0].protocol), render(got)); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.hc, got.healthChecks); diff != "" {
				t.Errorf("health checks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServicePortsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Service)
	}{
		{"headless", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} }},
		{"external name", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ServiceTypeExternalName, "", nil
		}},
		{"no cluster IP yet", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil }},
		{"other proxy", func(s *corev1.Service) { s.Labels = map[string]string{LabelServiceProxyName: "other"} }},
		{"IPv6 only", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "fd00::1", []string{"fd00::1"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := servicePorts(testService(tc.mut), corev1.IPv4Protocol); len(got) != 0 {
				t.Errorf("got %d ports, want none", len(got))
			}
		})
	}
}

func TestAffinityDefaultTimeout(t *testing.T) {
	svc := testService(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP })
	got := servicePorts(svc, corev1.IPv4Protocol)
	if len(got) != 1 || time.Duration(got[0].affinitySeconds)*time.Second != 3*time.Hour {
		t.Fatalf("affinity = %+v, want 10800 s", got)
	}
}

func TestEndpointsMergedAcrossSlices(t *testing.T) {
	sp := servicePorts(testService(nil), corev1.IPv4Protocol)[0]
	a := testSlice(localReady, remoteTerm)
	b := testSlice(remoteReady, testEP{ip: "10.42.1.6", node: "n2", ready: true, serving: true})
	b.Name = "web-def"
	other := testSlice(testEP{ip: "10.42.9.9", ready: true})
	other.Ports[0].Name = ptr.To("metrics")
	v6 := testSlice(testEP{ip: "fd00::5", ready: true})
	v6.AddressType = discoveryv1.AddressTypeIPv6
	got := endpointsFor(sp, []*discoveryv1.EndpointSlice{a, b, other, v6}, "n1")
	want := []endpoint{
		{ip: "10.42.0.5", port: 8080, local: true, ready: true, serving: true},
		{ip: "10.42.1.5", port: 8080, ready: true, serving: true},
		// Seen terminating in one slice and ready in another: the ready one wins.
		{ip: "10.42.1.6", port: 8080, ready: true, serving: true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(endpoint{})); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
}
