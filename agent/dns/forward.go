package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/internal/resolvconf"
)

const (
	// tryTimeout bounds one exchange with one upstream.
	tryTimeout = 2 * time.Second
	// downInterval is how long an upstream that did not answer is tried
	// only after the others.
	downInterval = 10 * time.Second
	// recheckInterval is how often the resolver configuration's files are
	// checked for changes (on the query path, by one query at a time).
	recheckInterval = 5 * time.Second
)

var errNoUpstreams = errors.New("no upstream name servers")

// forwarder sends questions to the host's name servers. Safe for
// concurrent use.
type forwarder struct {
	static       []string // Config.Upstreams; empty: read resolvConf
	resolvConf   string
	resolvedPath string
	exclude      []netip.Addr // the server's own addresses: never forward to them
	clock        clock.PassiveClock
	m            *serverMetrics
	udp, tcp     *dns.Client

	list      atomic.Pointer[[]string]
	nextCheck atomic.Int64 // unix nanoseconds
	checkMu   sync.Mutex   // one reader of the files at a time
	stamps    []fileStamp  // guarded by checkMu
}

type fileStamp struct {
	path   string
	exists bool
	mod    time.Time
	size   int64
}

func newForwarder(cfg Config, exclude []netip.Addr, clk clock.PassiveClock, m *serverMetrics) *forwarder {
	var static []string
	if len(cfg.Upstreams) > 0 {
		static = cfg.Upstreams
	}
	f := &forwarder{
		static:       static,
		resolvConf:   cfg.ResolvConf,
		resolvedPath: resolvconf.SystemdResolvedUpstream,
		exclude:      exclude,
		clock:        clk,
		m:            m,
		udp:          &dns.Client{Net: "udp", UDPSize: advertisedUDPSize, Timeout: tryTimeout},
		tcp:          &dns.Client{Net: "tcp", Timeout: tryTimeout},
	}
	empty := []string{}
	f.list.Store(&empty)
	return f
}

// start reads the upstream list the first time.
func (f *forwarder) start(ctx context.Context) {
	if f.static != nil {
		f.list.Store(&f.static)
		klog.FromContext(ctx).V(2).Info("Forwarding to configured upstreams", "upstreams", f.static)
		return
	}
	f.checkMu.Lock()
	defer f.checkMu.Unlock()
	f.reloadLocked(ctx)
	f.nextCheck.Store(f.clock.Now().Add(recheckInterval).UnixNano())
}

// upstreams returns the current list, re-reading the resolver
// configuration when its files changed (looked at every 5 s at most).
func (f *forwarder) upstreams(ctx context.Context) []string {
	if f.static == nil {
		now := f.clock.Now()
		if now.UnixNano() >= f.nextCheck.Load() && f.checkMu.TryLock() {
			f.nextCheck.Store(now.Add(recheckInterval).UnixNano())
			if f.changedLocked() {
				f.reloadLocked(ctx)
			}
			f.checkMu.Unlock()
		}
	}
	return *f.list.Load()
}

func stampOf(path string) fileStamp {
	st := fileStamp{path: path}
	if fi, err := os.Stat(path); err == nil {
		st.exists, st.mod, st.size = true, fi.ModTime(), fi.Size()
	}
	return st
}

func (f *forwarder) changedLocked() bool {
	if len(f.stamps) == 0 {
		return true
	}
	for _, st := range f.stamps {
		now := stampOf(st.path)
		if now.exists != st.exists || now.size != st.size || !now.mod.Equal(st.mod) {
			return true
		}
	}
	return false
}

func (f *forwarder) reloadLocked(ctx context.Context) {
	logger := klog.FromContext(ctx)
	f.stamps = []fileStamp{stampOf(f.resolvConf), stampOf(f.resolvedPath)}
	rc, _, err := resolvconf.Upstream(f.resolvConf, f.resolvedPath)
	if err != nil {
		// Keep what we had: a file being rewritten is read again later.
		logger.Error(err, "Cannot read the host's name servers; names outside the cluster fail until it is readable", "resolvConf", f.resolvConf)
		return
	}
	list := make([]string, 0, len(rc.Nameservers))
	for _, ns := range rc.Nameservers {
		a, err := netip.ParseAddr(ns)
		if err != nil {
			continue
		}
		if slices.Contains(f.exclude, a.Unmap()) {
			continue // a resolv.conf naming the cluster DNS would loop
		}
		list = append(list, net.JoinHostPort(ns, "53"))
	}
	if len(list) == 0 {
		logger.Info("No usable name server in the host's resolver configuration; names outside the cluster fail", "resolvConf", f.resolvConf)
	} else {
		logger.V(2).Info("Forwarding to the host's name servers", "upstreams", list, "resolvConf", f.resolvConf)
	}
	f.list.Store(&list)
}

