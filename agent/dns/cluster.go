package dns

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Answers for the cluster zone, built per query from the informers'
// caches.

const (
	// clusterTTL is the TTL of every cluster record, the kubernetes
	// plugin's default.
	clusterTTL = 5
	// schemaVersion is the DNS specification's version served at
	// dns-version.<zone>, with its TTL.
	schemaVersion = "1.1.0"
	versionTTL    = 28800
	// maxChain bounds CNAME chains (ExternalName → ExternalName …).
	maxChain = 8
)

// cluster answers a question whose lower-cased name is in the zone. owner
// is the name as asked, used as the records' owner. It returns the rcode;
// the caller adds the SOA to denials.
func (s *Server) cluster(ctx context.Context, rp *reply, owner, name string, qtype uint16, depth int) int {
	if !s.synced() {
		// A denial now could be cached by the client; failure is retried.
		return dns.RcodeServerFailure
	}
	var ls [5]string // labels right to left, zone excluded
	n, ok := splitLabels(name[:len(name)-len(s.zone)], ls[:])
	if !ok {
		return dns.RcodeNameError
	}
	switch n {
	case 0:
		return s.apex(rp, owner, qtype)
	case 1:
		switch ls[0] {
		case "svc", "pod", "dns":
			return dns.RcodeSuccess
		case "dns-version":
			if qtype == dns.TypeTXT {
				rp.msg.Answer = append(rp.msg.Answer, &dns.TXT{Hdr: rrHeader(owner, dns.TypeTXT, versionTTL), Txt: []string{schemaVersion}})
			}
			return dns.RcodeSuccess
		}
	case 2:
		switch ls[0] {
		case "svc":
			if s.namespaceHasServices(ls[1]) {
				return dns.RcodeSuccess
			}
		case "pod":
			return dns.RcodeSuccess
		case "dns":
			if ls[1] == "ns" {
				if a := s.dnsAddr; qtype == familyType(a) {
					rp.msg.Answer = append(rp.msg.Answer, rp.addrRR(owner, a))
				}
				return dns.RcodeSuccess
			}
		}
	case 3:
		switch ls[0] {
		case "svc":
			return s.service(ctx, rp, owner, name, ls[1], ls[2], qtype, depth)
		case "pod":
			return s.pod(rp, owner, ls[2], qtype)
		}
	case 4:
		if ls[0] == "svc" {
			return s.endpoint(rp, owner, ls[1], ls[2], ls[3], qtype)
		}
	case 5:
		if ls[0] == "svc" {
			svcName := name[len(ls[4])+len(ls[3])+2:]
			return s.port(rp, owner, svcName, ls[1], ls[2], ls[3], ls[4], qtype)
		}
	}
	return dns.RcodeNameError
}

// splitLabels splits prefix — the labels of a name left of the zone, with
// the dot before the zone, or "" — into out, rightmost first. It reports
// false when there are more labels than out holds.
func splitLabels(prefix string, out []string) (int, bool) {
	if prefix == "" {
		return 0, true
	}
	p := prefix[:len(prefix)-1]
	for n := 0; ; n++ {
		if n == len(out) {
			return n, false
		}
		i := strings.LastIndexByte(p, '.')
		out[n] = p[i+1:]
		if i < 0 {
			return n + 1, true
		}
		p = p[:i]
	}
}

func (s *Server) apex(rp *reply, owner string, qtype uint16) int {
	switch qtype {
	case dns.TypeSOA:
		rp.msg.Answer = append(rp.msg.Answer, s.soa)
	case dns.TypeNS:
		rp.msg.Answer = append(rp.msg.Answer, &dns.NS{Hdr: rrHeader(owner, dns.TypeNS, clusterTTL), Ns: s.nsName})
		rp.msg.Extra = append(rp.msg.Extra, rp.addrRR(s.nsName, s.dnsAddr))
	}
	return dns.RcodeSuccess
}

