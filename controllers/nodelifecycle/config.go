package nodelifecycle

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Config, kube-controller-manager's.
const (
	DefaultNodeMonitorPeriod         = 5 * time.Second
	DefaultNodeMonitorGracePeriod    = 50 * time.Second
	DefaultNodeStartupGracePeriod    = 60 * time.Second
	DefaultNodeEvictionRate          = 0.1
	DefaultSecondaryNodeEvictionRate = 0.01
	DefaultLargeClusterSizeThreshold = 50
	DefaultUnhealthyZoneThreshold    = 0.55
)

// Config is the node lifecycle controller's configuration. Start from
// DefaultConfig: zero rates are meaningful (no tainting) and are not
// replaced by defaults.
type Config struct {
	// NodeMonitorPeriod is how often every node's heartbeat is checked
	// (--node-monitor-period). Default 5s.
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node that has reported its
	// status may go without a heartbeat (lease renewal or Ready condition
	// heartbeat) before its conditions become Unknown
	// (--node-monitor-grace-period). Default 50s.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod is the same for a node that has never
	// reported a Ready condition (--node-startup-grace-period). Default 60s.
	NodeStartupGracePeriod time.Duration
	// NodeEvictionRate is how many nodes per second and zone get a
	// NoExecute taint in a healthy zone (--node-eviction-rate). Default 0.1.
	NodeEvictionRate float32
	// SecondaryNodeEvictionRate is that rate in a partially disrupted zone
	// of more than LargeClusterSizeThreshold nodes; smaller disrupted zones
	// taint nothing (--secondary-node-eviction-rate). Default 0.01.
	SecondaryNodeEvictionRate float32
	// LargeClusterSizeThreshold is the zone size above which a partially
	// disrupted zone keeps tainting at SecondaryNodeEvictionRate
	// (--large-cluster-size-threshold). Default 50.
	LargeClusterSizeThreshold int32
	// UnhealthyZoneThreshold is the fraction of not-Ready nodes (at least
	// three of them) from which a zone is partially disrupted
	// (--unhealthy-zone-threshold). Default 0.55.
	UnhealthyZoneThreshold float32
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		NodeMonitorPeriod:         DefaultNodeMonitorPeriod,
		NodeMonitorGracePeriod:    DefaultNodeMonitorGracePeriod,
		NodeStartupGracePeriod:    DefaultNodeStartupGracePeriod,
		NodeEvictionRate:          DefaultNodeEvictionRate,
		SecondaryNodeEvictionRate: DefaultSecondaryNodeEvictionRate,
		LargeClusterSizeThreshold: DefaultLargeClusterSizeThreshold,
		UnhealthyZoneThreshold:    DefaultUnhealthyZoneThreshold,
	}
}

// Validate checks c; each error names its flag, and all are joined.
func (c Config) Validate() error {
	var errs []error
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--node-monitor-period", c.NodeMonitorPeriod},
		{"--node-monitor-grace-period", c.NodeMonitorGracePeriod},
		{"--node-startup-grace-period", c.NodeStartupGracePeriod},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s must be greater than zero", d.flag, d.v))
		}
	}
	if c.NodeMonitorPeriod > 0 && c.NodeMonitorGracePeriod > 0 && c.NodeMonitorGracePeriod <= c.NodeMonitorPeriod {
		errs = append(errs, fmt.Errorf("--node-monitor-grace-period: %s must be greater than --node-monitor-period %s", c.NodeMonitorGracePeriod, c.NodeMonitorPeriod))
	}
	if c.NodeEvictionRate < 0 {
		errs = append(errs, fmt.Errorf("--node-eviction-rate: %v must not be negative", c.NodeEvictionRate))
	}
	if c.SecondaryNodeEvictionRate < 0 {
		errs = append(errs, fmt.Errorf("--secondary-node-eviction-rate: %v must not be negative", c.SecondaryNodeEvictionRate))
	}
	if c.LargeClusterSizeThreshold < 0 {
		errs = append(errs, fmt.Errorf("--large-cluster-size-threshold: %d must not be negative", c.LargeClusterSizeThreshold))
	}
	if c.UnhealthyZoneThreshold <= 0 || c.UnhealthyZoneThreshold > 1 {
		errs = append(errs, fmt.Errorf("--unhealthy-zone-threshold: %v must be greater than 0 and at most 1", c.UnhealthyZoneThreshold))
	}
	return errors.Join(errs...)
}
