package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// advertisedUDPSize is the EDNS0 buffer size the server offers
	// clients and asks of upstreams (the DNS flag day's 1232).
	advertisedUDPSize = 1232
	// readUDPSize is the largest query read over UDP.
	readUDPSize = 4096
	// queryTimeout bounds the work on one query, forwarding included;
	// stub resolvers give up after 5 s.
	queryTimeout = 5 * time.Second
	// shutdownTimeout bounds the wait for in-flight queries on stop.
	shutdownTimeout = 5 * time.Second
)

// Server is the node's cluster DNS server. Its methods are safe for
// concurrent use; Run is called once.
type Server struct {
	cfg      Config
	zone     string // lower-cased, fully qualified
	dotZone  string // "." + zone
	nsName   string // ns.dns.<zone>
	dnsAddr  netip.Addr
	listenAt netip.AddrPort
	soa      *dns.SOA

	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	clock    clock.PassiveClock
	m        *serverMetrics
	fwd      *forwarder
	cache    *answerCache // nil: disabled

	hasSynced atomic.Bool
	running   atomic.Bool
	ready     chan struct{}
	addr      netip.AddrPort // set before ready is closed
}

// New validates cfg (after SetDefaults), adds the server's indexes to the
// informers, which must not have started, and registers its metrics. It
// starts nothing.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Services == nil || deps.EndpointSlices == nil {
		return nil, errors.New("dns: the Services and EndpointSlices informers are required")
	}
	clk := deps.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	dnsAddr, _ := netip.AddrFromSlice(cfg.ClusterDNS)
	dnsAddr = dnsAddr.Unmap()
	listenAt := netip.AddrPortFrom(dnsAddr, uint16(cfg.Port))
	if cfg.ListenAddress != "" {
		listenAt, _ = parseHostPort(cfg.ListenAddress)
	}
	zone := strings.ToLower(strings.TrimSuffix(cfg.ClusterDomain, ".")) + "."
	m, err := newServerMetrics("dns://"+listenAt.String(), deps.Metrics)
	if err != nil {
		return nil, err
	}
	if err := addIndexers(deps.Services, deps.EndpointSlices); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		zone:     zone,
		dotZone:  "." + zone,
		nsName:   "ns.dns." + zone,
		dnsAddr:  dnsAddr,
		listenAt: listenAt,
		services: deps.Services,
		slices:   deps.EndpointSlices,
		clock:    clk,
		m:        m,
		ready:    make(chan struct{}),
	}
	s.soa = &dns.SOA{
		Hdr:     rrHeader(zone, dns.TypeSOA, clusterTTL),
		Ns:      s.nsName,
		Mbox:    "hostmaster." + zone,
		Serial:  uint32(clk.Now().Unix()),
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  clusterTTL,
	}
	s.fwd = newForwarder(cfg, []netip.Addr{dnsAddr, listenAt.Addr()}, clk, m)
	if cfg.CacheSize > 0 {
		s.cache = newAnswerCache(cfg.CacheSize, clk, m)
	}
	return s, nil
}

// Ready is closed once the server listens on UDP and TCP.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the address the server listens on, for UDP and TCP alike
// (with ListenAddress port 0, the port picked). Valid once Ready.
func (s *Server) Addr() netip.AddrPort { return s.addr }

