package proxy

import (
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LabelServiceProxyName on a Service hands it to another proxy: k1s leaves
// it alone, as kube-proxy does.
const LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// servicePort is one port of a Service as the proxy programs it, for one
// IP family.
type servicePort struct {
	svc       types.NamespacedName
	portName  string
	protocol  corev1.Protocol
	clusterIP net.IP
	port      int32
	nodePort  int32

	externalIPs  []net.IP
	lbIPs        []net.IP
	sourceRanges []*net.IPNet

	affinitySeconds int32 // 0: no ClientIP affinity

	internalLocal bool // internalTrafficPolicy: Local
	externalLocal bool // externalTrafficPolicy: Local on an externally reachable Service

	healthCheckNodePort int32
}

// String names the port as kube-proxy does: ns/name:port.
func (sp *servicePort) String() string {
	return sp.svc.String() + ":" + sp.portName
}

func (sp *servicePort) proto() string { return strings.ToLower(string(sp.protocol)) }

// externallyAccessible is true when the port takes traffic from outside
// the cluster: a node port, a load-balancer or an external IP.
func (sp *servicePort) externallyAccessible() bool {
	return sp.nodePort != 0 || len(sp.lbIPs) > 0 || len(sp.externalIPs) > 0
}

// usesClusterEndpoints: internal traffic uses every endpoint, or external
// traffic does, or the external chain needs them to short-circuit pods'
// and the node's own traffic.
func (sp *servicePort) usesClusterEndpoints() bool {
	return !sp.internalLocal || sp.externallyAccessible()
}

// usesLocalEndpoints: some traffic is limited to this node's endpoints.
func (sp *servicePort) usesLocalEndpoints() bool {
	return sp.internalLocal || (sp.externalLocal && sp.externallyAccessible())
}

// endpoint is one backend of a service port.
type endpoint struct {
	ip          string
	port        int32
	local       bool // on this node
	ready       bool
	serving     bool
	terminating bool
}

// nameSuffix is the endpoint in a chain name, which may hold only
// [A-Za-z0-9_./-]: ip/port, an IPv6 address's colons as dots.
func (e endpoint) nameSuffix() string {
	return strings.ReplaceAll(e.ip, ":", ".") + "/" + strconv.Itoa(int(e.port))
}

func (e endpoint) String() string {
	return net.JoinHostPort(e.ip, strconv.Itoa(int(e.port)))
}

// servicePorts reads the Service's ports for one family. It returns nothing
// for a Service the proxy does not handle: headless, ExternalName, without
// a cluster IP of the family, or handed to another proxy.
func servicePorts(svc *corev1.Service, family corev1.IPFamily) []*servicePort {
	if svc == nil || svc.Labels[LabelServiceProxyName] != "" || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	clusterIP := clusterIPOf(svc, family)
	if clusterIP == nil {
		return nil
	}
	name := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	reachable := svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer ||
		len(svc.Spec.ExternalIPs) > 0
	var affinity int32
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = int32(corev1.DefaultClientIPServiceAffinitySeconds)
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = *c.ClientIP.TimeoutSeconds
		}
	}
	var externalIPs, lbIPs []net.IP
	for _, s := range svc.Spec.ExternalIPs {
		if ip := net.ParseIP(strings.TrimSpace(s)); ip != nil && familyOf(ip) == family {
			externalIPs = append(externalIPs, ip)
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP == "" || (ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP) {
				continue
			}
			if ip := net.ParseIP(ing.IP); ip != nil && familyOf(ip) == family {
				lbIPs = append(lbIPs, ip)
			}
		}
	}
	var ranges []*net.IPNet
	for _, r := range svc.Spec.LoadBalancerSourceRanges {
		_, cidr, err := net.ParseCIDR(strings.TrimSpace(r))
		if err != nil || familyOf(cidr.IP) != family {
			continue
		}
		if ones, _ := cidr.Mask.Size(); ones == 0 {
			ranges = nil // 0.0.0.0/0 admits everyone: no firewall at all
			break
		}
		ranges = append(ranges, cidr)
	}
	var healthCheck int32
	externalLocal := reachable && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if externalLocal && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		healthCheck = svc.Spec.HealthCheckNodePort
	}
	out := make([]*servicePort, 0, len(svc.Spec.Ports))
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, &servicePort{
			svc:                 name,
			portName:            p.Name,
			protocol:            proto,
			clusterIP:           clusterIP,
			port:                p.Port,
			nodePort:            p.NodePort,
			externalIPs:         externalIPs,
			lbIPs:               lbIPs,
			sourceRanges:        ranges,
			affinitySeconds:     affinity,
			internalLocal:       svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
			externalLocal:       externalLocal,
			healthCheckNodePort: healthCheck,
		})
	}
	return out
}

