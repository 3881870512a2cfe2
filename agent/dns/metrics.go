package dns

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
	"k8s.io/component-base/metrics"
)

// The metrics carry CoreDNS's names and labels (coredns_dns_*,
// coredns_cache_*, coredns_forward_*, coredns_proxy_*), so dashboards
// built for a cluster's CoreDNS read k1s's node DNS too. As with CoreDNS's
// default Corefile (".:53"), every query is in zone "."; view is empty.

const (
	zoneLabel = "."
	viewLabel = ""
)

// Values of the responses' "plugin" label: who wrote the answer.
const (
	pluginNone = iota // the server itself (errors, refusals)
	pluginKubernetes
	pluginCache
	pluginForward
	numPlugins
)

var pluginNames = [numPlugins]string{"", "kubernetes", "cache", "forward"}

// monitoredTypes are the query types that get a "type" label of their own,
// as in CoreDNS; the others count as "other".
var monitoredTypes = []uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeMX, dns.TypeSOA, dns.TypeCNAME, dns.TypePTR,
	dns.TypeTXT, dns.TypeNS, dns.TypeSRV, dns.TypeDS, dns.TypeDNSKEY, dns.TypeRRSIG,
	dns.TypeNSEC, dns.TypeNSEC3, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeIXFR, dns.TypeAXFR,
	dns.TypeANY,
}

var typeIndex = func() map[uint16]int {
	m := make(map[uint16]int, len(monitoredTypes))
	for i, t := range monitoredTypes {
		m[t] = i
	}
	return m
}()

func typeSlot(t uint16) int {
	switch t { // the common ones without a map lookup
	case dns.TypeA:
		return 0
	case dns.TypeAAAA:
		return 1
	}
	if i, ok := typeIndex[t]; ok {
		return i
	}
	return len(monitoredTypes)
}

func typeName(slot int) string {
	if slot < len(monitoredTypes) {
		return dns.TypeToString[monitoredTypes[slot]]
	}
	return "other"
}

const (
	protoUDP = iota
	protoTCP
)

var protoNames = [2]string{"udp", "tcp"}

// numRcodes covers the rcodes a response can carry (4 bits plus the
// extended ones up to BADCOOKIE); larger ones count as the last slot.
const numRcodes = 24

type serverMetrics struct {
	server string

	requests      *metrics.CounterVec
	duration      *metrics.HistogramVec
	requestSize   *metrics.HistogramVec
	responseSize  *metrics.HistogramVec
	responses     *metrics.CounterVec
	cacheEntries  *metrics.GaugeVec
	cacheRequests *metrics.CounterVec
	cacheHits     *metrics.CounterVec
	cacheMisses   *metrics.CounterVec
	fwdRequests   *metrics.CounterVec
	fwdResponses  *metrics.CounterVec
	proxyDuration *metrics.HistogramVec

	// Children resolved once (after registration) or on first use, so a
	// query does not hash label values.
	durationChild  metrics.ObserverMetric
	reqSizeChild   [2]metrics.ObserverMetric
	respSizeChild  [2]metrics.ObserverMetric
	requestsChild  [2][2][]atomic.Pointer[counterRef] // proto, family-1, type
	responsesChild [numRcodes + 1][numPlugins]atomic.Pointer[counterRef]
	cacheHit       [2]metrics.CounterMetric // success, denial
	cacheMiss      metrics.CounterMetric
	cacheRequest   metrics.CounterMetric
	cacheSize      [2]metrics.GaugeMetric // success, denial
	upstreams      sync.Map               // to → *upstreamMetrics
}

type counterRef struct{ c metrics.CounterMetric }

// upstreamMetrics are an upstream's metrics, and its health.
type upstreamMetrics struct {
	// downUntil (unix nanoseconds) is set when the upstream failed to
	// answer: until then it is tried after the others.
	downUntil atomic.Int64
	requests  metrics.CounterMetric
	mu        sync.Mutex
	byRcode   map[int]*upstreamRcode
	to        string
	m         *serverMetrics
}

type upstreamRcode struct {
	responses metrics.CounterMetric
	duration  metrics.ObserverMetric
}

// timeBuckets are CoreDNS's: 0.25 ms to 8 s.
var timeBuckets = metrics.ExponentialBuckets(0.00025, 2, 16)

var sizeBuckets = []float64{0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16e3, 32e3, 48e3, 64e3}