// Run makes sure of the link carrying the cluster DNS address (unless
// ListenAddress is set), listens, and serves until ctx is cancelled; then
// it stops listening, waits for in-flight queries (up to 5 s) and returns
// nil. The link stays.
func (s *Server) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("dns: Run called twice")
	}
	logger := klog.FromContext(ctx).WithName("dns")
	ctx = klog.NewContext(ctx, logger)

	// The link and sockets are made on this goroutine's thread, so in the
	// caller's network namespace.
	if s.cfg.ListenAddress == "" {
		if err := ensureLink(s.cfg.LinkName, s.dnsAddr); err != nil {
			return fmt.Errorf("cluster DNS link %s: %w", s.cfg.LinkName, err)
		}
	}
	pc, ln, err := listen(ctx, s.listenAt)
	if err != nil {
		return fmt.Errorf("listen for DNS on %s: %w", s.listenAt, err)
	}
	defer pc.Close()
	defer ln.Close()
	s.addr = netip.AddrPortFrom(s.listenAt.Addr(), uint16(pc.LocalAddr().(*net.UDPAddr).Port))
	s.fwd.start(ctx)

	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { s.handle(ctx, w, r) })
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	udp := &dns.Server{PacketConn: pc, Handler: handler, UDPSize: readUDPSize, NotifyStartedFunc: notify}
	tcp := &dns.Server{Listener: ln, Handler: handler, NotifyStartedFunc: notify}
	errc := make(chan error, 2)
	go func() { errc <- udp.ActivateAndServe() }()
	go func() { errc <- tcp.ActivateAndServe() }()

	var runErr error
	for n := 0; n < 2 && runErr == nil; {
		select {
		case <-started:
			n++
		case err := <-errc:
			runErr = fmt.Errorf("serve DNS: %w", err)
		}
	}
	if runErr == nil {
		close(s.ready)
		logger.Info("Serving cluster DNS", "address", s.addr, "zone", s.zone, "link", s.linkName())
		select {
		case <-ctx.Done():
		case err := <-errc:
			runErr = fmt.Errorf("serve DNS: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	_ = udp.ShutdownContext(sctx) // errors only when never started or already stopped
	_ = tcp.ShutdownContext(sctx)
	logger.V(2).Info("Stopped serving cluster DNS", "address", s.addr)
	return runErr
}

func (s *Server) linkName() string {
	if s.cfg.ListenAddress != "" {
		return ""
	}
	return s.cfg.LinkName
}

// listen binds UDP and TCP on addr; with port 0 both get the same port.
// The sockets set SO_REUSEADDR, so that they can bind next to a resolver
// listening on the wildcard address with the same option (dnsmasq).
func listen(ctx context.Context, addr netip.AddrPort) (*net.UDPConn, *net.TCPListener, error) {
	udpNet, tcpNet := "udp4", "tcp4"
	if addr.Addr().Is6() {
		udpNet, tcpNet = "udp6", "tcp6"
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	for attempt := 0; ; attempt++ {
		pconn, err := lc.ListenPacket(ctx, udpNet, addr.String())
		if err != nil {
			return nil, nil, err
		}
		pc := pconn.(*net.UDPConn)
		port := uint16(pc.LocalAddr().(*net.UDPAddr).Port)
		l, err := lc.Listen(ctx, tcpNet, netip.AddrPortFrom(addr.Addr(), port).String())
		if err == nil {
			return pc, l.(*net.TCPListener), nil
		}
		pc.Close()
		if addr.Port() != 0 || attempt == 20 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, err
		}
	}
}

// synced tells whether both informers have synced once; until then cluster
// names are SERVFAIL.
func (s *Server) synced() bool {
	if s.hasSynced.Load() {
		return true
	}
	if s.services.HasSynced() && s.slices.HasSynced() {
		s.hasSynced.Store(true)
		return true
	}
	return false
}

func (s *Server) inZone(lname string) bool {
	return lname == s.zone || strings.HasSuffix(lname, s.dotZone)
}

// handle answers one query.
func (s *Server) handle(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) {
	start := s.clock.Now()
	proto, family := transport(w)
	rp := getReply()
	defer putReply(rp)

	if len(r.Question) != 1 {
		size := s.writeRcode(w, r, rp, proto, dns.RcodeFormatError)
		s.m.response(proto, dns.RcodeFormatError, pluginNone, size, s.clock.Since(start).Seconds())
		return
	}
	q := r.Question[0]
	s.m.request(proto, family, q.Qtype, r.Len())
	m := rp.init(r)
	opt := r.IsEdns0()
	if opt != nil {
		rp.do = opt.Do()
	}

	plugin := pluginNone
	var size int
	name := strings.ToLower(q.Name)
	switch {
	case opt != nil && opt.Version() != 0:
		m.Rcode = dns.RcodeBadVers
		size = s.writeMsg(w, r, rp, proto, opt)
	case r.Opcode != dns.OpcodeQuery:
		m.Rcode = dns.RcodeNotImplemented
		size = s.writeMsg(w, r, rp, proto, opt)
	case q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR:
		m.Rcode = dns.RcodeRefused
		size = s.writeMsg(w, r, rp, proto, opt)
	case s.inZone(name):
		plugin = pluginKubernetes
		if q.Qclass != dns.ClassINET {
			m.Rcode = dns.RcodeRefused
		} else {
			s.answerCluster(ctx, rp, q.Name, name, q.Qtype)
		}
		size = s.writeMsg(w, r, rp, proto, opt)
	case q.Qtype == dns.TypePTR && q.Qclass == dns.ClassINET && isReverse(name) && s.reverse(rp, q.Name, name):
		plugin = pluginKubernetes
		m.Authoritative = true
		size = s.writeMsg(w, r, rp, proto, opt)
	default:
		a, remaining, hit, err := s.lookup(ctx, q.Name, name, q.Qtype, q.Qclass, rp.do, r.CheckingDisabled)
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Forwarding failed", "name", q.Name, "type", dns.Type(q.Qtype), "err", err)
			m.Rcode = dns.RcodeServerFailure
			size = s.writeMsg(w, r, rp, proto, opt)
			break
		}
		plugin = pluginForward
		if hit {
			plugin = pluginCache
		}
		m.Rcode = a.rcode
		size = s.writeAnswer(w, r, rp, a, remaining, proto, opt)
	}
	s.m.response(proto, m.Rcode, plugin, size, s.clock.Since(start).Seconds())
}

// answerCluster fills rp for a cluster name: the records, AA, and the
// zone's SOA with a denial.
func (s *Server) answerCluster(ctx context.Context, rp *reply, owner, name string, qtype uint16) {
	m := &rp.msg
	m.Rcode = s.cluster(ctx, rp, owner, name, qtype, 0)
	if m.Rcode == dns.RcodeServerFailure {
		m.Answer, m.Ns, m.Extra = m.Answer[:0], m.Ns[:0], m.Extra[:0]
		return
	}
	m.Authoritative = true
	// A denial carries the SOA, also at the end of a CNAME chain (RFC
	// 2308); one followed upstream carries the upstream's already.
	denial := len(m.Answer) == 0 || qtype != dns.TypeCNAME && m.Answer[len(m.Answer)-1].Header().Rrtype == dns.TypeCNAME
	if denial && len(m.Ns) == 0 && (m.Rcode == dns.RcodeSuccess || m.Rcode == dns.RcodeNameError) {
		m.Ns = append(m.Ns, s.soa)
	}
	// Spread clients over a headless Service's endpoints, as CoreDNS's
	// loadbalance plugin (in its default Corefile) does.
	if len(m.Answer) > 1 && (qtype == dns.TypeA || qtype == dns.TypeAAAA) && m.Answer[0].Header().Rrtype == qtype {
		rand.Shuffle(len(m.Answer), func(i, j int) { m.Answer[i], m.Answer[j] = m.Answer[j], m.Answer[i] })
	}
}

// sizeLimit is the largest response the client takes: over UDP its EDNS0
// buffer size (512 bytes without EDNS0), over TCP 64 KiB.
func sizeLimit(proto int, opt *dns.OPT) int {
	switch {
	case proto == protoTCP:
		return dns.MaxMsgSize
	case opt == nil:
		return dns.MinMsgSize
	}
	return max(int(opt.UDPSize()), dns.MinMsgSize)
}

// writeMsg sends rp's message, with an OPT record when the client sent one,
// truncated to what a UDP client takes. It returns the bytes sent.
func (s *Server) writeMsg(w dns.ResponseWriter, r *dns.Msg, rp *reply, proto int, opt *dns.OPT) int {
	m := &rp.msg
	if opt != nil {
		rp.opt = dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		rp.opt.SetUDPSize(advertisedUDPSize)
		if rp.do {
			rp.opt.SetDo()
		}
		m.Extra = append(m.Extra, &rp.opt)
	}
	// Compression costs a map per message; small answers go without (a
	// UDP answer too large for the client is compressed by Truncate).
	m.Compress = len(m.Answer)+len(m.Ns)+len(m.Extra) > 6
	b, err := m.PackBuffer(rp.buf[:cap(rp.buf)])
	if limit := sizeLimit(proto, opt); err == nil && len(b) > limit {
		m.Truncate(limit)
		b, err = m.PackBuffer(rp.buf[:cap(rp.buf)])
	}
	if err != nil {
		return s.writeRcode(w, r, rp, proto, dns.RcodeServerFailure)
	}
	rp.keep(b)
	w.Write(b) //nolint:errcheck // the client is gone; nothing to do
	return len(b)
}

// writeRcode sends a bare response with rcode.
func (s *Server) writeRcode(w dns.ResponseWriter, r *dns.Msg, rp *reply, proto int, rcode int) int {
	m := new(dns.Msg)
	m.SetRcode(r, rcode)
	m.RecursionAvailable = true
	b, err := m.PackBuffer(rp.buf[:cap(rp.buf)])
	if err != nil {
		return 0
	}
	w.Write(b) //nolint:errcheck
	return len(b)
}

// writeAnswer sends a forwarded answer: its wire form with the client's
// ID, RD bit and question spelling, the TTLs counted down when it is
// cached, the client's OPT record, truncated for UDP.
func (s *Server) writeAnswer(w dns.ResponseWriter, r *dns.Msg, rp *reply, a *answer, remaining uint32, proto int, opt *dns.OPT) int {
	b := append(rp.buf[:0], a.wire...)
	binary.BigEndian.PutUint16(b, r.Id)
	if r.RecursionDesired {
		b[2] |= 0x01
	} else {
		b[2] &^= 0x01
	}
	b[3] |= 0x80 // RA
	var qn [256]byte
	if end, err := dns.PackDomainName(r.Question[0].Name, qn[:], 0, nil, false); err == nil && 12+end == a.qnameEnd {
		copy(b[12:], qn[:end])
	}
	if !a.expires.IsZero() {
		for _, off := range a.ttls {
			binary.BigEndian.PutUint32(b[off:], remaining)
		}
	}
	if opt != nil {
		var flags byte
		if rp.do {
			flags = 0x80
		}
		b = append(b, 0, 0, byte(dns.TypeOPT), byte(advertisedUDPSize>>8), byte(advertisedUDPSize&0xff), 0, 0, flags, 0, 0, 0)
		binary.BigEndian.PutUint16(b[10:], binary.BigEndian.Uint16(b[10:])+1)
	}
	if limit := sizeLimit(proto, opt); len(b) > limit {
		m := new(dns.Msg)
		if err := m.Unpack(b); err != nil {
			return s.writeRcode(w, r, rp, proto, dns.RcodeServerFailure)
		}
		m.Truncate(limit)
		var err error
		if b, err = m.PackBuffer(b); err != nil {
			return s.writeRcode(w, r, rp, proto, dns.RcodeServerFailure)
		}
	}
	rp.keep(b)
	w.Write(b) //nolint:errcheck
	return len(b)
}

// transport tells the query's protocol and address family (1 IPv4, 2
// IPv6, as CoreDNS labels them).
func transport(w dns.ResponseWriter) (proto, family int) {
	proto = protoUDP
	var ip net.IP
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		proto, ip = protoTCP, a.IP
	}
	if ip.To4() == nil && ip != nil {
		return proto, 2
	}
	return proto, 1
}

