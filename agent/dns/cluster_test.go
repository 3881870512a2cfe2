package dns

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

const testSOA = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1700000000 7200 1800 86400 5"

func clusterObjects() []runtime.Object {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	v4, v6, fqdn := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN
	pg := []discoveryv1.EndpointPort{slicePort("pg", 5432, tcp)}
	return []runtime.Object{
		clusterIPService("default", "web", []string{"10.43.0.20"},
			svcPort("http", 80, tcp), svcPort("dns", 53, udp), svcPort("dns-tcp", 53, tcp)),
		endpointSlice("default", "web-1", "web", v4, []discoveryv1.EndpointPort{slicePort("http", 8080, tcp)},
			ep{ip: "10.42.0.40", ready: yes}),
		clusterIPService("default", "dual", []string{"10.43.0.21", "fd00::21"}, svcPort("http", 80, tcp)),
		clusterIPService("default", "v6only", []string{"fd00::22"}, svcPort("http", 80, tcp)),
		clusterIPService("default", "pending", nil, svcPort("http", 80, tcp)),
		clusterIPService("other", "web", []string{"10.43.0.30"}, svcPort("http", 80, tcp)),
		headlessService("default", "db", svcPort("pg", 5432, tcp)),
		endpointSlice("default", "db-a", "db", v4, pg,
			ep{ip: "10.42.0.5", hostname: "db-0", ready: yes},
			ep{ip: "10.42.0.6"}, // ready unset: ready
			ep{ip: "10.42.0.7", ready: no}),
		endpointSlice("default", "db-b", "db", v4, pg,
			ep{ip: "10.42.0.6", ready: yes}, // also in db-a
			ep{ip: "10.42.1.8", ready: yes}),
		endpointSlice("default", "db-c", "db", v6, pg, ep{ip: "fd00:42::9", hostname: "db-1", ready: yes}),
		endpointSlice("default", "db-d", "db", fqdn, pg, ep{ip: "db.example.org", ready: yes}),
		headlessService("default", "empty", svcPort("pg", 5432, tcp)),
		endpointSlice("default", "empty-a", "empty", v4, pg, ep{ip: "10.42.0.70", ready: no}),
		headlessService("default", "portless"),
		endpointSlice("default", "portless-a", "portless", v4, nil, ep{ip: "10.42.0.80", ready: yes}),
		externalService("default", "ext", "ext.example.org"),
		externalService("default", "alias", "Web.default.svc.cluster.local"),
		externalService("default", "loop", "loop.default.svc.cluster.local."),
	}
}