func newServerMetrics(server string, reg metrics.KubeRegistry) (*serverMetrics, error) {
	m := &serverMetrics{server: server}
	m.requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "requests_total",
		Help:           "Counter of DNS requests made per zone, protocol and family.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zone", "view", "proto", "family", "type"})
	m.duration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "request_duration_seconds",
		Help:           "Histogram of the time (in seconds) each request took per zone.",
		Buckets:        timeBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zone", "view"})
	m.requestSize = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "request_size_bytes",
		Help:           "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
		Buckets:        sizeBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zone", "view", "proto"})
	m.responseSize = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "response_size_bytes",
		Help:           "Size of the returned response in bytes.",
		Buckets:        sizeBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zone", "view", "proto"})
	m.responses = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "responses_total",
		Help:           "Counter of response status codes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zone", "view", "rcode", "plugin"})
	m.cacheEntries = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "coredns", Subsystem: "cache", Name: "entries",
		Help:           "The number of elements in the cache.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "type", "zones", "view"})
	m.cacheRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "cache", Name: "requests_total",
		Help:           "The count of cache requests.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zones", "view"})
	m.cacheHits = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "cache", Name: "hits_total",
		Help:           "The count of cache hits.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "type", "zones", "view"})
	m.cacheMisses = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "cache", Name: "misses_total",
		Help:           "The count of cache misses.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "zones", "view"})
	m.fwdRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "forward", Name: "requests_total",
		Help:           "Counter of requests made per upstream.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"to"})
	m.fwdResponses = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "forward", Name: "responses_total",
		Help:           "Counter of responses received per upstream.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"to", "rcode"})
	m.proxyDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "coredns", Subsystem: "proxy", Name: "request_duration_seconds",
		Help:           "Histogram of the time each request took.",
		Buckets:        timeBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"proxy_name", "to", "rcode"})

	if reg != nil {
		for _, c := range []metrics.Registerable{
			m.requests, m.duration, m.requestSize, m.responseSize, m.responses,
			m.cacheEntries, m.cacheRequests, m.cacheHits, m.cacheMisses,
			m.fwdRequests, m.fwdResponses, m.proxyDuration,
		} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register dns metrics: %w", err)
			}
		}
	}
	// Children are taken after registration: before it they are no-ops.
	m.durationChild = m.duration.WithLabelValues(server, zoneLabel, viewLabel)
	for p := range 2 {
		m.reqSizeChild[p] = m.requestSize.WithLabelValues(server, zoneLabel, viewLabel, protoNames[p])
		m.respSizeChild[p] = m.responseSize.WithLabelValues(server, zoneLabel, viewLabel, protoNames[p])
		for f := range 2 {
			m.requestsChild[p][f] = make([]atomic.Pointer[counterRef], len(monitoredTypes)+1)
		}
	}
	m.cacheHit[0] = m.cacheHits.WithLabelValues(server, "success", zoneLabel, viewLabel)
	m.cacheHit[1] = m.cacheHits.WithLabelValues(server, "denial", zoneLabel, viewLabel)
	m.cacheMiss = m.cacheMisses.WithLabelValues(server, zoneLabel, viewLabel)
	m.cacheRequest = m.cacheRequests.WithLabelValues(server, zoneLabel, viewLabel)
	m.cacheSize[0] = m.cacheEntries.WithLabelValues(server, "success", zoneLabel, viewLabel)
	m.cacheSize[1] = m.cacheEntries.WithLabelValues(server, "denial", zoneLabel, viewLabel)
	return m, nil
}

// request counts one query.
func (m *serverMetrics) request(proto, family int, qtype uint16, size int) {
	slot := typeSlot(qtype)
	p := &m.requestsChild[proto][family-1][slot]
	ref := p.Load()
	if ref == nil {
		ref = &counterRef{m.requests.WithLabelValues(m.server, zoneLabel, viewLabel, protoNames[proto], familyName(family), typeName(slot))}
		p.Store(ref)
	}
	ref.c.Inc()
	m.reqSizeChild[proto].Observe(float64(size))
}

// response counts one answer.
func (m *serverMetrics) response(proto, rcode, plugin, size int, seconds float64) {
	r := rcode
	if r < 0 || r > numRcodes {
		r = numRcodes
	}
	p := &m.responsesChild[r][plugin]
	ref := p.Load()
	if ref == nil {
		ref = &counterRef{m.responses.WithLabelValues(m.server, zoneLabel, viewLabel, rcodeName(rcode), pluginNames[plugin])}
		p.Store(ref)
	}
	ref.c.Inc()
	m.respSizeChild[proto].Observe(float64(size))
	m.durationChild.Observe(seconds)
}

func (m *serverMetrics) upstream(to string) *upstreamMetrics {
	if u, ok := m.upstreams.Load(to); ok {
		return u.(*upstreamMetrics)
	}
	u, _ := m.upstreams.LoadOrStore(to, &upstreamMetrics{
		requests: m.fwdRequests.WithLabelValues(to),
		byRcode:  map[int]*upstreamRcode{},
		to:       to,
		m:        m,
	})
	return u.(*upstreamMetrics)
}

// answered counts an upstream's response.
func (u *upstreamMetrics) answered(rcode int, seconds float64) {
	u.mu.Lock()
	r, ok := u.byRcode[rcode]
	if !ok {
		name := rcodeName(rcode)
		r = &upstreamRcode{
			responses: u.m.fwdResponses.WithLabelValues(u.to, name),
			duration:  u.m.proxyDuration.WithLabelValues("forward", u.to, name),
		}
		u.byRcode[rcode] = r
	}
	u.mu.Unlock()
	r.responses.Inc()
	r.duration.Observe(seconds)
}

func familyName(f int) string {
	if f == 2 {
		return "2"
	}
	return "1"
}

func rcodeName(rcode int) string {
	if s, ok := dns.RcodeToString[rcode]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", rcode)
}
