package dns

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/k1s/k1s/internal/freeport"
)

// fakeUpstream is a resolver on 127.0.0.1 serving a few example.org names
// and counting the questions it gets.
type fakeUpstream struct {
	addr string
	mu   sync.Mutex
	seen map[string]int // "<proto> <name> <type>"
}

func startUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{seen: map[string]int{}}
	pc, ln, err := listen(t.Context(), netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	u.addr = pc.LocalAddr().String()
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	servers := []*dns.Server{
		{PacketConn: pc, Handler: dns.HandlerFunc(u.serve), NotifyStartedFunc: notify},
		{Listener: ln, Handler: dns.HandlerFunc(u.serve), NotifyStartedFunc: notify},
	}
	for _, srv := range servers {
		go srv.ActivateAndServe() //nolint:errcheck // stopped by Shutdown below
	}
	<-started
	<-started
	t.Cleanup(func() {
		for _, srv := range servers {
			srv.Shutdown() //nolint:errcheck
		}
	})
	return u
}

func (u *fakeUpstream) count(proto, name string, qtype uint16) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[proto+" "+name+" "+dns.TypeToString[qtype]]
}

func (u *fakeUpstream) serve(w dns.ResponseWriter, r *dns.Msg) {
	q := r.Question[0]
	proto := "udp"
	if strings.HasPrefix(w.LocalAddr().Network(), "tcp") {
		proto = "tcp"
	}
	u.mu.Lock()
	u.seen[proto+" "+strings.ToLower(q.Name)+" "+dns.TypeToString[q.Qtype]]++
	u.mu.Unlock()

	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: "example.org.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 3600},
		Ns: "ns.example.org.", Mbox: "h.example.org.", Serial: 1, Refresh: 1, Retry: 1, Expire: 1, Minttl: 3600}
	switch name := strings.ToLower(q.Name); {
	case name == "ext.example.org." && q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: []byte{192, 0, 2, 10}})
	case name == "ext.example.org.":
		m.Ns = append(m.Ns, soa)
	case name == "big.example.org." && q.Qtype == dns.TypeTXT:
		for i := range 60 {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60},
				Txt: []string{fmt.Sprintf("record %02d %s", i, strings.Repeat("x", 40))}})
		}
	case name == "fail.example.org.":
		m.Rcode = dns.RcodeServerFailure
	default:
		m.Rcode = dns.RcodeNameError
		if strings.HasSuffix(name, ".example.org.") {
			m.Ns = append(m.Ns, soa)
		}
	}
	if opt := r.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), false)
	}
	if proto == "udp" {
		size := dns.MinMsgSize
		if opt := r.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	w.WriteMsg(m) //nolint:errcheck
}

// runServer runs env's server and returns its address; it stops with the
// test, and Run must return nil.
func runServer(t *testing.T, env *testEnv) string {
	t.Helper()
	ctx, cancel := context.WithCancel(env.ctx)
	errc := make(chan error, 1)
	go func() { errc <- env.s.Run(ctx) }()
	select {
	case <-env.s.Ready():
	case err := <-errc:
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return env.s.Addr().String()
}

func exchange(t *testing.T, proto, addr string, q *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: proto, Timeout: 10 * time.Second}
	resp, _, err := c.Exchange(q, addr)
	if err != nil {
		t.Fatalf("%s %v: %v", proto, q.Question, err)
	}
	return resp
}

