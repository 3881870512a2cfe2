package dns

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestForwarderReadsResolvConf(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	etc := filepath.Join(dir, "resolv.conf")
	resolved := filepath.Join(dir, "resolved.conf")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(etc, "nameserver 192.0.2.1\nnameserver 10.43.0.10\nnameserver 2001:db8::53\n")

	clk := clocktesting.NewFakeClock(testEpoch)
	m, err := newServerMetrics("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newForwarder(Config{ResolvConf: etc}, []netip.Addr{netip.MustParseAddr("10.43.0.10")}, clk, m)
	f.resolvedPath = resolved
	f.start(ctx)
	// The cluster DNS address itself is dropped: it would loop.
	if diff := cmp.Diff([]string{"192.0.2.1:53", "[2001:db8::53]:53"}, f.upstreams(ctx)); diff != "" {
		t.Errorf("upstreams (-want +got):\n%s", diff)
	}

	// systemd-resolved's stub is looked through, once the change is seen.
	write(resolved, "nameserver 198.51.100.7\n")
	write(etc, "# stub\nnameserver 127.0.0.53\noptions edns0\n")
	if got := f.upstreams(ctx); len(got) != 2 {
		t.Errorf("re-read before the check interval: %v", got)
	}
	clk.Step(recheckInterval)
	if diff := cmp.Diff([]string{"198.51.100.7:53"}, f.upstreams(ctx)); diff != "" {
		t.Errorf("upstreams after the change (-want +got):\n%s", diff)
	}

	// A vanished file keeps the last list.
	if err := os.Remove(etc); err != nil {
		t.Fatal(err)
	}
	clk.Step(recheckInterval)
	if diff := cmp.Diff([]string{"198.51.100.7:53"}, f.upstreams(ctx)); diff != "" {
		t.Errorf("upstreams with the file gone (-want +got):\n%s", diff)
	}
}

func TestCacheTTL(t *testing.T) {
	a := func(ttl uint32) dns.RR {
		return &dns.A{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: net.IPv4(192, 0, 2, 1)}
	}
	soa := func(ttl, minttl uint32) dns.RR {
		return &dns.SOA{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl}, Ns: "a.", Mbox: "b.", Minttl: minttl}
	}
	tests := []struct {
		name     string
		msg      dns.Msg
		ttl      uint32
		negative bool
	}{
		{"smallest record TTL", dns.Msg{Answer: []dns.RR{a(20), a(10)}}, 10, false},
		{"capped at 30s", dns.Msg{Answer: []dns.RR{a(3600)}}, 30, false},
		{"zero TTL not cached", dns.Msg{Answer: []dns.RR{a(0)}}, 0, false},
		{"NXDOMAIN by SOA minimum", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{soa(3600, 2)}}, 2, true},
		{"NXDOMAIN capped at 5s", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{soa(3600, 3600)}}, 5, true},
		{"NODATA by SOA TTL", dns.Msg{Ns: []dns.RR{soa(1, 3600)}}, 1, true},
		{"denial without SOA not cached", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}}, 0, true},
		{"SERVFAIL not cached", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeServerFailure}, Answer: []dns.RR{a(20)}}, 0, false},
		{"truncated not cached", dns.Msg{MsgHdr: dns.MsgHdr{Truncated: true}, Answer: []dns.RR{a(20)}}, 0, false},
	}
	for _, tt := range tests {
		ttl, neg := cacheTTL(&tt.msg)
		if ttl != tt.ttl || neg != tt.negative {
			t.Errorf("%s: ttl %d negative %v, want %d %v", tt.name, ttl, neg, tt.ttl, tt.negative)
		}
	}
}

func TestCacheBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(testEpoch)
	m, err := newServerMetrics("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newAnswerCache(3, clk, m)
	for i, name := range []string{"a.", "b.", "c.", "d.", "e."} {
		c.put(cacheKey{name: name, qtype: dns.TypeA}, &answer{expires: clk.Now().Add(time.Duration(i+1) * time.Second)})
		if n := c.len(); n > 3 {
			t.Fatalf("%d entries, bound 3", n)
		}
	}
	if _, _, ok := c.get(cacheKey{name: "e.", qtype: dns.TypeA}); !ok {
		t.Error("newest entry missing")
	}
	clk.Step(time.Hour)
	if _, _, ok := c.get(cacheKey{name: "e.", qtype: dns.TypeA}); ok {
		t.Error("expired entry served")
	}
}

func TestAnswerIndex(t *testing.T) {
	resp := new(dns.Msg)
	resp.SetQuestion("www.Example.org.", dns.TypeA)
	resp.Response = true
	resp.Answer = []dns.RR{
		&dns.CNAME{Hdr: dns.RR_Header{Name: "www.Example.org.", Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 7}, Target: "web.example.org."},
		&dns.A{Hdr: dns.RR_Header{Name: "web.example.org.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 8}, A: net.IPv4(192, 0, 2, 1)},
	}
	resp.Ns = []dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: "example.org.", Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 9}, Ns: "ns.example.org."}}
	resp.SetEdns0(1232, false)
	a, err := newAnswer(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ttls) != 3 {
		t.Fatalf("%d TTL offsets, want 3 (OPT dropped)", len(a.ttls))
	}
	if a.qnameEnd != 12+len("www.Example.org.")+1 {
		t.Errorf("question name ends at %d", a.qnameEnd)
	}
	// Rewrite the TTLs as a cache hit does and decode.
	b := append([]byte(nil), a.wire...)
	for _, off := range a.ttls {
		b[off], b[off+1], b[off+2], b[off+3] = 0, 0, 0, 4
	}
	out := new(dns.Msg)
	if err := out.Unpack(b); err != nil {
		t.Fatal(err)
	}
	for _, rr := range append(out.Answer, out.Ns...) {
		if rr.Header().Ttl != 4 {
			t.Errorf("%v: TTL not rewritten", rr)
		}
	}
	if out.IsEdns0() != nil || !strings.EqualFold(out.Question[0].Name, "www.example.org.") {
		t.Errorf("OPT %v question %v", out.IsEdns0(), out.Question)
	}
}
