package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"
)

// The table's fixed objects. All of k1s's chains, sets and maps live in
// one table per IP family, so they need no prefix of their own.
const (
	// base chains
	chainFilterPreroutingPreDNAT = "filter-prerouting-pre-dnat"
	chainFilterOutputPreDNAT     = "filter-output-pre-dnat"
	chainFilterInput             = "filter-input"
	chainFilterForward           = "filter-forward"
	chainFilterOutput            = "filter-output"
	chainNATPrerouting           = "nat-prerouting"
	chainNATOutput               = "nat-output"
	chainNATPostrouting          = "nat-postrouting"

	// regular chains
	chainServices            = "services"
	chainServiceEndpoints    = "service-endpoints-check"
	chainNodePortEndpoints   = "nodeport-endpoints-check"
	chainClusterIPsCheck     = "cluster-ips-check"
	chainFirewallCheck       = "firewall-check"
	chainMasquerading        = "masquerading"
	chainReject              = "reject-chain"
	setClusterIPs            = "cluster-ips"
	setNodePortIPs           = "nodeport-ips"
	setHairpin               = "hairpin-connections"
	mapServiceIPs            = "service-ips"
	mapServiceNodePorts      = "service-nodeports"
	mapNoEndpointServices    = "no-endpoint-services"
	mapNoEndpointNodePorts   = "no-endpoint-nodeports"
	mapFirewallIPs           = "firewall-ips"
	defaultMasqueradeBit     = 14
	prefixClusterPolicyChain = "service-"
	prefixLocalPolicyChain   = "local-"
	prefixExternalChain      = "external-"
	prefixFirewallChain      = "firewall-"
	prefixEndpointChain      = "endpoint-"
	prefixAffinitySet        = "affinity-"
)

type baseChain struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
}

// baseChains hook the table into the kernel's paths, at kube-proxy's
// priorities: the filter checks just before DNAT and at the usual filter
// priority, the NAT chains at dstnat and srcnat.
var baseChains = []baseChain{
	{chainFilterPreroutingPreDNAT, knftables.FilterType, knftables.PreroutingHook, knftables.DNATPriority + "-10"},
	{chainFilterOutputPreDNAT, knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "-10"},
	{chainFilterInput, knftables.FilterType, knftables.InputHook, knftables.FilterPriority},
	{chainFilterForward, knftables.FilterType, knftables.ForwardHook, knftables.FilterPriority},
	{chainFilterOutput, knftables.FilterType, knftables.OutputHook, knftables.FilterPriority},
	{chainNATPrerouting, knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority},
	{chainNATOutput, knftables.NATType, knftables.OutputHook, knftables.DNATPriority},
	{chainNATPostrouting, knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority},
}

// jumps from the base chains to the regular ones.
var jumps = []struct{ from, to, match string }{
	{chainFilterInput, chainNodePortEndpoints, "ct state new"},
	{chainFilterInput, chainServiceEndpoints, "ct state new"},
	{chainFilterForward, chainServiceEndpoints, "ct state new"},
	{chainFilterOutput, chainServiceEndpoints, "ct state new"},
	{chainFilterPreroutingPreDNAT, chainFirewallCheck, "ct state new"},
	{chainFilterOutputPreDNAT, chainFirewallCheck, "ct state new"},
	{chainNATOutput, chainServices, ""},
	{chainNATPrerouting, chainServices, ""},
	{chainNATPostrouting, chainMasquerading, ""},
	{chainFilterForward, chainClusterIPsCheck, "ct state new"},
	{chainFilterOutput, chainClusterIPsCheck, "ct state new"},
}

// familyRules writes the rules of one IP family's table.
type familyRules struct {
	family      corev1.IPFamily
	ip          string // "ip" or "ip6"
	addrType    string // "ipv4_addr" or "ipv6_addr"
	mark        string // the masquerade mark, e.g. 0x00004000
	clusterCIDR string // pods' addresses; "" when unknown
	serviceCIDR []string
	nodeIPs     []net.IP
	exemptIPs   []string // addresses on this node inside the service range (the cluster DNS)
}

