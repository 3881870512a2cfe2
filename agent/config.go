// Package agent is k1s's node agent: a kubelet-shaped component that runs
// the pods bound to its node through a CRI runtime. The Agent holds
// manager interfaces only; its sync loop dispatches pod changes, runtime
// events and housekeeping to one worker per pod.
package agent

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/k1s/k1s/agent/lowwrite"
)

// Config configures the agent. Every field documents its default.
type Config struct {
	// NodeName (--node-name). Required.
	NodeName string
	// NodeIPs (--node-ip). Required.
	NodeIPs []net.IP
	// DataDir is k1s's data directory (--data-dir). Default /var/lib/k1s.
	DataDir string
	// ControlPlane marks a server's node (node-role.kubernetes.io/control-plane).
	ControlPlane bool
	// NodeLabels (--node-label) and NodeTaints (--node-taint) apply at registration.
	NodeLabels map[string]string
	NodeTaints []corev1.Taint
	// PodManifests is the static pod directory (--pod-manifests).
	// Default <data-dir>/agent/pod-manifests.
	PodManifests string
	// RuntimeEndpoint is the CRI socket. Required.
	RuntimeEndpoint string
	// ClusterDNS and ClusterDomain shape pods' resolv.conf. Default 10.43.0.10, cluster.local.
	ClusterDNS    []string
	ClusterDomain string
	// ResolvConf is the node's resolver configuration, for dnsPolicy:
	// Default pods (--resolv-conf). Default /etc/resolv.conf.
	ResolvConf string
	// MaxPods is the node's pod capacity (--kubelet-arg=max-pods). Default 110.
	MaxPods int64
	// NodeExternalIPs (--node-external-ip) and NodeExternalDNS
	// (--node-external-dns) are the node's ExternalIP and ExternalDNS
	// addresses. Default none.
	NodeExternalIPs []net.IP
	NodeExternalDNS []string
	// AgentPort is the agent API port published in the node's status. Default 10250.
	AgentPort int32
	// KubeletVersion is reported in the node's nodeInfo.
	KubeletVersion string
	// HousekeepingInterval is how often orphans are cleaned. Default 2s.
	HousekeepingInterval time.Duration
	// CNIConfDir is where the pod network configuration is written.
	// Default <data-dir>/agent/etc/cni/net.d.
	CNIConfDir string
	// NodeFlags are the resource flags (cgroups, reservations, eviction
	// thresholds). The zero value creates no cgroups and reserves nothing.
	NodeFlags NodeFlags
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.DataDir == "" {
		c.DataDir = "/var/lib/k1s"
	}
	if c.PodManifests == "" {
		c.PodManifests = filepath.Join(c.AgentDir(), "pod-manifests")
	}
	if len(c.ClusterDNS) == 0 {
		c.ClusterDNS = []string{"10.43.0.10"}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	if c.AgentPort == 0 {
		c.AgentPort = 10250
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = 2 * time.Second
	}
	if c.CNIConfDir == "" {
		c.CNIConfDir = filepath.Join(c.AgentDir(), "etc", "cni", "net.d")
	}
}

// AgentDir is <data-dir>/agent.
func (c *Config) AgentDir() string { return filepath.Join(c.DataDir, "agent") }

// Validate reports configuration errors naming the flag.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("--node-name: must not be empty"))
	}
	if len(c.NodeIPs) == 0 {
		errs = append(errs, errors.New("--node-ip: no node address"))
	}
	if c.RuntimeEndpoint == "" {
		errs = append(errs, errors.New("--container-runtime-endpoint: must not be empty"))
	}
	if c.MaxPods < 1 {
		errs = append(errs, fmt.Errorf("--max-pods: %d must be positive", c.MaxPods))
	}
	if _, err := c.NodeFlags.ContainerManager(); err != nil {
		errs = append(errs, err)
	}
	if err := c.NodeFlags.validateEviction(); err != nil {
		errs = append(errs, err)
	}
	if c.NodeFlags.LowWrite {
		if _, err := lowwrite.ParseLogSize(c.NodeFlags.LowWriteLogSize); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