// exchange sends q to the upstreams in order until one answers with
// other than SERVFAIL or REFUSED.
func (f *forwarder) exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	ups := f.upstreams(ctx)
	if len(ups) == 0 {
		return nil, errNoUpstreams
	}
	// Upstreams in order, those that failed lately last, so that a dead
	// first name server does not cost every query a timeout.
	var errs []error
	now := f.clock.Now().UnixNano()
	tried := make([]bool, len(ups))
	for pass := range 2 {
		for i, up := range ups {
			um := f.m.upstream(up)
			if tried[i] || pass == 0 && um.downUntil.Load() > now {
				continue
			}
			tried[i] = true
			um.requests.Inc()
			start := f.clock.Now()
			resp, err := f.try(ctx, q, up)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", up, err))
				if ctx.Err() != nil {
					return nil, errors.Join(errs...)
				}
				um.downUntil.Store(f.clock.Now().Add(downInterval).UnixNano())
				continue
			}
			um.downUntil.Store(0)
			um.answered(resp.Rcode, f.clock.Since(start).Seconds())
			if resp.Rcode == dns.RcodeServerFailure || resp.Rcode == dns.RcodeRefused {
				errs = append(errs, fmt.Errorf("%s: %s", up, dns.RcodeToString[resp.Rcode]))
				continue
			}
			return resp, nil
		}
	}
	return nil, errors.Join(errs...)
}

// try asks one upstream over UDP, again over TCP when the answer is
// truncated (keeping the truncated one if TCP fails).
func (f *forwarder) try(ctx context.Context, q *dns.Msg, up string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, tryTimeout)
	defer cancel()
	resp, _, err := f.udp.ExchangeContext(ctx, q, up)
	if err != nil {
		return nil, err
	}
	if resp.Truncated {
		if full, _, err := f.tcp.ExchangeContext(ctx, q, up); err == nil {
			resp = full
		}
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, q.Question[0].Name) ||
		resp.Question[0].Qtype != q.Question[0].Qtype {
		return nil, errors.New("answer to another question")
	}
	return resp, nil
}

// lookup answers a question from the cache or, on a miss, upstream,
// caching what may be cached. name is as asked, lname lower-cased. It
// returns the answer, its remaining TTL when cached (otherwise the
// answer's TTLs stand), and whether it came from the cache.
func (s *Server) lookup(ctx context.Context, name, lname string, qtype, qclass uint16, do, cd bool) (*answer, uint32, bool, error) {
	k := cacheKey{name: lname, qtype: qtype, qclass: qclass}
	if do {
		k.flags |= keyDO
	}
	if cd {
		k.flags |= keyCD
	}
	if s.cache != nil {
		if a, remaining, ok := s.cache.get(k); ok {
			return a, remaining, true, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	q := new(dns.Msg)
	q.Id = dns.Id()
	q.RecursionDesired = true
	q.CheckingDisabled = cd
	q.Question = []dns.Question{{Name: name, Qtype: qtype, Qclass: qclass}}
	q.SetEdns0(advertisedUDPSize, do)
	resp, err := s.fwd.exchange(ctx, q)
	if err != nil {
		return nil, 0, false, err
	}
	ttl, negative := cacheTTL(resp)
	a, err := newAnswer(resp)
	if err != nil {
		return nil, 0, false, fmt.Errorf("upstream answer: %w", err)
	}
	if ttl == 0 || s.cache == nil || len(a.wire) > maxCachedSize {
		return a, 0, false, nil
	}
	a.expires = s.clock.Now().Add(time.Duration(ttl) * time.Second)
	a.negative = negative
	s.cache.put(k, a)
	return a, ttl, false, nil
}