func newFamilyRules(family corev1.IPFamily, cfg *Config) *familyRules {
	r := &familyRules{family: family, ip: "ip", addrType: "ipv4_addr"}
	if family == corev1.IPv6Protocol {
		r.ip, r.addrType = "ip6", "ipv6_addr"
	}
	r.mark = fmt.Sprintf("%#08x", 1<<uint(cfg.MasqueradeBit))
	for _, c := range cfg.ClusterCIDRs {
		if familyOf(c.IP) == family {
			r.clusterCIDR = c.String()
			break
		}
	}
	for _, c := range cfg.ServiceCIDRs {
		if familyOf(c.IP) == family {
			r.serviceCIDR = append(r.serviceCIDR, c.String())
		}
	}
	for _, ip := range cfg.NodeIPs {
		if familyOf(ip) == family && !ip.IsLoopback() {
			r.nodeIPs = append(r.nodeIPs, ip)
		}
	}
	for _, ip := range cfg.ExemptIPs {
		if familyOf(ip) == family {
			r.exemptIPs = append(r.exemptIPs, ip.String())
		}
	}
	return r
}

func (r *familyRules) masquerade() string { return "mark set mark or " + r.mark }

// base adds the table's fixed objects to tx. The caller has emptied the
// table first.
func (r *familyRules) base(tx *knftables.Transaction) {
	for _, bc := range baseChains {
		tx.Add(&knftables.Chain{Name: bc.name, Type: knftables.PtrTo(bc.typ), Hook: knftables.PtrTo(bc.hook), Priority: knftables.PtrTo(bc.priority)})
	}
	for _, name := range []string{chainServices, chainServiceEndpoints, chainNodePortEndpoints, chainClusterIPsCheck, chainFirewallCheck, chainMasquerading} {
		tx.Add(&knftables.Chain{Name: name})
	}
	tx.Add(&knftables.Chain{Name: chainReject, Comment: knftables.PtrTo("helper for @no-endpoint-services / @no-endpoint-nodeports")})
	tx.Add(&knftables.Rule{Chain: chainReject, Rule: "reject"})
	for _, j := range jumps {
		tx.Add(&knftables.Rule{Chain: j.from, Rule: knftables.Concat(j.match, "jump", j.to)})
	}

	tx.Add(&knftables.Set{Name: setClusterIPs, Type: r.addrType, Comment: knftables.PtrTo("Active ClusterIPs")})
	tx.Add(&knftables.Set{Name: setNodePortIPs, Type: r.addrType, Comment: knftables.PtrTo("IPs that accept NodePort traffic")})
	for _, ip := range r.nodeIPs {
		tx.Add(&knftables.Element{Set: setNodePortIPs, Key: []string{ip.String()}})
	}
	tx.Add(&knftables.Set{Name: setHairpin, Type: r.addrType + " . " + r.addrType + " . inet_proto . inet_service", Comment: knftables.PtrTo("service hairpin connections")})
	vipKey := r.addrType + " . inet_proto . inet_service : verdict"
	tx.Add(&knftables.Map{Name: mapServiceIPs, Type: vipKey, Comment: knftables.PtrTo("ClusterIP, ExternalIP and LoadBalancer IP traffic")})
	tx.Add(&knftables.Map{Name: mapServiceNodePorts, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("NodePort traffic")})
	tx.Add(&knftables.Map{Name: mapNoEndpointServices, Type: vipKey, Comment: knftables.PtrTo("vmap to drop or reject packets to services with no endpoints")})
	tx.Add(&knftables.Map{Name: mapNoEndpointNodePorts, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("vmap to drop or reject packets to service nodeports with no endpoints")})
	tx.Add(&knftables.Map{Name: mapFirewallIPs, Type: vipKey, Comment: knftables.PtrTo("destinations that are subject to LoadBalancerSourceRanges")})

	tx.Add(&knftables.Rule{Chain: chainMasquerading, Rule: knftables.Concat(
		"mark and", r.mark, "!= 0", "mark set mark xor", r.mark, "masquerade fully-random")})
	tx.Add(&knftables.Rule{Chain: chainMasquerading, Rule: knftables.Concat(
		"ct status dnat", r.ip, "saddr .", r.ip, "daddr . meta l4proto . th dport", "@"+setHairpin, "masquerade fully-random")})

	if len(r.exemptIPs) > 0 {
		tx.Add(&knftables.Rule{Chain: chainClusterIPsCheck, Rule: knftables.Concat(
			r.ip, "daddr", "{", strings.Join(r.exemptIPs, ", "), "}", "return"),
			Comment: knftables.PtrTo("served on this node (cluster DNS)")})
	}
	tx.Add(&knftables.Rule{Chain: chainClusterIPsCheck, Rule: knftables.Concat(r.ip, "daddr", "@"+setClusterIPs, "reject"),
		Comment: knftables.PtrTo("Reject traffic to invalid ports of ClusterIPs")})
	if len(r.serviceCIDR) > 0 {
		tx.Add(&knftables.Rule{Chain: chainClusterIPsCheck, Rule: knftables.Concat(
			r.ip, "daddr", "{", strings.Join(r.serviceCIDR, ", "), "}", "reject"),
			Comment: knftables.PtrTo("Reject traffic to unallocated ClusterIPs")})
	}
	tx.Add(&knftables.Rule{Chain: chainServiceEndpoints, Rule: knftables.Concat(
		r.ip, "daddr . meta l4proto . th dport vmap", "@"+mapNoEndpointServices)})
	tx.Add(&knftables.Rule{Chain: chainNodePortEndpoints, Rule: knftables.Concat(
		r.ip, "daddr", "@"+setNodePortIPs, "meta l4proto . th dport vmap", "@"+mapNoEndpointNodePorts)})
	tx.Add(&knftables.Rule{Chain: chainFirewallCheck, Rule: knftables.Concat(
		r.ip, "daddr . meta l4proto . th dport vmap", "@"+mapFirewallIPs)})

	if r.clusterCIDR != "" {
		tx.Add(&knftables.Rule{Chain: chainServices, Rule: knftables.Concat(
			r.ip, "daddr", "@"+setClusterIPs, r.ip, "saddr !=", r.clusterCIDR, r.masquerade()),
			Comment: knftables.PtrTo("masquerade clusterIP traffic from outside cluster")})
	}
	tx.Add(&knftables.Rule{Chain: chainServices, Rule: knftables.Concat(
		r.ip, "daddr . meta l4proto . th dport vmap", "@"+mapServiceIPs)})
	tx.Add(&knftables.Rule{Chain: chainServices, Rule: knftables.Concat(
		r.ip, "daddr", "@"+setNodePortIPs, "meta l4proto . th dport vmap", "@"+mapServiceNodePorts)})
}