// service answers <service>.<ns>.svc.<zone>; name is that, lower-cased.
func (s *Server) service(ctx context.Context, rp *reply, owner, name, ns, svcName string, qtype uint16, depth int) int {
	svc := s.getService(ns, svcName)
	if svc == nil {
		return dns.RcodeNameError
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		target := dns.Fqdn(svc.Spec.ExternalName)
		rp.msg.Answer = append(rp.msg.Answer, &dns.CNAME{Hdr: rrHeader(owner, dns.TypeCNAME, clusterTTL), Target: target})
		if qtype == dns.TypeCNAME {
			return dns.RcodeSuccess
		}
		return s.chase(ctx, rp, target, qtype, depth+1)
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return s.headless(rp, owner, name, ns, svcName, qtype, "", "")
	}
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		eachClusterIP(svc, func(a netip.Addr) {
			if familyType(a) == qtype {
				rp.msg.Answer = append(rp.msg.Answer, rp.addrRR(owner, a))
			}
		})
	case dns.TypeSRV:
		s.clusterIPSRV(rp, owner, name, svc, "", "")
	}
	return dns.RcodeSuccess
}

// clusterIPSRV answers SRV for a ClusterIP Service's ports (those named
// port and protocol, or all when empty): target the Service's name, its
// cluster IPs in the additional section. It reports whether a port matched.
func (s *Server) clusterIPSRV(rp *reply, owner, target string, svc *corev1.Service, port, proto string) bool {
	var ports [8]int32
	matched := ports[:0]
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if !portMatches(port, proto, p.Name, string(p.Protocol)) || containsPort(matched, p.Port) {
			continue
		}
		matched = append(matched, p.Port)
	}
	weight := srvWeight(len(matched))
	for _, p := range matched {
		rp.msg.Answer = append(rp.msg.Answer, &dns.SRV{Hdr: rrHeader(owner, dns.TypeSRV, clusterTTL), Weight: weight, Port: uint16(p), Target: target})
	}
	if len(matched) > 0 {
		eachClusterIP(svc, func(a netip.Addr) {
			rp.msg.Extra = append(rp.msg.Extra, rp.addrRR(target, a))
		})
	}
	return len(matched) > 0
}

// headless answers a headless Service's name (port and proto empty) or
// one of its _port._proto names, from its ready endpoints (for a port
// name, those whose slice has the port); name is the Service's
// lower-cased name. No such endpoint is NXDOMAIN.
func (s *Server) headless(rp *reply, owner, name, ns, svcName string, qtype uint16, port, proto string) int {
	var buf [16]readyAddr
	addrs := s.readyAddrs(buf[:0], ns, svcName)
	if port != "" {
		kept := addrs[:0]
		for _, ra := range addrs {
			var pb [8]int32
			if len(slicePorts(pb[:0], ra.slice, port, proto)) > 0 {
				kept = append(kept, ra)
			}
		}
		addrs = kept
	}
	if len(addrs) == 0 {
		return dns.RcodeNameError
	}
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		for i := range addrs {
			if familyType(addrs[i].addr) == qtype {
				rp.msg.Answer = append(rp.msg.Answer, rp.addrRR(owner, addrs[i].addr))
			}
		}
	case dns.TypeSRV:
		// One SRV per ready address and port, its target the endpoint's
		// name, whose address goes in the additional section.
		n := 0
		for i := range addrs {
			var pb [8]int32
			n += len(slicePorts(pb[:0], addrs[i].slice, port, proto))
		}
		weight := srvWeight(n)
		for i := range addrs {
			var pb [8]int32
			ports := slicePorts(pb[:0], addrs[i].slice, port, proto)
			if len(ports) == 0 {
				continue
			}
			target := endpointLabel(&addrs[i]) + "." + name
			for _, p := range ports {
				rp.msg.Answer = append(rp.msg.Answer, &dns.SRV{Hdr: rrHeader(owner, dns.TypeSRV, clusterTTL), Weight: weight, Port: uint16(p), Target: target})
			}
			rp.msg.Extra = append(rp.msg.Extra, rp.addrRR(target, addrs[i].addr))
		}
	}
	return dns.RcodeSuccess
}

