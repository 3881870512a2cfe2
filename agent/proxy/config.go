package proxy

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config configures the service proxy. Every field documents its default.
type Config struct {
	// NodeName is this node (--node-name): endpoints on it are local.
	// Required.
	NodeName string
	// NodeIPs accept NodePort and load-balancer traffic (--node-ip).
	// Required.
	NodeIPs []net.IP
	// ClusterCIDRs are the pods' addresses (--cluster-cidr): traffic from
	// them to a cluster IP keeps its source, other traffic is
	// masqueraded. Default none (the short-circuit of pod traffic for
	// externalTrafficPolicy: Local is then off).
	ClusterCIDRs []*net.IPNet
	// ServiceCIDRs (--service-cidr): traffic to an address in them that no
	// Service holds is rejected on the node. Required; one table per
	// family they name.
	ServiceCIDRs []*net.IPNet
	// ExemptIPs are addresses in the service range served on the node
	// itself (the cluster DNS, --cluster-dns): the proxy neither rejects
	// nor forwards them, and skips a Service whose cluster IP is one.
	ExemptIPs []net.IP
	// Table is the nftables table, one per family. Default "k1s-proxy".
	Table string
	// MasqueradeBit is the packet-mark bit for masquerading, 0–31.
	// Default 14 (kube-proxy's).
	MasqueradeBit int
	// SyncPeriod is how often the table is checked against what the
	// proxy wrote, and rewritten whole when they differ (--proxy-sync-period).
	// Default 30s.
	SyncPeriod time.Duration
	// MinSyncPeriod spaces writes to the kernel: changes seen within it
	// are written together. Default 0 (changes made while a write runs
	// already wait for the next).
	MinSyncPeriod time.Duration
	// HealthzBindAddress serves /healthz and /livez (kube-proxy's
	// --healthz-bind-address). Default "0.0.0.0:10256"; "-" turns it off.
	HealthzBindAddress string
	// HealthCheckBindIPs are the addresses the health-check node ports of
	// externalTrafficPolicy: Local load-balancers listen on. Default all.
	HealthCheckBindIPs []net.IP
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.MasqueradeBit == 0 {
		c.MasqueradeBit = defaultMasqueradeBit
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = 30 * time.Second
	}
	if c.HealthzBindAddress == "" {
		c.HealthzBindAddress = "0.0.0.0:10256"
	}
}

// DefaultTable is the nftables table k1s's proxy owns, in the ip and ip6
// families.
const DefaultTable = "k1s-proxy"

// Validate reports configuration errors naming the flag.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("--node-name: must not be empty"))
	}
	if len(c.NodeIPs) == 0 {
		errs = append(errs, errors.New("--node-ip: no node address"))
	}
	if len(c.ServiceCIDRs) == 0 {
		errs = append(errs, errors.New("--service-cidr: no service range"))
	}
	if c.MasqueradeBit < 0 || c.MasqueradeBit > 31 {
		errs = append(errs, fmt.Errorf("masquerade bit %d: must be within 0-31", c.MasqueradeBit))
	}
	if c.SyncPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--proxy-sync-period: %s is under a second", c.SyncPeriod))
	}
	if c.MinSyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("minimum sync period %s is negative", c.MinSyncPeriod))
	}
	if c.HealthzBindAddress != "-" {
		if _, _, err := net.SplitHostPort(c.HealthzBindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--healthz-bind-address: %q: %w", c.HealthzBindAddress, err))
		}
	}
	return errors.Join(errs...)
}