// element is one set or map element a Service contributes.
type element struct {
	container string // set or map name
	isMap     bool
	key       []string
	value     string // maps only
	comment   string
}

func (e element) id() string { return e.container + "|" + strings.Join(e.key, " . ") }

func (e element) object() *knftables.Element {
	el := &knftables.Element{Key: e.key}
	if e.isMap {
		el.Map, el.Value = e.container, []string{e.value}
	} else {
		el.Set = e.container
	}
	if e.comment != "" {
		el.Comment = knftables.PtrTo(e.comment)
	}
	return el
}

// affinitySet is a per-endpoint set of client addresses with a timeout.
type affinitySet struct {
	name    string
	timeout time.Duration
}

// serviceRules is everything one Service adds to the table: its chains
// (name → rules, in order), its affinity sets and its elements in the
// shared sets and maps. Nothing else refers to its chains and sets, so a
// Service's rules can be rewritten alone.
type serviceRules struct {
	chains   map[string][]string
	sets     []affinitySet
	elements []element
	// health-check node port → local endpoints, for Local LoadBalancers.
	healthChecks map[int32]int
	// UDP frontends and their serving endpoints, for conntrack clean-up.
	udp []udpFrontend
}

type udpFrontend struct {
	ips       []string
	port      int32
	nodePort  int32
	endpoints []string // ip:port
}

func (s *serviceRules) chain(name string, rules ...string) {
	s.chains[name] = append(s.chains[name], rules...)
}