// slicePorts appends the slice's port numbers matching port and proto
// (all when port is empty) to dst, each once.
func slicePorts(dst []int32, sl *discoveryv1.EndpointSlice, port, proto string) []int32 {
	for j := range sl.Ports {
		p := &sl.Ports[j]
		if p.Port == nil || !portMatches(port, proto, deref(p.Name), string(derefProto(p.Protocol))) || containsPort(dst, *p.Port) {
			continue
		}
		dst = append(dst, *p.Port)
	}
	return dst
}

// endpoint answers <endpoint>.<service>.<ns>.svc.<zone>: the ready
// addresses whose endpoint has that hostname or, without a hostname,
// whose address the label spells (10-42-0-5, 2001-db8--5).
func (s *Server) endpoint(rp *reply, owner, ns, svcName, label string, qtype uint16) int {
	svc := s.getService(ns, svcName)
	if svc == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return dns.RcodeNameError
	}
	labelIP, isIP := parseIPLabel(label)
	var buf [16]readyAddr
	found := false
	for _, ra := range s.readyAddrs(buf[:0], ns, svcName) {
		var match bool
		if h := deref(ra.ep.Hostname); h != "" {
			match = strings.EqualFold(h, label)
		} else {
			match = isIP && ra.addr == labelIP
		}
		if !match {
			continue
		}
		found = true
		if familyType(ra.addr) == qtype {
			rp.msg.Answer = append(rp.msg.Answer, rp.addrRR(owner, ra.addr))
		}
	}
	if !found {
		return dns.RcodeNameError
	}
	return dns.RcodeSuccess
}

// port answers _<port>._<proto>.<service>.<ns>.svc.<zone> (svcName is
// the Service's lower-cased name): SRV records, and for A/AAAA the
// addresses the SRV records lead to.
func (s *Server) port(rp *reply, owner, svcFQDN, ns, svcName, proto, port string, qtype uint16) int {
	port = strings.TrimPrefix(port, "_")
	proto = strings.TrimPrefix(proto, "_")
	svc := s.getService(ns, svcName)
	if svc == nil || svc.Spec.Type == corev1.ServiceTypeExternalName || port == "" || proto == "" {
		return dns.RcodeNameError
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return s.headless(rp, owner, svcFQDN, ns, svcName, qtype, port, proto)
	}
	switch qtype {
	case dns.TypeSRV:
		if !s.clusterIPSRV(rp, owner, svcFQDN, svc, port, proto) {
			return dns.RcodeNameError
		}
	default:
		matched := false
		for i := range svc.Spec.Ports {
			if portMatches(port, proto, svc.Spec.Ports[i].Name, string(svc.Spec.Ports[i].Protocol)) {
				matched = true
				break
			}
		}
		if !matched {
			return dns.RcodeNameError
		}
		if qtype == dns.TypeA || qtype == dns.TypeAAAA {
			eachClusterIP(svc, func(a netip.Addr) {
				if familyType(a) == qtype {
					rp.msg.Answer = append(rp.msg.Answer, rp.addrRR(owner, a))
				}
			})
		}
	}
	return dns.RcodeSuccess
}

// pod answers <a-b-c-d>.<ns>.pod.<zone> with the address the label spells,
// whatever the namespace (CoreDNS's "pods insecure").
func (s *Server) pod(rp *reply, owner, label string, qtype uint16) int {
	a, ok := parseIPLabel(label)
	if !ok {
		return dns.RcodeNameError
	}
	if familyType(a) == qtype {
		rp.msg.Answer = append(rp.msg.Answer, rp.addrRR(owner, a))
	}
	return dns.RcodeSuccess
}

