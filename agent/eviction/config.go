// Package eviction is the node agent's eviction manager, after upstream
// kubelet's: every monitoring interval it observes the node's signals
// (memory.available, nodefs.available, nodefs.inodesFree,
// imagefs.available, imagefs.inodesFree, pid.available) from a stats
// summary, compares them with the --eviction-hard and --eviction-soft
// thresholds, reports the MemoryPressure, DiskPressure and PIDPressure
// node conditions, reclaims disk through container and image garbage
// collection, and when that is not enough evicts one pod per interval,
// ranked as upstream's. It also refuses new pods under pressure.
package eviction

import (
	"errors"
	"fmt"
	"time"

	"github.com/k1s/k1s/internal/thresholds"
)

// Threshold is one eviction threshold: met when the signal's available
// amount is below Value.
type Threshold struct {
	Signal thresholds.Signal
	Value  thresholds.Value
	// GracePeriod is zero for a hard threshold, the soft threshold's
	// --eviction-soft-grace-period otherwise.
	GracePeriod time.Duration
	// MinReclaim (--eviction-minimum-reclaim) must be reclaimed beyond
	// Value before the threshold stops being met; nil: none.
	MinReclaim *thresholds.Value
}

// Hard reports whether t is a hard threshold (no grace period).
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

func (t Threshold) String() string {
	s := fmt.Sprintf("%s<%s", t.Signal, t.Value)
	if !t.Hard() {
		s += fmt.Sprintf(" (grace %s)", t.GracePeriod)
	}
	return s
}

// ParseThresholds combines the parsed --eviction-hard thresholds with
// --eviction-soft, --eviction-soft-grace-period and
// --eviction-minimum-reclaim, as upstream's kubelet: every soft
// threshold needs a grace period; a minimum reclaim applies to every
// threshold of its signal. Errors name the flag.
func ParseThresholds(hard []thresholds.Threshold, soft, softGracePeriod, minimumReclaim string) ([]Threshold, error) {
	var out []Threshold
	for _, h := range hard {
		out = append(out, Threshold{Signal: h.Signal, Value: h.Value})
	}
	softList, err := thresholds.ParseFlag("eviction-soft", soft)
	if err != nil {
		return nil, err
	}
	graceMap, err := thresholds.ParseMap("eviction-soft-grace-period", softGracePeriod, "=")
	if err != nil {
		return nil, err
	}
	var errs []error
	grace := map[thresholds.Signal]time.Duration{}
	for sig, v := range graceMap {
		if !thresholds.Known(thresholds.Signal(sig)) {
			errs = append(errs, fmt.Errorf("--eviction-soft-grace-period: unsupported eviction signal %q", sig))
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("--eviction-soft-grace-period: %s=%s is not a non-negative duration", sig, v))
			continue
		}
		grace[thresholds.Signal(sig)] = d
	}
	for _, s := range softList {
		d, ok := grace[s.Signal]
		if !ok {
			if _, given := graceMap[string(s.Signal)]; !given {
				errs = append(errs, fmt.Errorf("--eviction-soft-grace-period: the soft threshold %s has no grace period", s.Signal))
			}
			continue
		}
		out = append(out, Threshold{Signal: s.Signal, Value: s.Value, GracePeriod: d})
	}
	reclaimMap, err := thresholds.ParseMap("eviction-minimum-reclaim", minimumReclaim, "=")
	if err != nil {
		return nil, err
	}
	reclaims, err := thresholds.Parse("eviction-minimum-reclaim", reclaimMap)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, r := range reclaims {
		v := r.Value
		for i := range out {
			if out[i].Signal == r.Signal {
				out[i].MinReclaim = &v
			}
		}
	}
	return out, nil
}

// Config configures the eviction manager. Every field documents its default.
type Config struct {
	// Thresholds are the hard and soft thresholds (ParseThresholds).
	// Default none: the manager only reports no pressure.
	Thresholds []Threshold
	// PressureTransitionPeriod (--eviction-pressure-transition-period)
	// is how long a pressure condition stays after its last threshold
	// was met. Default 5m.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds (--eviction-max-pod-grace-period) caps
	// the grace period of a pod evicted for a soft threshold (a hard
	// threshold's pod gets 1s). Default 0, as upstream's.
	MaxPodGracePeriodSeconds int64
	// LocalStorageCapacityIsolation evicts pods over their emptyDir
	// sizeLimit or ephemeral-storage limits (upstream's
	// localStorageCapacityIsolation, on by default there). Default false
	// here; the agent turns it on for every node built from flags.
	LocalStorageCapacityIsolation bool
	// MonitoringInterval is how often signals are observed. Default 10s
	// (kubelet's housekeeping interval).
	MonitoringInterval time.Duration
	// PodCleanupTimeout bounds the wait for an evicted pod's resources
	// to be reclaimed before the next pass. Default 30s.
	PodCleanupTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.PressureTransitionPeriod == 0 {
		c.PressureTransitionPeriod = 5 * time.Minute
	}
	if c.MonitoringInterval == 0 {
		c.MonitoringInterval = 10 * time.Second
	}
	if c.PodCleanupTimeout == 0 {
		c.PodCleanupTimeout = 30 * time.Second
	}
}

// Validate reports errors naming the flag.
func (c *Config) Validate() error {
	var errs []error
	if c.PressureTransitionPeriod < 0 {
		errs = append(errs, fmt.Errorf("--eviction-pressure-transition-period: %s must not be negative", c.PressureTransitionPeriod))
	}
	if c.MaxPodGracePeriodSeconds < 0 {
		errs = append(errs, fmt.Errorf("--eviction-max-pod-grace-period: %d must not be negative", c.MaxPodGracePeriodSeconds))
	}
	return errors.Join(errs...)
}
