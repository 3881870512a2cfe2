package dns

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"
)

// Caching of forwarded answers.
const (
	// maxPositiveTTL caps how long an answer is kept (and the TTL clients
	// see for it).
	maxPositiveTTL = 30
	// maxNegativeTTL caps how long a denial (NXDOMAIN, NODATA) is kept.
	maxNegativeTTL = 5
	// maxCachedSize is the largest response kept; larger ones are rare
	// and are fetched again, which keeps the cache's memory bounded by
	// entries × this size.
	maxCachedSize = 8192
)

// cacheKey is a question as the cache sees it: the lower-cased name, type,
// class and the flags that change an upstream's answer.
type cacheKey struct {
	name   string
	qtype  uint16
	qclass uint16
	flags  uint8 // keyDO | keyCD
}

const (
	keyDO = 1 << iota
	keyCD
)

// answer is an upstream's response in wire form, ready to be copied out
// to a client: ID 0, no OPT record, the question name at offset 12.
// Immutable once built.
type answer struct {
	wire []byte
	// ttls are the offsets of every record's TTL field in wire.
	ttls []uint16
	// qnameEnd is the offset just past the question name.
	qnameEnd int
	rcode    int
	// expires is when a cached answer goes stale; zero for an answer that
	// is not cached (its TTLs are left as they came).
	expires  time.Time
	negative bool
}

// answerCache holds forwarded answers, bounded in entries. Safe for
// concurrent use.
type answerCache struct {
	clock clock.PassiveClock
	max   int
	m     *serverMetrics

	mu       sync.Mutex
	items    map[cacheKey]*answer
	negative int // entries that are denials, for the entries gauge
}

func newAnswerCache(max int, clk clock.PassiveClock, m *serverMetrics) *answerCache {
	return &answerCache{clock: clk, max: max, m: m, items: make(map[cacheKey]*answer)}
}

// get returns a fresh entry for k and its remaining TTL in seconds.
func (c *answerCache) get(k cacheKey) (*answer, uint32, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	a, ok := c.items[k]
	if ok && !now.Before(a.expires) {
		c.removeLocked(k, a)
		ok = false
	}
	c.mu.Unlock()
	c.m.cacheRequest.Inc()
	if !ok {
		c.m.cacheMiss.Inc()
		return nil, 0, false
	}
	if a.negative {
		c.m.cacheHit[1].Inc()
	} else {
		c.m.cacheHit[0].Inc()
	}
	return a, uint32(a.expires.Sub(now) / time.Second), true
}

// put stores a (whose expires is set). When full it drops an expired
// entry or, failing that, an arbitrary one.
func (c *answerCache) put(k cacheKey, a *answer) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[k]; ok {
		c.removeLocked(k, old)
	}
	if len(c.items) >= c.max {
		// Map order is random enough to pick a victim; expired entries met
		// on the way go too.
		seen := 0
		for vk, v := range c.items {
			if seen == 0 || !now.Before(v.expires) {
				c.removeLocked(vk, v)
			}
			if seen++; seen == 8 {
				break
			}
		}
	}
	c.items[k] = a
	if a.negative {
		c.negative++
	}
	c.updateGaugesLocked()
}

func (c *answerCache) removeLocked(k cacheKey, a *answer) {
	delete(c.items, k)
	if a.negative {
		c.negative--
	}
	c.updateGaugesLocked()
}

func (c *answerCache) updateGaugesLocked() {
	c.m.cacheSize[0].Set(float64(len(c.items) - c.negative))
	c.m.cacheSize[1].Set(float64(c.negative))
}

func (c *answerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// cacheTTL is how long resp may be kept, 0 for not at all: answers for
// the smallest TTL among their records, up to maxPositiveTTL; denials for
// their SOA's negative TTL (RFC 2308), up to maxNegativeTTL, and not at
// all without a SOA. Only NOERROR and NXDOMAIN are kept.
func cacheTTL(resp *dns.Msg) (ttl uint32, negative bool) {
	if resp.Truncated {
		return 0, false
	}
	switch {
	case resp.Rcode == dns.RcodeNameError, resp.Rcode == dns.RcodeSuccess && len(resp.Answer) == 0:
		for _, rr := range resp.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				return min(soa.Hdr.Ttl, soa.Minttl, maxNegativeTTL), true
			}
		}
		return 0, true
	case resp.Rcode == dns.RcodeSuccess:
		ttl = maxPositiveTTL
		for _, sec := range [][]dns.RR{resp.Answer, resp.Ns, resp.Extra} {
			for _, rr := range sec {
				if rr.Header().Rrtype == dns.TypeOPT {
					continue
				}
				ttl = min(ttl, rr.Header().Ttl)
			}
		}
		return ttl, false
	}
	return 0, false
}

// newAnswer packs resp into an answer. It strips the OPT record (the
// client's own is added per response) and clears the ID.
func newAnswer(resp *dns.Msg) (*answer, error) {
	if opt := resp.IsEdns0(); opt != nil {
		extra := make([]dns.RR, 0, len(resp.Extra))
		for _, rr := range resp.Extra {
			if rr.Header().Rrtype != dns.TypeOPT {
				extra = append(extra, rr)
			}
		}
		resp.Extra = extra
	}
	resp.Id = 0
	resp.Compress = true
	wire, err := resp.Pack()
	if err != nil {
		return nil, err
	}
	a := &answer{wire: wire, rcode: resp.Rcode}
	if err := a.index(); err != nil {
		return nil, err
	}
	return a, nil
}

var errShortMsg = errors.New("dns: short message")

// index finds the question name's end and every record's TTL offset.
func (a *answer) index() error {
	w := a.wire
	if len(w) < 12 {
		return errShortMsg
	}
	qd := int(binary.BigEndian.Uint16(w[4:]))
	rrs := int(binary.BigEndian.Uint16(w[6:])) + int(binary.BigEndian.Uint16(w[8:])) + int(binary.BigEndian.Uint16(w[10:]))
	if qd != 1 {
		return errors.New("dns: answer without exactly one question")
	}
	off, err := skipName(w, 12)
	if err != nil {
		return err
	}
	a.qnameEnd = off
	off += 4
	a.ttls = make([]uint16, 0, rrs)
	for range rrs {
		off, err = skipName(w, off)
		if err != nil {
			return err
		}
		if off+10 > len(w) {
			return errShortMsg
		}
		a.ttls = append(a.ttls, uint16(off+4))
		off += 10 + int(binary.BigEndian.Uint16(w[off+8:]))
	}
	if off > len(w) {
		return errShortMsg
	}
	return nil
}

// skipName returns the offset past the (possibly compressed) name at off.
func skipName(w []byte, off int) (int, error) {
	for {
		if off >= len(w) {
			return 0, errShortMsg
		}
		c := int(w[off])
		switch c & 0xC0 {
		case 0x00:
			if c == 0 {
				return off + 1, nil
			}
			off += 1 + c
		case 0xC0:
			if off+2 > len(w) {
				return 0, errShortMsg
			}
			return off + 2, nil
		default:
			return 0, errors.New("dns: bad label type")
		}
	}
}