func clusterIPOf(svc *corev1.Service, family corev1.IPFamily) net.IP {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		if s == corev1.ClusterIPNone {
			return nil
		}
		if ip := net.ParseIP(s); ip != nil && familyOf(ip) == family {
			return ip
		}
	}
	return nil
}

func familyOf(ip net.IP) corev1.IPFamily {
	if ip.To4() != nil {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// endpointsFor merges the Service's EndpointSlices of the family into the
// endpoints of one service port, matched by port name and protocol, sorted
// and without duplicates (where an address shows up twice, a
// non-terminating one wins, as kube-proxy's).
func endpointsFor(sp *servicePort, epSlices []*discoveryv1.EndpointSlice, nodeName string) []endpoint {
	want := discoveryv1.AddressTypeIPv4
	if familyOf(sp.clusterIP) == corev1.IPv6Protocol {
		want = discoveryv1.AddressTypeIPv6
	}
	seen := map[string]int{}
	var out []endpoint
	for _, s := range epSlices {
		if s.AddressType != want {
			continue
		}
		var port int32
		found := false
		for _, p := range s.Ports {
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if name == sp.portName && proto == sp.protocol && p.Port != nil {
				port, found = *p.Port, true
				break
			}
		}
		if !found || port == 0 {
			continue
		}
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if len(e.Addresses) == 0 {
				continue
			}
			ip := net.ParseIP(e.Addresses[0])
			if ip == nil {
				continue
			}
			ep := endpoint{
				ip:          ip.String(),
				port:        port,
				local:       e.NodeName != nil && nodeName != "" && *e.NodeName == nodeName,
				ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
				serving:     e.Conditions.Serving == nil || *e.Conditions.Serving,
				terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
			}
			key := ep.String()
			if i, ok := seen[key]; ok {
				if !ep.terminating {
					out[i] = ep
				}
				continue
			}
			seen[key] = len(out)
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// categorized is the endpoints a service port's traffic may use on this
// node, by upstream's rules: ready endpoints, or, when none is ready
// anywhere, serving terminating ones; the Local policy uses this node's
// endpoints by the same rule.
type categorized struct {
	cluster      []endpoint // for Cluster traffic policy
	local        []endpoint // for Local traffic policy
	reachable    []endpoint // every endpoint either chain uses
	hasEndpoints bool       // any usable endpoint anywhere
}

func categorize(sp *servicePort, eps []endpoint) categorized {
	var c categorized
	if len(eps) == 0 {
		return c
	}
	if sp.usesClusterEndpoints() {
		c.cluster = filter(eps, func(e endpoint) bool { return e.ready })
		if len(c.cluster) == 0 {
			c.cluster = filter(eps, func(e endpoint) bool { return e.serving && e.terminating })
		}
		c.hasEndpoints = len(c.cluster) > 0
	}
	if !sp.usesLocalEndpoints() {
		c.reachable = c.cluster
		return c
	}
	var localReady, localTerminating bool
	for _, e := range eps {
		switch {
		case e.ready:
			c.hasEndpoints = true
			localReady = localReady || e.local
		case e.serving && e.terminating:
			c.hasEndpoints = true
			localTerminating = localTerminating || e.local
		}
	}
	usesTerminating := false
	switch {
	case localReady:
		c.local = filter(eps, func(e endpoint) bool { return e.local && e.ready })
	case localTerminating:
		usesTerminating = true
		c.local = filter(eps, func(e endpoint) bool { return e.local && e.serving && e.terminating })
	}
	if !sp.usesClusterEndpoints() {
		c.reachable = c.local
		return c
	}
	if !usesTerminating {
		// Local endpoints are all ready, so all in the cluster list.
		c.reachable = c.cluster
		return c
	}
	c.reachable = append([]endpoint(nil), c.cluster...)
	for _, e := range c.local {
		if !slices.Contains(c.reachable, e) {
			c.reachable = append(c.reachable, e)
		}
	}
	slices.SortFunc(c.reachable, func(a, b endpoint) int { return strings.Compare(a.String(), b.String()) })
	return c
}

func filter(eps []endpoint, keep func(endpoint) bool) []endpoint {
	var out []endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}