func TestClusterAnswers(t *testing.T) {
	env := newTestEnv(t, Config{}, true, clusterObjects()...)
	const z = "cluster.local."
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer []string
		ns     []string
		extra  []string
	}{
		{name: "A of a ClusterIP service", qname: "web.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"web.default.svc.cluster.local. 5 IN A 10.43.0.20"}},
		{name: "names are case-insensitive, the owner as asked", qname: "WEB.Default.SVC.Cluster.Local.", qtype: dns.TypeA,
			answer: []string{"WEB.Default.SVC.Cluster.Local. 5 IN A 10.43.0.20"}},
		{name: "same name in another namespace", qname: "web.other.svc." + z, qtype: dns.TypeA,
			answer: []string{"web.other.svc.cluster.local. 5 IN A 10.43.0.30"}},
		{name: "AAAA of an IPv4 service is NODATA", qname: "web.default.svc." + z, qtype: dns.TypeAAAA,
			ns: []string{testSOA}},
		{name: "TXT of a service is NODATA", qname: "web.default.svc." + z, qtype: dns.TypeTXT,
			ns: []string{testSOA}},
		{name: "dual stack A", qname: "dual.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"dual.default.svc.cluster.local. 5 IN A 10.43.0.21"}},
		{name: "dual stack AAAA", qname: "dual.default.svc." + z, qtype: dns.TypeAAAA,
			answer: []string{"dual.default.svc.cluster.local. 5 IN AAAA fd00::21"}},
		{name: "IPv6 service AAAA", qname: "v6only.default.svc." + z, qtype: dns.TypeAAAA,
			answer: []string{"v6only.default.svc.cluster.local. 5 IN AAAA fd00::22"}},
		{name: "IPv6 service A is NODATA", qname: "v6only.default.svc." + z, qtype: dns.TypeA,
			ns: []string{testSOA}},
		{name: "service without a cluster IP yet has no records", qname: "pending.default.svc." + z, qtype: dns.TypeA,
			ns: []string{testSOA}},
		{name: "unknown service", qname: "nope.default.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "unknown namespace", qname: "web.nons.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "name under the zone that is no service", qname: "foo." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "too many labels", qname: "a.b._http._tcp.web.default.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "namespace with services exists", qname: "default.svc." + z, qtype: dns.TypeA,
			ns: []string{testSOA}},
		{name: "namespace without services does not", qname: "nons.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "svc label exists", qname: "svc." + z, qtype: dns.TypeA, ns: []string{testSOA}},
		{name: "zone SOA", qname: z, qtype: dns.TypeSOA, answer: []string{testSOA}},
		{name: "zone NS", qname: z, qtype: dns.TypeNS,
			answer: []string{"cluster.local. 5 IN NS ns.dns.cluster.local."},
			extra:  []string{"ns.dns.cluster.local. 5 IN A 10.43.0.10"}},
		{name: "name server address", qname: "ns.dns." + z, qtype: dns.TypeA,
			answer: []string{"ns.dns.cluster.local. 5 IN A 10.43.0.10"}},
		{name: "zone A is NODATA", qname: z, qtype: dns.TypeA, ns: []string{testSOA}},
		{name: "schema version", qname: "dns-version." + z, qtype: dns.TypeTXT,
			answer: []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}},
		{name: "schema version A is NODATA", qname: "dns-version." + z, qtype: dns.TypeA, ns: []string{testSOA}},

		// SRV, ClusterIP
		{name: "SRV of a named port", qname: "_http._tcp.web.default.svc." + z, qtype: dns.TypeSRV,
			answer: []string{"_http._tcp.web.default.svc.cluster.local. 5 IN SRV 0 100 80 web.default.svc.cluster.local."},
			extra:  []string{"web.default.svc.cluster.local. 5 IN A 10.43.0.20"}},
		{name: "SRV protocol matters", qname: "_dns._udp.web.default.svc." + z, qtype: dns.TypeSRV,
			answer: []string{"_dns._udp.web.default.svc.cluster.local. 5 IN SRV 0 100 53 web.default.svc.cluster.local."},
			extra:  []string{"web.default.svc.cluster.local. 5 IN A 10.43.0.20"}},
		{name: "SRV wrong protocol", qname: "_dns._tcp.web.default.svc." + z, qtype: dns.TypeSRV,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "SRV unknown port", qname: "_nope._tcp.web.default.svc." + z, qtype: dns.TypeSRV,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "SRV at the service name lists every port once", qname: "web.default.svc." + z, qtype: dns.TypeSRV,
			answer: []string{
				"web.default.svc.cluster.local. 5 IN SRV 0 50 80 web.default.svc.cluster.local.",
				"web.default.svc.cluster.local. 5 IN SRV 0 50 53 web.default.svc.cluster.local.",
			},
			extra: []string{"web.default.svc.cluster.local. 5 IN A 10.43.0.20"}},
		{name: "A at a port name", qname: "_http._tcp.web.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"_http._tcp.web.default.svc.cluster.local. 5 IN A 10.43.0.20"}},
		{name: "SRV of a dual-stack service carries both addresses", qname: "_http._tcp.dual.default.svc." + z, qtype: dns.TypeSRV,
			answer: []string{"_http._tcp.dual.default.svc.cluster.local. 5 IN SRV 0 100 80 dual.default.svc.cluster.local."},
			extra: []string{
				"dual.default.svc.cluster.local. 5 IN A 10.43.0.21",
				"dual.default.svc.cluster.local. 5 IN AAAA fd00::21",
			}},

		// Headless
		{name: "headless A: ready endpoints, merged, once each", qname: "db.default.svc." + z, qtype: dns.TypeA,
			answer: []string{
				"db.default.svc.cluster.local. 5 IN A 10.42.0.5",
				"db.default.svc.cluster.local. 5 IN A 10.42.0.6",
				"db.default.svc.cluster.local. 5 IN A 10.42.1.8",
			}},
		{name: "headless AAAA", qname: "db.default.svc." + z, qtype: dns.TypeAAAA,
			answer: []string{"db.default.svc.cluster.local. 5 IN AAAA fd00:42::9"}},
		{name: "headless without ready endpoints", qname: "empty.default.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "headless without ports", qname: "portless.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"portless.default.svc.cluster.local. 5 IN A 10.42.0.80"}},
		{name: "headless without ports has no SRV", qname: "portless.default.svc." + z, qtype: dns.TypeSRV,
			ns: []string{testSOA}},
		{name: "endpoint hostname", qname: "db-0.db.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"db-0.db.default.svc.cluster.local. 5 IN A 10.42.0.5"}},
		{name: "endpoint hostname AAAA", qname: "db-1.db.default.svc." + z, qtype: dns.TypeAAAA,
			answer: []string{"db-1.db.default.svc.cluster.local. 5 IN AAAA fd00:42::9"}},
		{name: "endpoint hostname, other family is NODATA", qname: "db-1.db.default.svc." + z, qtype: dns.TypeA,
			ns: []string{testSOA}},
		{name: "endpoint named by its address", qname: "10-42-0-6.db.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"10-42-0-6.db.default.svc.cluster.local. 5 IN A 10.42.0.6"}},
		{name: "an endpoint with a hostname has no address name", qname: "10-42-0-5.db.default.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "not-ready endpoint has no name", qname: "10-42-0-7.db.default.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},
		{name: "endpoint of a ClusterIP service", qname: "10-42-0-40.web.default.svc." + z, qtype: dns.TypeA,
			answer: []string{"10-42-0-40.web.default.svc.cluster.local. 5 IN A 10.42.0.40"}},
		{name: "headless SRV: one per ready endpoint", qname: "_pg._tcp.db.default.svc." + z, qtype: dns.TypeSRV,
			answer: []string{
				"_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 25 5432 db-0.db.default.svc.cluster.local.",
				"_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 25 5432 10-42-0-6.db.default.svc.cluster.local.",
				"_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 25 5432 10-42-1-8.db.default.svc.cluster.local.",
				"_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 25 5432 db-1.db.default.svc.cluster.local.",
			},
			extra: []string{
				"db-0.db.default.svc.cluster.local. 5 IN A 10.42.0.5",
				"10-42-0-6.db.default.svc.cluster.local. 5 IN A 10.42.0.6",
				"10-42-1-8.db.default.svc.cluster.local. 5 IN A 10.42.1.8",
				"db-1.db.default.svc.cluster.local. 5 IN AAAA fd00:42::9",
			}},
		{name: "headless SRV unknown port", qname: "_http._tcp.db.default.svc." + z, qtype: dns.TypeSRV,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},

		// ExternalName
		{name: "ExternalName CNAME", qname: "ext.default.svc." + z, qtype: dns.TypeCNAME,
			answer: []string{"ext.default.svc.cluster.local. 5 IN CNAME ext.example.org."}},
		{name: "ExternalName into the zone is followed", qname: "alias.default.svc." + z, qtype: dns.TypeA,
			answer: []string{
				"alias.default.svc.cluster.local. 5 IN CNAME Web.default.svc.cluster.local.",
				"Web.default.svc.cluster.local. 5 IN A 10.43.0.20",
			}},
		{name: "ExternalName into the zone, no data there", qname: "alias.default.svc." + z, qtype: dns.TypeAAAA,
			answer: []string{"alias.default.svc.cluster.local. 5 IN CNAME Web.default.svc.cluster.local."},
			ns:     []string{testSOA}},
		{name: "ExternalName loop ends in SERVFAIL", qname: "loop.default.svc." + z, qtype: dns.TypeA,
			rcode: dns.RcodeServerFailure},
		{name: "ExternalName has no port names", qname: "_http._tcp.ext.default.svc." + z, qtype: dns.TypeSRV,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},

		// Pods
		{name: "pod A", qname: "10-42-0-99.default.pod." + z, qtype: dns.TypeA,
			answer: []string{"10-42-0-99.default.pod.cluster.local. 5 IN A 10.42.0.99"}},
		{name: "pod AAAA", qname: "fd00-42--99.any.pod." + z, qtype: dns.TypeAAAA,
			answer: []string{"fd00-42--99.any.pod.cluster.local. 5 IN AAAA fd00:42::99"}},
		{name: "pod A of an IPv6 name is NODATA", qname: "fd00-42--99.any.pod." + z, qtype: dns.TypeA,
			ns: []string{testSOA}},
		{name: "pod name that is no address", qname: "10-42-0-999.default.pod." + z, qtype: dns.TypeA,
			rcode: dns.RcodeNameError, ns: []string{testSOA}},

		// Reverse
		{name: "PTR of a cluster IP", qname: "20.0.43.10.in-addr.arpa.", qtype: dns.TypePTR,
			answer: []string{"20.0.43.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local."}},
		{name: "PTR of an IPv6 cluster IP", qname: reverseName("fd00::21"), qtype: dns.TypePTR,
			answer: []string{reverseName("fd00::21") + " 5 IN PTR dual.default.svc.cluster.local."}},
		{name: "PTR of an endpoint with a hostname", qname: "5.0.42.10.in-addr.arpa.", qtype: dns.TypePTR,
			answer: []string{"5.0.42.10.in-addr.arpa. 5 IN PTR db-0.db.default.svc.cluster.local."}},
		{name: "PTR of an endpoint without one", qname: "6.0.42.10.IN-ADDR.ARPA.", qtype: dns.TypePTR,
			answer: []string{"6.0.42.10.IN-ADDR.ARPA. 5 IN PTR 10-42-0-6.db.default.svc.cluster.local."}},
		{name: "PTR of an IPv6 endpoint", qname: reverseName("fd00:42::9"), qtype: dns.TypePTR,
			answer: []string{reverseName("fd00:42::9") + " 5 IN PTR db-1.db.default.svc.cluster.local."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tcp := range []bool{false, true} {
				resp, _ := env.ask(t, question(tt.qname, tt.qtype), tcp)
				if resp.Rcode != tt.rcode {
					t.Errorf("rcode %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tt.rcode])
				}
				if tt.rcode != dns.RcodeServerFailure && !resp.Authoritative {
					t.Error("not authoritative")
				}
				if !resp.RecursionAvailable || !resp.Response {
					t.Errorf("flags: RA %v QR %v", resp.RecursionAvailable, resp.Response)
				}
				if resp.Question[0].Name != tt.qname {
					t.Errorf("question %q, want %q", resp.Question[0].Name, tt.qname)
				}
				// Endpoints come in no particular order.
				if diff := cmp.Diff(tt.answer, rrs(resp.Answer), sorted); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.ns, rrs(resp.Ns)); diff != "" {
					t.Errorf("authority (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.extra, rrs(resp.Extra), sorted); diff != "" {
					t.Errorf("additional (-want +got):\n%s", diff)
				}
			}
		})
	}
}

var sorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func reverseName(ip string) string {
	n, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(err)
	}
	return n
}

func TestClusterDomain(t *testing.T) {
	env := newTestEnv(t, Config{ClusterDomain: "Corp.Example."}, true, clusterObjects()...)
	resp, _ := env.ask(t, question("web.default.svc.corp.example.", dns.TypeA), false)
	if got := rrs(resp.Answer); len(got) != 1 || got[0] != "web.default.svc.corp.example. 5 IN A 10.43.0.20" {
		t.Errorf("answer %v", got)
	}
	resp, _ = env.ask(t, question("nope.corp.example.", dns.TypeA), false)
	if resp.Rcode != dns.RcodeNameError || len(resp.Ns) != 1 || resp.Ns[0].Header().Name != "corp.example." {
		t.Errorf("denial %v %v", dns.RcodeToString[resp.Rcode], resp.Ns)
	}
}

func TestBeforeSyncServfail(t *testing.T) {
	env := newTestEnv(t, Config{}, false, clusterObjects()...)
	resp, _ := env.ask(t, question("web.default.svc.cluster.local.", dns.TypeA), false)
	if resp.Rcode != dns.RcodeServerFailure || len(resp.Ns) != 0 || resp.Authoritative {
		t.Errorf("before sync: %s AA=%v ns=%v, want a bare SERVFAIL", dns.RcodeToString[resp.Rcode], resp.Authoritative, resp.Ns)
	}
	resp, _ = env.ask(t, question("nope.default.svc.cluster.local.", dns.TypeA), false)
	if resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("unknown name before sync: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
}

func TestLiveUpdates(t *testing.T) {
	env := newTestEnv(t, Config{}, true)
	// The informer notifies handlers after its cache holds the change.
	changed := make(chan struct{}, 10)
	notify := func(any) { changed <- struct{}{} }
	if _, err := env.s.services.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, DeleteFunc: notify}); err != nil {
		t.Fatal(err)
	}
	q := question("late.default.svc.cluster.local.", dns.TypeA)
	if resp, _ := env.ask(t, q, false); resp.Rcode != dns.RcodeNameError {
		t.Fatalf("before create: %s", dns.RcodeToString[resp.Rcode])
	}
	svc := clusterIPService("default", "late", []string{"10.43.0.99"}, svcPort("http", 80, corev1.ProtocolTCP))
	if _, err := env.client.CoreV1().Services("default").Create(env.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	<-changed
	if resp, _ := env.ask(t, q, false); len(resp.Answer) != 1 {
		t.Errorf("after create: %v %v", dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	if err := env.client.CoreV1().Services("default").Delete(env.ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	<-changed
	if resp, _ := env.ask(t, q, false); resp.Rcode != dns.RcodeNameError {
		t.Errorf("after delete: %v", dns.RcodeToString[resp.Rcode])
	}
}

func TestTruncation(t *testing.T) {
	var eps []ep
	for i := range 100 {
		eps = append(eps, ep{ip: fmt.Sprintf("10.42.%d.%d", i/250, i%250+1), ready: yes})
	}
	objs := []runtime.Object{
		headlessService("default", "big"),
		endpointSlice("default", "big-a", "big", discoveryv1.AddressTypeIPv4, nil, eps...),
	}
	env := newTestEnv(t, Config{}, true, objs...)
	q := question("big.default.svc.cluster.local.", dns.TypeA)

	resp, size := env.ask(t, q, false)
	if !resp.Truncated || size > 512 || len(resp.Answer) == 0 || len(resp.Answer) >= 100 {
		t.Errorf("UDP without EDNS0: TC=%v size=%d answers=%d, want truncated to 512 bytes", resp.Truncated, size, len(resp.Answer))
	}
	q.SetEdns0(4096, false)
	resp, size = env.ask(t, q, false)
	if resp.Truncated || len(resp.Answer) != 100 || resp.IsEdns0() == nil {
		t.Errorf("UDP with 4096-byte EDNS0: TC=%v size=%d answers=%d opt=%v", resp.Truncated, size, len(resp.Answer), resp.IsEdns0())
	}
	q = question("big.default.svc.cluster.local.", dns.TypeA)
	q.SetEdns0(1232, false)
	resp, size = env.ask(t, q, false)
	if !resp.Truncated || size > 1232 || resp.IsEdns0() == nil {
		t.Errorf("UDP with 1232-byte EDNS0: TC=%v size=%d", resp.Truncated, size)
	}
	resp, _ = env.ask(t, question("big.default.svc.cluster.local.", dns.TypeA), true)
	if resp.Truncated || len(resp.Answer) != 100 {
		t.Errorf("TCP: TC=%v answers=%d, want all 100", resp.Truncated, len(resp.Answer))
	}
}

func TestEDNS(t *testing.T) {
	env := newTestEnv(t, Config{}, true, clusterObjects()...)
	q := question("web.default.svc.cluster.local.", dns.TypeA)
	q.SetEdns0(1232, true)
	resp, _ := env.ask(t, q, false)
	opt := resp.IsEdns0()
	if opt == nil || !opt.Do() || opt.UDPSize() != advertisedUDPSize || len(resp.Answer) != 1 {
		t.Errorf("EDNS0 answer: opt=%v answers=%v", opt, resp.Answer)
	}
	q.IsEdns0().SetVersion(1)
	if resp, _ := env.ask(t, q, false); resp.Rcode != dns.RcodeBadVers {
		t.Errorf("EDNS version 1: %s, want BADVERS", dns.RcodeToString[resp.Rcode])
	}
	x := question("web.default.svc.cluster.local.", dns.TypeAXFR)
	if resp, _ := env.ask(t, x, true); resp.Rcode != dns.RcodeRefused {
		t.Errorf("AXFR: %s, want REFUSED", dns.RcodeToString[resp.Rcode])
	}
}

func TestParseReverse(t *testing.T) {
	tests := []struct {
		name string
		want string // "" = not a full reverse name
	}{
		{"4.3.2.1.in-addr.arpa.", "1.2.3.4"},
		{"255.0.0.10.in-addr.arpa.", "10.0.0.255"},
		{"3.2.1.in-addr.arpa.", ""},
		{"5.4.3.2.1.in-addr.arpa.", ""},
		{"256.0.0.10.in-addr.arpa.", ""},
		{"x.0.0.10.in-addr.arpa.", ""},
		{reverseName("2001:db8::1"), "2001:db8::1"},
		{"1.0.ip6.arpa.", ""},
		{"in-addr.arpa.", ""},
	}
	for _, tt := range tests {
		a, ok := parseReverse(tt.name)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tt.want {
			t.Errorf("parseReverse(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestIPLabels(t *testing.T) {
	for _, ip := range []string{"10.42.0.5", "2001:db8::1", "2001:db8::", "fd00:42::9"} {
		a := netip.MustParseAddr(ip)
		l := ipLabel(a)
		back, ok := parseIPLabel(l)
		if !ok || back != a {
			t.Errorf("%s → %q → %v %v", ip, l, back, ok)
		}
	}
	for _, bad := range []string{"", "10-42-0", "10-42-0-256", "web", "1-2-3-4-5", "fe80--1%eth0"} {
		if a, ok := parseIPLabel(bad); ok {
			t.Errorf("parseIPLabel(%q) = %v, want no address", bad, a)
		}
	}
}
