package podautoscaler

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Config, kube-controller-manager's.
const (
	DefaultSyncPeriod                   = 15 * time.Second
	DefaultDownscaleStabilizationWindow = 5 * time.Minute
	DefaultTolerance                    = 0.1
	DefaultCPUInitializationPeriod      = 5 * time.Minute
	DefaultInitialReadinessDelay        = 30 * time.Second
	DefaultConcurrentSyncs              = 5
)

// Config is the controller's configuration, under kube-controller-manager's
// flag names. Zero fields take their defaults (SetDefaults).
type Config struct {
	// SyncPeriod is how often each HPA is reconciled
	// (--horizontal-pod-autoscaler-sync-period). Default 15s.
	SyncPeriod time.Duration
	// DownscaleStabilizationWindow is how far back the controller looks
	// for higher recommendations before it scales down, for HPAs whose
	// behavior sets no scale-down window
	// (--horizontal-pod-autoscaler-downscale-stabilization). Default 5m.
	DownscaleStabilizationWindow time.Duration
	// Tolerance is the smallest relative difference between a metric and
	// its target that causes scaling (--horizontal-pod-autoscaler-tolerance).
	// Default 0.1.
	Tolerance float64
	// CPUInitializationPeriod is the time after a pod starts during which
	// its CPU samples count only once it is ready and the sample was taken
	// after it became ready
	// (--horizontal-pod-autoscaler-cpu-initialization-period). Default 5m.
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is the time after a pod starts during which a
	// not-ready pod is taken for one that has not yet become ready
	// (--horizontal-pod-autoscaler-initial-readiness-delay). Default 30s.
	InitialReadinessDelay time.Duration
	// ConcurrentSyncs is the number of HPAs reconciled at once
	// (--concurrent-horizontal-pod-autoscaler-syncs). Default 5.
	ConcurrentSyncs int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	var c Config
	c.SetDefaults()
	return c
}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {
	if c.SyncPeriod == 0 {
		c.SyncPeriod = DefaultSyncPeriod
	}
	if c.DownscaleStabilizationWindow == 0 {
		c.DownscaleStabilizationWindow = DefaultDownscaleStabilizationWindow
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.CPUInitializationPeriod == 0 {
		c.CPUInitializationPeriod = DefaultCPUInitializationPeriod
	}
	if c.InitialReadinessDelay == 0 {
		c.InitialReadinessDelay = DefaultInitialReadinessDelay
	}
	if c.ConcurrentSyncs == 0 {
		c.ConcurrentSyncs = DefaultConcurrentSyncs
	}
}

// Validate checks c after SetDefaults; errors name the flags.
func (c Config) Validate() error {
	var errs []error
	if c.SyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--horizontal-pod-autoscaler-sync-period: %s must be greater than zero", c.SyncPeriod))
	}
	if c.DownscaleStabilizationWindow < 0 {
		errs = append(errs, fmt.Errorf("--horizontal-pod-autoscaler-downscale-stabilization: %s must not be negative", c.DownscaleStabilizationWindow))
	}
	if c.Tolerance < 0 {
		errs = append(errs, fmt.Errorf("--horizontal-pod-autoscaler-tolerance: %v must not be negative", c.Tolerance))
	}
	if c.CPUInitializationPeriod < 0 {
		errs = append(errs, fmt.Errorf("--horizontal-pod-autoscaler-cpu-initialization-period: %s must not be negative", c.CPUInitializationPeriod))
	}
	if c.InitialReadinessDelay < 0 {
		errs = append(errs, fmt.Errorf("--horizontal-pod-autoscaler-initial-readiness-delay: %s must not be negative", c.InitialReadinessDelay))
	}
	if c.ConcurrentSyncs <= 0 {
		errs = append(errs, fmt.Errorf("--concurrent-horizontal-pod-autoscaler-syncs: %d must be greater than zero", c.ConcurrentSyncs))
	}
	return errors.Join(errs...)
}