func TestServer(t *testing.T) {
	up := startUpstream(t)
	objs := append(clusterObjects(), externalService("default", "ext2", "ext.example.org"))
	env := newTestEnv(t, Config{Upstreams: []string{up.addr}}, true, objs...)
	addr := runServer(t, env)

	t.Run("cluster names over UDP and TCP", func(t *testing.T) {
		for _, proto := range []string{"udp", "tcp"} {
			resp := exchange(t, proto, addr, question("web.default.svc.cluster.local.", dns.TypeA))
			if got := rrs(resp.Answer); len(got) != 1 || got[0] != "web.default.svc.cluster.local. 5 IN A 10.43.0.20" || !resp.Authoritative {
				t.Errorf("%s: %v AA=%v", proto, got, resp.Authoritative)
			}
		}
	})

	t.Run("forwarded and cached", func(t *testing.T) {
		resp := exchange(t, "udp", addr, question("ext.example.org.", dns.TypeA))
		if got := rrs(resp.Answer); len(got) != 1 || got[0] != "ext.example.org. 30 IN A 192.0.2.10" || resp.Authoritative {
			t.Errorf("first answer %v (TTL capped at 30) AA=%v", got, resp.Authoritative)
		}
		env.clock.Step(10 * time.Second)
		resp = exchange(t, "tcp", addr, question("EXT.Example.org.", dns.TypeA))
		if got := rrs(resp.Answer); len(got) != 1 || got[0] != "EXT.Example.org. 20 IN A 192.0.2.10" || resp.Question[0].Name != "EXT.Example.org." {
			t.Errorf("cached answer %v question %v, want the TTL counted down and the name as asked", got, resp.Question)
		}
		if n := up.count("udp", "ext.example.org.", dns.TypeA); n != 1 {
			t.Errorf("upstream asked %d times, want 1", n)
		}
		env.clock.Step(21 * time.Second)
		exchange(t, "udp", addr, question("ext.example.org.", dns.TypeA))
		if n := up.count("udp", "ext.example.org.", dns.TypeA); n != 2 {
			t.Errorf("after expiry the upstream was asked %d times, want 2", n)
		}
	})

	t.Run("denials cached up to 5s", func(t *testing.T) {
		for range 2 {
			resp := exchange(t, "udp", addr, question("nx.example.org.", dns.TypeA))
			if resp.Rcode != dns.RcodeNameError || len(resp.Ns) != 1 || resp.Ns[0].Header().Ttl > 5 {
				t.Errorf("denial %s %v", dns.RcodeToString[resp.Rcode], resp.Ns)
			}
		}
		if n := up.count("udp", "nx.example.org.", dns.TypeA); n != 1 {
			t.Errorf("upstream asked %d times, want 1", n)
		}
		env.clock.Step(6 * time.Second)
		exchange(t, "udp", addr, question("nx.example.org.", dns.TypeA))
		if n := up.count("udp", "nx.example.org.", dns.TypeA); n != 2 {
			t.Errorf("after 6s the upstream was asked %d times, want 2", n)
		}
	})

	t.Run("upstream SERVFAIL is passed on, never cached", func(t *testing.T) {
		for range 2 {
			if resp := exchange(t, "udp", addr, question("fail.example.org.", dns.TypeA)); resp.Rcode != dns.RcodeServerFailure {
				t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
			}
		}
		if n := up.count("udp", "fail.example.org.", dns.TypeA); n != 2 {
			t.Errorf("upstream asked %d times, want 2", n)
		}
	})

	t.Run("truncation over UDP, TCP retry", func(t *testing.T) {
		resp := exchange(t, "udp", addr, question("big.example.org.", dns.TypeTXT))
		if !resp.Truncated || len(resp.Answer) >= 60 {
			t.Errorf("UDP: TC=%v with %d records, want truncated", resp.Truncated, len(resp.Answer))
		}
		if n := up.count("tcp", "big.example.org.", dns.TypeTXT); n != 1 {
			t.Errorf("the forwarder retried over TCP %d times, want 1", n)
		}
		resp = exchange(t, "tcp", addr, question("big.example.org.", dns.TypeTXT))
		if resp.Truncated || len(resp.Answer) != 60 {
			t.Errorf("TCP: TC=%v with %d records, want all 60", resp.Truncated, len(resp.Answer))
		}
		q := question("big.example.org.", dns.TypeTXT)
		q.SetEdns0(1232, false)
		resp = exchange(t, "udp", addr, q)
		resp.Compress = true // as sent
		if !resp.Truncated || resp.Len() > 1232 || resp.IsEdns0() == nil {
			t.Errorf("UDP with EDNS0 1232: TC=%v len=%d", resp.Truncated, resp.Len())
		}
		if n := up.count("udp", "big.example.org.", dns.TypeTXT) + up.count("tcp", "big.example.org.", dns.TypeTXT); n != 2 {
			t.Errorf("upstream asked %d times, want 2 (UDP then TCP, then cached)", n)
		}
	})

	t.Run("ExternalName followed upstream", func(t *testing.T) {
		resp := exchange(t, "udp", addr, question("ext2.default.svc.cluster.local.", dns.TypeA))
		got := rrs(resp.Answer)
		if len(got) != 2 || got[0] != "ext2.default.svc.cluster.local. 5 IN CNAME ext.example.org." ||
			!strings.HasPrefix(got[1], "ext.example.org. ") || !strings.HasSuffix(got[1], " IN A 192.0.2.10") {
			t.Errorf("answer %v", got)
		}
		resp = exchange(t, "udp", addr, question("ext2.default.svc.cluster.local.", dns.TypeAAAA))
		if got := rrs(resp.Answer); resp.Rcode != dns.RcodeSuccess || len(got) != 1 || len(resp.Ns) != 1 || resp.Ns[0].Header().Name != "example.org." {
			t.Errorf("AAAA: %s %v ns %v, want the CNAME and the target's SOA", dns.RcodeToString[resp.Rcode], got, resp.Ns)
		}
	})

	t.Run("unknown reverse names go upstream", func(t *testing.T) {
		resp := exchange(t, "udp", addr, question("9.2.0.192.in-addr.arpa.", dns.TypePTR))
		if resp.Rcode != dns.RcodeNameError || up.count("udp", "9.2.0.192.in-addr.arpa.", dns.TypePTR) != 1 {
			t.Errorf("rcode %s, upstream asked %d times", dns.RcodeToString[resp.Rcode], up.count("udp", "9.2.0.192.in-addr.arpa.", dns.TypePTR))
		}
		resp = exchange(t, "udp", addr, question("20.0.43.10.in-addr.arpa.", dns.TypePTR))
		if got := rrs(resp.Answer); len(got) != 1 || up.count("udp", "20.0.43.10.in-addr.arpa.", dns.TypePTR) != 0 {
			t.Errorf("cluster IP PTR: %v", got)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		got := gather(t, env)
		server := "dns://127.0.0.1:0" // the configured address
		for _, want := range []string{
			`coredns_dns_requests_total{family="1",proto="udp",server="` + server + `",type="A",view="",zone="."}`,
			`coredns_dns_requests_total{family="1",proto="tcp",server="` + server + `",type="A",view="",zone="."}`,
			`coredns_dns_responses_total{plugin="kubernetes",rcode="NOERROR",server="` + server + `",view="",zone="."}`,
			`coredns_dns_responses_total{plugin="cache",rcode="NOERROR",server="` + server + `",view="",zone="."}`,
			`coredns_dns_responses_total{plugin="forward",rcode="NOERROR",server="` + server + `",view="",zone="."}`,
			`coredns_dns_request_duration_seconds{server="` + server + `",view="",zone="."}`,
			`coredns_cache_hits_total{server="` + server + `",type="success",view="",zones="."}`,
			`coredns_cache_hits_total{server="` + server + `",type="denial",view="",zones="."}`,
			`coredns_cache_misses_total{server="` + server + `",view="",zones="."}`,
			`coredns_forward_requests_total{to="` + up.addr + `"}`,
			`coredns_forward_responses_total{rcode="SERVFAIL",to="` + up.addr + `"}`,
		} {
			if got[want] < 1 {
				t.Errorf("%s = %v, want > 0", want, got[want])
			}
		}
	})
}

// gather returns the registry's counters and histograms' sample counts
// by name{labels}.
func gather(t *testing.T, env *testEnv) map[string]float64 {
	t.Helper()
	families, err := env.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + labelString(m)
			switch {
			case m.Counter != nil:
				got[key] = m.Counter.GetValue()
			case m.Histogram != nil:
				got[key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return got
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestUpstreamFailover(t *testing.T) {
	up := startUpstream(t)
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	closed := "127.0.0.1:" + strconv.Itoa(port) // nothing listens: refused at once

	env := newTestEnv(t, Config{Upstreams: []string{closed, up.addr}}, true)
	addr := runServer(t, env)
	for _, name := range []string{"ext.example.org.", "other.example.org."} {
		resp := exchange(t, "udp", addr, question(name, dns.TypeA))
		if resp.Rcode == dns.RcodeServerFailure {
			t.Errorf("%s with the first upstream down: SERVFAIL, want the second's answer", name)
		}
	}
	// The failed upstream is tried last for a while: asked once, not twice.
	if n := gather(t, env)[`coredns_forward_requests_total{to="`+closed+`"}`]; n != 1 {
		t.Errorf("the dead upstream was asked %v times, want 1", n)
	}

	down := newTestEnv(t, Config{Upstreams: []string{closed}}, true)
	addr = runServer(t, down)
	for _, proto := range []string{"udp", "tcp"} {
		if resp := exchange(t, proto, addr, question("ext.example.org.", dns.TypeA)); resp.Rcode != dns.RcodeServerFailure {
			t.Errorf("%s with every upstream down: %s, want SERVFAIL", proto, dns.RcodeToString[resp.Rcode])
		}
	}
	if n := gather(t, down)[`coredns_forward_requests_total{to="`+closed+`"}`]; n != 2 {
		t.Errorf("the only upstream was asked %v times for two queries, want 2", n)
	}
	// Cluster names do not need upstreams.
	if resp := exchange(t, "udp", addr, question("dns-version.cluster.local.", dns.TypeTXT)); len(resp.Answer) != 1 {
		t.Errorf("dns-version with upstreams down: %v", resp.Answer)
	}
}

func TestForwardBeforeSync(t *testing.T) {
	up := startUpstream(t)
	env := newTestEnv(t, Config{Upstreams: []string{up.addr}}, false)
	addr := runServer(t, env)
	if resp := exchange(t, "udp", addr, question("ext.example.org.", dns.TypeA)); len(resp.Answer) != 1 {
		t.Errorf("forwarding before the caches synced: %s %v", dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	if resp := exchange(t, "udp", addr, question("web.default.svc.cluster.local.", dns.TypeA)); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("cluster name before sync: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
}
