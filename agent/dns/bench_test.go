package dns

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// nullWriter is a ResponseWriter that drops what it is given.
type nullWriter struct {
	recorder
	remote net.Addr
	n      int
}

func (w *nullWriter) RemoteAddr() net.Addr        { return w.remote }
func (w *nullWriter) Write(b []byte) (int, error) { w.n = len(b); return len(b), nil }

func benchHandle(b *testing.B, env *testEnv, req *dns.Msg) {
	w := &nullWriter{remote: &net.UDPAddr{IP: net.IPv4(10, 42, 0, 1), Port: 40000}}
	env.s.handle(env.ctx, w, req)
	if w.n == 0 {
		b.Fatal("no response")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		env.s.handle(env.ctx, w, req)
	}
}

// BenchmarkServiceA is the in-process answer path of a ClusterIP
// Service's A record: lookup, response and packing (no socket).
func BenchmarkServiceA(b *testing.B) {
	env := newTestEnv(b, Config{}, true, clusterObjects()...)
	benchHandle(b, env, question("web.default.svc.cluster.local.", dns.TypeA))
}

func BenchmarkHeadlessA(b *testing.B) {
	env := newTestEnv(b, Config{}, true, clusterObjects()...)
	benchHandle(b, env, question("db.default.svc.cluster.local.", dns.TypeA))
}

// BenchmarkNXDOMAIN is a search-path miss (ndots:5 makes most lookups of
// outside names try the cluster suffixes first).
func BenchmarkNXDOMAIN(b *testing.B) {
	env := newTestEnv(b, Config{}, true, clusterObjects()...)
	benchHandle(b, env, question("example.com.default.svc.cluster.local.", dns.TypeA))
}

// BenchmarkCacheHit is a forwarded name answered from the cache.
func BenchmarkCacheHit(b *testing.B) {
	env := newTestEnv(b, Config{}, true)
	resp := question("www.example.org.", dns.TypeA)
	resp.Response = true
	resp.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "www.example.org.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.IPv4(192, 0, 2, 1)}}
	a, err := newAnswer(resp)
	if err != nil {
		b.Fatal(err)
	}
	a.expires = env.clock.Now().Add(time.Hour)
	env.s.cache.put(cacheKey{name: "www.example.org.", qtype: dns.TypeA, qclass: dns.ClassINET}, a)
	benchHandle(b, env, question("www.example.org.", dns.TypeA))
}

// BenchmarkUDPServiceA is a query through the real UDP server, one at a
// time, from a client on loopback.
func BenchmarkUDPServiceA(b *testing.B) {
	env := newTestEnv(b, Config{}, true, clusterObjects()...)
	ctx, cancel := context.WithCancel(env.ctx)
	errc := make(chan error, 1)
	go func() { errc <- env.s.Run(ctx) }()
	defer func() {
		cancel()
		<-errc
	}()
	<-env.s.Ready()
	conn, err := net.Dial("udp", env.s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req, err := question("web.default.svc.cluster.local.", dns.TypeA).Pack()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 512)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}