// chase follows a CNAME to target: inside the zone from the caches, else
// through the forwarder (and its cache). An upstream failure is SERVFAIL.
func (s *Server) chase(ctx context.Context, rp *reply, target string, qtype uint16, depth int) int {
	if depth > maxChain {
		return dns.RcodeServerFailure
	}
	lt := strings.ToLower(target)
	if s.inZone(lt) {
		return s.cluster(ctx, rp, target, lt, qtype, depth)
	}
	a, remaining, _, err := s.lookup(ctx, target, lt, qtype, dns.ClassINET, rp.do, rp.cd)
	if err != nil {
		return dns.RcodeServerFailure
	}
	resp := new(dns.Msg)
	if err := resp.Unpack(a.wire); err != nil {
		return dns.RcodeServerFailure
	}
	if !a.expires.IsZero() {
		for _, sec := range [][]dns.RR{resp.Answer, resp.Ns, resp.Extra} {
			for _, rr := range sec {
				rr.Header().Ttl = remaining
			}
		}
	}
	rp.msg.Answer = append(rp.msg.Answer, resp.Answer...)
	if len(resp.Answer) == 0 {
		rp.msg.Ns = append(rp.msg.Ns, resp.Ns...)
	}
	return resp.Rcode
}

// reverse answers a PTR question for a cluster IP (the Service's name) or
// a ready endpoint's address (<endpoint>.<service>.<ns>.svc.<zone> for
// each Service it backs). It reports false when it knows no such address,
// and the question goes upstream.
func (s *Server) reverse(rp *reply, owner, name string) bool {
	if !s.synced() {
		return false
	}
	a, ok := parseReverse(name)
	if !ok {
		return false
	}
	key := a.String()
	if objs, err := s.services.GetIndexer().ByIndex(indexClusterIP, key); err == nil {
		for _, obj := range objs {
			svc, ok := obj.(*corev1.Service)
			if !ok {
				continue
			}
			rp.msg.Answer = append(rp.msg.Answer, &dns.PTR{Hdr: rrHeader(owner, dns.TypePTR, clusterTTL), Ptr: svc.Name + "." + svc.Namespace + ".svc." + s.zone})
		}
	}
	if len(rp.msg.Answer) > 0 {
		return true
	}
	objs, err := s.slices.GetIndexer().ByIndex(indexEndpointIP, key)
	if err != nil {
		return false
	}
	for _, obj := range objs {
		sl, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		svcName := sl.Labels[discoveryv1.LabelServiceName]
		if svc := s.getService(sl.Namespace, svcName); svc == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		for i := range sl.Endpoints {
			ep := &sl.Endpoints[i]
			if !ready(ep) {
				continue
			}
			for _, ip := range ep.Addresses {
				if b, err := netip.ParseAddr(ip); err != nil || b.Unmap() != a {
					continue
				}
				target := endpointLabel(&readyAddr{ep: ep, addr: a}) + "." + svcName + "." + sl.Namespace + ".svc." + s.zone
				dup := false
				for _, rr := range rp.msg.Answer {
					if rr.(*dns.PTR).Ptr == target {
						dup = true
						break
					}
				}
				if !dup {
					rp.msg.Answer = append(rp.msg.Answer, &dns.PTR{Hdr: rrHeader(owner, dns.TypePTR, clusterTTL), Ptr: target})
				}
			}
		}
	}
	return len(rp.msg.Answer) > 0
}

// endpointLabel is an endpoint's hostname or, without one, a label made
// from its address: dots (or colons) become dashes, and an IPv6 address
// ending in "::" gets a final 0 (CoreDNS's naming).
func endpointLabel(ra *readyAddr) string {
	if h := deref(ra.ep.Hostname); h != "" {
		return h
	}
	return ipLabel(ra.addr)
}

func ipLabel(a netip.Addr) string {
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	l := strings.ReplaceAll(a.String(), ":", "-")
	if strings.HasSuffix(l, "-") {
		l += "0"
	}
	return l
}

