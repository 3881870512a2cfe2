package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"
)

// Defaults of Config.
const (
	DefaultPort          = 53
	DefaultClusterDomain = "cluster.local"
	DefaultResolvConf    = "/etc/resolv.conf"
	DefaultLinkName      = "k1s-dns"
	DefaultCacheSize     = 10000
)

// Config configures the cluster DNS server. Every field documents its
// default; SetDefaults fills them.
type Config struct {
	// ClusterDNS is the address pods send their queries to, carried by the
	// dummy link LinkName, and the address of the zone's name server
	// (ns.dns.<domain>). Required (--cluster-dns; k1s's default is
	// 10.43.0.10).
	ClusterDNS net.IP
	// Port is the UDP and TCP port on ClusterDNS. Default 53.
	Port int
	// ClusterDomain is the cluster's zone (--cluster-domain). Default
	// cluster.local.
	ClusterDomain string
	// ResolvConf is the host resolver configuration whose name servers
	// answer every name outside the cluster (--resolv-conf); a
	// systemd-resolved stub in it is replaced by resolved's upstream
	// servers (internal/resolvconf). It is read again when it changes.
	// Default /etc/resolv.conf.
	ResolvConf string
	// Upstreams (host:port), when not empty, replace ResolvConf; tests
	// point them at a resolver of their own. Default none.
	Upstreams []string
	// LinkName is the dummy network interface that carries ClusterDNS as a
	// /32 (/128). It is created when missing and reused when present; it
	// outlives Run (RemoveLink deletes it). Default k1s-dns.
	LinkName string
	// ListenAddress (host:port, port 0 picks a free one for UDP and TCP
	// alike), when set, is bound as given instead of ClusterDNS:Port, and
	// no link is managed: the address must already exist (tests use
	// 127.0.0.1:0). Default empty.
	ListenAddress string
	// CacheSize bounds the number of forwarded answers kept. Default
	// 10000; negative disables the cache.
	CacheSize int
}

// Deps are the server's handles. The informers come from a shared factory
// that the caller starts after New (New adds its indexers).
type Deps struct {
	// Services are core/v1 Services. Required.
	Services cache.SharedIndexInformer
	// EndpointSlices are discovery/v1 EndpointSlices. Required.
	EndpointSlices cache.SharedIndexInformer
	// Metrics receives the server's metrics. Nil: none are kept.
	Metrics metrics.KubeRegistry
	// Clock times cache entries and requests. Default the real clock.
	Clock clock.PassiveClock
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.ResolvConf == "" {
		c.ResolvConf = DefaultResolvConf
	}
	if c.LinkName == "" {
		c.LinkName = DefaultLinkName
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
}

// Validate reports configuration errors naming the flag (or the field,
// for those no flag sets).
func (c Config) Validate() error {
	var errs []error
	if c.ClusterDNS == nil {
		errs = append(errs, errors.New("--cluster-dns: must be set"))
	} else if a, ok := netip.AddrFromSlice(c.ClusterDNS); !ok || a.Unmap().IsUnspecified() || a.Unmap().IsMulticast() {
		errs = append(errs, fmt.Errorf("--cluster-dns: %s is not a unicast address", c.ClusterDNS))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("dns Port: %d is out of range 1-65535", c.Port))
	}
	if d := strings.TrimSuffix(c.ClusterDomain, "."); d == "" {
		errs = append(errs, errors.New("--cluster-domain: must not be empty"))
	} else if _, ok := dns.IsDomainName(d); !ok || strings.ContainsAny(d, `\ `) || strings.HasPrefix(d, ".") || strings.Contains(d, "..") {
		errs = append(errs, fmt.Errorf("--cluster-domain: %q is not a domain name", c.ClusterDomain))
	}
	if c.ResolvConf == "" && len(c.Upstreams) == 0 {
		errs = append(errs, errors.New("--resolv-conf: must not be empty"))
	}
	for i, u := range c.Upstreams {
		if _, err := parseHostPort(u); err != nil {
			errs = append(errs, fmt.Errorf("dns Upstreams[%d]: %w", i, err))
		}
	}
	if c.ListenAddress != "" {
		if _, err := parseHostPort(c.ListenAddress); err != nil {
			errs = append(errs, fmt.Errorf("dns ListenAddress: %w", err))
		}
	} else if c.LinkName == "" || len(c.LinkName) > 15 || strings.ContainsAny(c.LinkName, "/: \t") {
		errs = append(errs, fmt.Errorf("dns LinkName: %q is not an interface name (1-15 characters, no '/', ':' or space)", c.LinkName))
	}
	return errors.Join(errs...)
}

// parseHostPort parses an IP address and port ("192.0.2.1:53",
// "[2001:db8::1]:53").
func parseHostPort(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: %w", s, err)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: host must be an IP address: %w", s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: bad port: %w", s, err)
	}
	return netip.AddrPortFrom(a, uint16(p)), nil
}
