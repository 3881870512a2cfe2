package volume

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Defaults of Config.
const (
	// DefaultPodsDir is <data-dir>/agent/pods under the default data dir.
	DefaultPodsDir = "/var/lib/k1s/agent/pods"
	// DefaultClusterDomain is the cluster's DNS domain.
	DefaultClusterDomain = "cluster.local"
	// DefaultNodeHostsFile is the node's hosts file, copied for hostNetwork pods.
	DefaultNodeHostsFile = "/etc/hosts"
	// DefaultRefreshInterval is the least time between two fetches of the
	// objects behind one volume.
	DefaultRefreshInterval = time.Minute
)

// Config configures the volume manager. The zero value of each field means
// its default.
type Config struct {
	// PodsDir holds one directory per pod, named by its UID.
	// Default /var/lib/k1s/agent/pods (<data-dir>/agent/pods).
	PodsDir string
	// ClusterDomain is the cluster's DNS domain, used for the pod's own
	// name in /etc/hosts when it has a subdomain. Default cluster.local.
	ClusterDomain string
	// NodeHostsFile is the node's hosts file; hostNetwork pods get a copy of
	// it (plus their hostAliases) as /etc/hosts. Default /etc/hosts.
	NodeHostsFile string
	// RefreshInterval is the least time between two fetches of the
	// configMaps and secrets of one volume while its pod is unchanged.
	// Tokens are renewed on their own schedule. Default 1m.
	RefreshInterval time.Duration
	// RecursiveReadOnlySupported says the runtime can make read-only mounts
	// recursively read-only (CRI RuntimeHandlerFeatures.RecursiveReadOnlyMounts);
	// it decides recursiveReadOnly: IfPossible. Default false.
	RecursiveReadOnlySupported bool
}

func (c *Config) setDefaults() {
	if c.PodsDir == "" {
		c.PodsDir = DefaultPodsDir
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.NodeHostsFile == "" {
		c.NodeHostsFile = DefaultNodeHostsFile
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
}

// Validate checks the configuration after defaulting; errors name the flag
// the value comes from.
func (c *Config) Validate() error {
	cfg := *c
	cfg.setDefaults()
	var errs []error
	if !filepath.IsAbs(cfg.PodsDir) {
		errs = append(errs, fmt.Errorf("--data-dir: pods directory %q must be an absolute path", cfg.PodsDir))
	}
	if !filepath.IsAbs(cfg.NodeHostsFile) {
		errs = append(errs, fmt.Errorf("node hosts file %q must be an absolute path", cfg.NodeHostsFile))
	}
	if cfg.RefreshInterval < 0 {
		errs = append(errs, fmt.Errorf("volume refresh interval %v must not be negative", cfg.RefreshInterval))
	}
	return errors.Join(errs...)
}