// parseIPLabel reads an address written as a label: a-b-c-d for IPv4
// (three dashes, none doubled), else IPv6 with colons as dashes.
func parseIPLabel(label string) (netip.Addr, bool) {
	if label == "" || len(label) > 63 {
		return netip.Addr{}, false
	}
	v4 := strings.Count(label, "-") == 3 && !strings.Contains(label, "--")
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(label); i++ {
		c := label[i]
		if c == '-' {
			if v4 {
				c = '.'
			} else {
				c = ':'
			}
		}
		b = append(b, c)
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Zone() != "" || a.Is4() != v4 || a.Is4In6() {
		return netip.Addr{}, false
	}
	return a, true
}

// parseReverse reads the address of a full reverse name
// (d.c.b.a.in-addr.arpa., or 32 nibbles .ip6.arpa.).
func parseReverse(name string) (netip.Addr, bool) {
	if p, ok := strings.CutSuffix(name, ".in-addr.arpa."); ok {
		var b [4]byte
		for i := range 4 {
			j := strings.LastIndexByte(p, '.')
			if (j < 0) != (i == 3) {
				return netip.Addr{}, false
			}
			v, ok := atoiByte(p[j+1:])
			if !ok {
				return netip.Addr{}, false
			}
			b[i] = v
			if j >= 0 {
				p = p[:j]
			}
		}
		return netip.AddrFrom4(b), true
	}
	if p, ok := strings.CutSuffix(name, ".ip6.arpa."); ok {
		if len(p) != 63 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i := range 32 {
			c := p[62-2*i]
			if i < 31 && p[62-2*i-1] != '.' {
				return netip.Addr{}, false
			}
			v, ok := hexNibble(c)
			if !ok {
				return netip.Addr{}, false
			}
			if i%2 == 0 {
				b[i/2] = v << 4
			} else {
				b[i/2] |= v
			}
		}
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

func atoiByte(s string) (byte, bool) {
	if s == "" || len(s) > 3 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	if v > 255 {
		return 0, false
	}
	return byte(v), true
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// isReverse tells whether a lower-cased name is in the reverse zones.
func isReverse(name string) bool {
	return strings.HasSuffix(name, ".in-addr.arpa.") || strings.HasSuffix(name, ".ip6.arpa.") ||
		name == "in-addr.arpa." || name == "ip6.arpa."
}

// eachClusterIP calls f for each valid cluster IP of svc.
func eachClusterIP(svc *corev1.Service, f func(netip.Addr)) {
	if len(svc.Spec.ClusterIPs) == 0 {
		if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
			f(a.Unmap())
		}
		return
	}
	for _, ip := range svc.Spec.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			f(a.Unmap())
		}
	}
}

// portMatches: an empty wanted port (a query for the Service's own name)
// matches every port; otherwise the named port and protocol must match
// (unnamed ports have no SRV name).
func portMatches(wantPort, wantProto, name, proto string) bool {
	if wantPort == "" {
		return true
	}
	return name != "" && strings.EqualFold(wantPort, name) && strings.EqualFold(wantProto, proto)
}

func containsPort(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// srvWeight spreads 100 over n records of one priority, as CoreDNS does.
func srvWeight(n int) uint16 {
	if n <= 1 {
		return 100
	}
	return uint16(max(100/n, 1))
}

func familyType(a netip.Addr) uint16 {
	if a.Is4() {
		return dns.TypeA
	}
	return dns.TypeAAAA
}

func rrHeader(name string, t uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefProto(p *corev1.Protocol) corev1.Protocol {
	if p == nil {
		return corev1.ProtocolTCP
	}
	return *p
}

// ip4 and ip6 copy an address into net.IP backing store.
func ip4(dst *[4]byte, a netip.Addr) net.IP {
	*dst = a.As4()
	return dst[:]
}

func ip6(dst *[16]byte, a netip.Addr) net.IP {
	*dst = a.As16()
	return dst[:]
}