// reply is one response under construction, pooled with backing store
// for the common small answers so that they allocate little.
type reply struct {
	msg      dns.Msg
	question [1]dns.Question
	answer   [8]dns.RR
	extra    [8]dns.RR
	ns       [2]dns.RR
	a        [8]dns.A
	aaaa     [4]dns.AAAA
	ip4s     [8][4]byte
	ip6s     [4][16]byte
	na, n6   int
	opt      dns.OPT
	do, cd   bool
	buf      []byte
}

var replies = sync.Pool{New: func() any { return &reply{buf: make([]byte, 0, 1024)} }}

func getReply() *reply { return replies.Get().(*reply) }

func putReply(rp *reply) {
	rp.msg = dns.Msg{}
	clear(rp.answer[:])
	clear(rp.extra[:])
	clear(rp.ns[:])
	rp.na, rp.n6 = 0, 0
	rp.do, rp.cd = false, false
	replies.Put(rp)
}

// init starts a response to r.
func (rp *reply) init(r *dns.Msg) *dns.Msg {
	m := &rp.msg
	m.Id = r.Id
	m.Response = true
	m.Opcode = r.Opcode
	m.RecursionDesired = r.RecursionDesired
	m.CheckingDisabled = r.CheckingDisabled
	m.RecursionAvailable = true
	m.Rcode = dns.RcodeSuccess
	rp.question[0] = r.Question[0]
	m.Question = rp.question[:]
	m.Answer = rp.answer[:0]
	m.Extra = rp.extra[:0]
	m.Ns = rp.ns[:0]
	rp.cd = r.CheckingDisabled
	return m
}