// chainBase names a service port's chains: a hash for uniqueness, the
// readable name after it (kube-proxy's shape).
func chainBase(sp *servicePort, suffix string) string {
	readable := sp.svc.Namespace + "/" + sp.svc.Name + "/" + sp.proto() + "/" + sp.portName
	if suffix != "" {
		readable += "__" + suffix
	}
	sum := sha256.Sum256([]byte(readable))
	name := strings.ToLower(base32.StdEncoding.EncodeToString(sum[:5])) + "-" + readable
	if max := knftables.NameLengthMax - 16; len(name) > max {
		name = name[:max]
	}
	return name
}

// service writes the rules of one Service's ports and endpoints.
func (r *familyRules) service(ports []*servicePort, eps [][]endpoint) *serviceRules {
	out := &serviceRules{chains: map[string][]string{}}
	for i, sp := range ports {
		r.servicePort(out, sp, eps[i])
	}
	return out
}

func (r *familyRules) servicePort(out *serviceRules, sp *servicePort, all []endpoint) {
	proto := sp.proto()
	port := strconv.Itoa(int(sp.port))
	c := categorize(sp, all)
	base := chainBase(sp, "")
	clusterChain := prefixClusterPolicyChain + base
	localChain := prefixLocalPolicyChain + base
	extChain := prefixExternalChain + base
	fwChain := prefixFirewallChain + base
	affinity := sp.affinitySeconds > 0
	comment := sp.String()

	epChain := func(e endpoint) string { return prefixEndpointChain + chainBase(sp, e.nameSuffix()) }
	epSet := func(e endpoint) string { return prefixAffinitySet + chainBase(sp, e.nameSuffix()) }

	for _, e := range c.reachable {
		if e.local {
			out.elements = append(out.elements, element{container: setHairpin, key: []string{e.ip, e.ip, proto, strconv.Itoa(int(e.port))}})
		}
	}

	usesCluster := len(c.cluster) > 0 && sp.usesClusterEndpoints()
	usesLocal := len(c.local) > 0 && sp.usesLocalEndpoints()
	internalChain, hasInternal := clusterChain, c.hasEndpoints
	if sp.internalLocal {
		internalChain, hasInternal = localChain, len(c.local) > 0
	}
	externalPolicyChain, hasExternal := clusterChain, c.hasEndpoints
	if sp.externalLocal {
		externalPolicyChain, hasExternal = localChain, len(c.local) > 0
	}
	usesExternal := c.hasEndpoints && sp.externallyAccessible()

	internalVerdict, externalVerdict := "", ""
	if !c.hasEndpoints {
		internalVerdict, externalVerdict = "goto "+chainReject, "goto "+chainReject
	} else {
		if !hasInternal {
			internalVerdict = "drop"
		}
		if !hasExternal {
			externalVerdict = "drop"
		}
	}

	vip := func(ip net.IP) []string { return []string{ip.String(), proto, port} }
	out.elements = append(out.elements, element{container: setClusterIPs, key: []string{sp.clusterIP.String()}})
	if hasInternal {
		out.elements = append(out.elements, element{container: mapServiceIPs, isMap: true, key: vip(sp.clusterIP), value: "goto " + internalChain})
	} else {
		out.elements = append(out.elements, element{container: mapNoEndpointServices, isMap: true, key: vip(sp.clusterIP), value: internalVerdict, comment: comment})
	}
	for _, ip := range append(append([]net.IP(nil), sp.externalIPs...), sp.lbIPs...) {
		if c.hasEndpoints {
			out.elements = append(out.elements, element{container: mapServiceIPs, isMap: true, key: vip(ip), value: "goto " + extChain})
		}
		if !hasExternal {
			out.elements = append(out.elements, element{container: mapNoEndpointServices, isMap: true, key: vip(ip), value: externalVerdict, comment: comment})
		}
	}
	usesFirewall := len(sp.lbIPs) > 0 && len(sp.sourceRanges) > 0
	if usesFirewall {
		for _, ip := range sp.lbIPs {
			out.elements = append(out.elements, element{container: mapFirewallIPs, isMap: true, key: vip(ip), value: "goto " + fwChain})
		}
	}
	if sp.nodePort != 0 {
		np := []string{proto, strconv.Itoa(int(sp.nodePort))}
		if c.hasEndpoints {
			out.elements = append(out.elements, element{container: mapServiceNodePorts, isMap: true, key: np, value: "goto " + extChain})
		}
		if !hasExternal {
			out.elements = append(out.elements, element{container: mapNoEndpointNodePorts, isMap: true, key: np, value: externalVerdict, comment: comment})
		}
	}
	if sp.healthCheckNodePort != 0 {
		if out.healthChecks == nil {
			out.healthChecks = map[int32]int{}
		}
		n := 0
		for _, e := range all {
			if e.local && e.ready {
				n++
			}
		}
		out.healthChecks[sp.healthCheckNodePort] = n
	}
	if sp.protocol == corev1.ProtocolUDP {
		f := udpFrontend{port: sp.port, nodePort: sp.nodePort, ips: []string{sp.clusterIP.String()}}
		for _, ip := range append(append([]net.IP(nil), sp.externalIPs...), sp.lbIPs...) {
			f.ips = append(f.ips, ip.String())
		}
		for _, e := range all {
			if e.serving {
				f.endpoints = append(f.endpoints, e.String())
			}
		}
		out.udp = append(out.udp, f)
	}

	if usesExternal {
		if !sp.externalLocal {
			out.chain(extChain, r.masquerade())
		} else {
			if r.clusterCIDR != "" {
				// Pods' traffic to an external address is subject to no
				// traffic policy, as if it went out to a load-balancer
				// and came back.
				out.chain(extChain, knftables.Concat(r.ip, "saddr", r.clusterCIDR, "goto", clusterChain))
			}
			// The node's own traffic has a local source address: masquerade
			// it and use any endpoint.
			out.chain(extChain,
				knftables.Concat("fib saddr type local", r.masquerade()),
				knftables.Concat("fib saddr type local goto", clusterChain))
		}
		if hasExternal {
			out.chain(extChain, "goto "+externalPolicyChain)
		}
	}
	if usesFirewall {
		var sources []string
		fromNode := false
		for _, cidr := range sp.sourceRanges {
			sources = append(sources, cidr.String())
			for _, ip := range r.nodeIPs {
				fromNode = fromNode || cidr.Contains(ip)
			}
		}
		if fromNode {
			// A request from the node to an LB address that is local
			// loops back with that address as its source.
			for _, ip := range sp.lbIPs {
				sources = append(sources, ip.String())
			}
		}
		out.chain(fwChain, knftables.Concat(r.ip, "saddr != {", strings.Join(sources, ", "), "} drop"))
	}

	if affinity {
		for _, e := range c.reachable {
			out.sets = append(out.sets, affinitySet{name: epSet(e), timeout: time.Duration(sp.affinitySeconds) * time.Second})
			out.chain(epChain(e),
				knftables.Concat("update", "@"+epSet(e), "{", r.ip, "saddr }"),
				knftables.Concat("meta l4proto", proto, "dnat to", e.String()))
		}
	}
	write := func(chain string, eps []endpoint) {
		if affinity {
			var vmap []string
			for i, e := range eps {
				out.chain(chain, knftables.Concat(r.ip, "saddr", "@"+epSet(e), "goto", epChain(e)))
				vmap = append(vmap, fmt.Sprintf("%d : goto %s", i, epChain(e)))
			}
			out.chain(chain, knftables.Concat("numgen random mod", len(eps), "vmap {", strings.Join(vmap, ", "), "}"))
			return
		}
		if len(eps) == 1 {
			out.chain(chain, knftables.Concat("meta l4proto", proto, "dnat to", eps[0].String()))
			return
		}
		targets := make([]string, len(eps))
		for i, e := range eps {
			targets[i] = fmt.Sprintf("%d : %s . %d", i, e.ip, e.port)
		}
		out.chain(chain, knftables.Concat("meta l4proto", proto, "dnat", r.ip, "addr . port to numgen random mod", len(eps),
			"map {", strings.Join(targets, ", "), "}"))
	}
	if usesCluster {
		write(clusterChain, c.cluster)
	}
	if usesLocal {
		write(localChain, c.local)
	}
}

// isServiceChain tells k1s's per-service chains from the fixed ones.
func isServiceChain(name string) bool {
	for _, p := range []string{prefixClusterPolicyChain, prefixLocalPolicyChain, prefixExternalChain, prefixFirewallChain, prefixEndpointChain} {
		if strings.HasPrefix(name, p) && strings.Contains(name, "/") {
			return true
		}
	}
	return false
}