// keep holds on to a grown packing buffer, up to 16 KiB.
func (rp *reply) keep(b []byte) {
	if cap(b) > cap(rp.buf) && cap(b) <= 16<<10 {
		rp.buf = b[:0]
	}
}

// addrRR is an A or AAAA record for a.
func (rp *reply) addrRR(owner string, a netip.Addr) dns.RR {
	if a.Is4() {
		if rp.na < len(rp.a) {
			rr := &rp.a[rp.na]
			*rr = dns.A{Hdr: rrHeader(owner, dns.TypeA, clusterTTL), A: ip4(&rp.ip4s[rp.na], a)}
			rp.na++
			return rr
		}
		b := a.As4()
		return &dns.A{Hdr: rrHeader(owner, dns.TypeA, clusterTTL), A: net.IP(b[:])}
	}
	if rp.n6 < len(rp.aaaa) {
		rr := &rp.aaaa[rp.n6]
		*rr = dns.AAAA{Hdr: rrHeader(owner, dns.TypeAAAA, clusterTTL), AAAA: ip6(&rp.ip6s[rp.n6], a)}
		rp.n6++
		return rr
	}
	b := a.As16()
	return &dns.AAAA{Hdr: rrHeader(owner, dns.TypeAAAA, clusterTTL), AAAA: net.IP(b[:])}
}
