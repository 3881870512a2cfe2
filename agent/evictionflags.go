package agent

import (
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/agent/containergc"
	"github.com/k1s/k1s/agent/eviction"
	"github.com/k1s/k1s/agent/imagegc"
)

// EvictionFlags are the kubelet flags of node-pressure eviction and of
// image and container garbage collection (--eviction-hard is NodeFlags's,
// shared with node allocatable). The zero value (tests that build an
// Agent directly) runs no garbage collection.
type EvictionFlags struct {
	// EvictionSoft (--eviction-soft) "signal<value,…" with
	// EvictionSoftGracePeriod (--eviction-soft-grace-period)
	// "signal=duration,…"; EvictionMinimumReclaim
	// (--eviction-minimum-reclaim) "signal=value,…". Default
	// DefaultEvictionMinimumReclaim.
	EvictionSoft, EvictionSoftGracePeriod, EvictionMinimumReclaim string
	// EvictionPressureTransitionPeriod (--eviction-pressure-transition-period). Default 5m.
	EvictionPressureTransitionPeriod time.Duration
	// EvictionMaxPodGracePeriod (--eviction-max-pod-grace-period). Default 0.
	EvictionMaxPodGracePeriod int64
	// ImageGCHighThreshold (--image-gc-high-threshold, 85) and
	// ImageGCLowThreshold (--image-gc-low-threshold, 80), in percent.
	ImageGCHighThreshold, ImageGCLowThreshold int
	// ImageMinimumGCAge (--image-minimum-gc-age, 2m) and
	// ImageMaximumGCAge (--image-maximum-gc-age, 0: off).
	ImageMinimumGCAge, ImageMaximumGCAge time.Duration
	// ImageGCPeriod (hidden --image-gc-period, k1s's, for tests) is how
	// often image GC runs: kubelet's fixed 5m. 0 (the zero value): no
	// image or container GC.
	ImageGCPeriod time.Duration
	// MaximumDeadContainersPerContainer
	// (--maximum-dead-containers-per-container, 1), MaximumDeadContainers
	// (--maximum-dead-containers, -1) and MinimumContainerTTLDuration
	// (--minimum-container-ttl-duration, 0).
	MaximumDeadContainersPerContainer, MaximumDeadContainers int
	MinimumContainerTTLDuration                              time.Duration
}

func (f *EvictionFlags) cliFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "eviction-soft", Usage: "soft eviction thresholds, signal<value, comma separated; each needs --eviction-soft-grace-period", Destination: &f.EvictionSoft},
		&cli.StringFlag{Name: "eviction-soft-grace-period", Usage: "grace period of each soft eviction threshold, signal=duration (e.g. memory.available=1m30s)", Destination: &f.EvictionSoftGracePeriod},
		&cli.StringFlag{Name: "eviction-minimum-reclaim", Usage: "what eviction reclaims beyond a threshold before the pressure ends, signal=value (e.g. nodefs.available=500Mi)", Value: DefaultEvictionMinimumReclaim, Destination: &f.EvictionMinimumReclaim},
		&cli.DurationFlag{Name: "eviction-pressure-transition-period", Usage: "how long a pressure condition stays after its threshold was last met", Value: 5 * time.Minute, Destination: &f.EvictionPressureTransitionPeriod},
		&cli.Int64Flag{Name: "eviction-max-pod-grace-period", Usage: "maximum grace period (seconds) of a pod evicted for a soft threshold", Destination: &f.EvictionMaxPodGracePeriod},
		&cli.IntFlag{Name: "image-gc-high-threshold", Usage: "image filesystem usage (percent) at which image garbage collection runs", Value: 85, EnvVars: []string{"K1S_IMAGE_GC_HIGH_THRESHOLD"}, Destination: &f.ImageGCHighThreshold},
		&cli.IntFlag{Name: "image-gc-low-threshold", Usage: "image filesystem usage (percent) image garbage collection frees down to", Value: 80, EnvVars: []string{"K1S_IMAGE_GC_LOW_THRESHOLD"}, Destination: &f.ImageGCLowThreshold},
		&cli.DurationFlag{Name: "image-minimum-gc-age", Usage: "minimum age of an unused image before it is garbage collected", Value: 2 * time.Minute, Destination: &f.ImageMinimumGCAge},
		&cli.DurationFlag{Name: "image-maximum-gc-age", Usage: "an image unused this long is garbage collected whatever the usage (0: never)", Destination: &f.ImageMaximumGCAge},
		&cli.DurationFlag{Name: "image-gc-period", Usage: "how often image garbage collection runs (kubelet's fixed 5m; for tests)", Value: 5 * time.Minute, Hidden: true, Destination: &f.ImageGCPeriod},
		&cli.IntFlag{Name: "maximum-dead-containers-per-container", Usage: "dead instances kept per container (negative: no limit)", Value: 1, Destination: &f.MaximumDeadContainersPerContainer},
		&cli.IntFlag{Name: "maximum-dead-containers", Usage: "dead containers kept on the node (negative: no limit)", Value: -1, Destination: &f.MaximumDeadContainers},
		&cli.DurationFlag{Name: "minimum-container-ttl-duration", Usage: "minimum age of a dead container before it is garbage collected", Destination: &f.MinimumContainerTTLDuration},
	}
}

// gcEnabled is false for the zero value.
func (f *EvictionFlags) gcEnabled() bool { return f.ImageGCPeriod > 0 }

// Eviction is the eviction manager's configuration from the flags (with
// --eviction-hard's thresholds); errors name the flag.
func (f *NodeFlags) Eviction() (eviction.Config, error) {
	hard, err := f.HardThresholds()
	if err != nil {
		return eviction.Config{}, err
	}
	ts, err := eviction.ParseThresholds(hard, f.EvictionSoft, f.EvictionSoftGracePeriod, f.EvictionMinimumReclaim)
	if err != nil {
		return eviction.Config{}, err
	}
	cfg := eviction.Config{
		Thresholds:               ts,
		PressureTransitionPeriod: f.EvictionPressureTransitionPeriod,
		MaxPodGracePeriodSeconds: f.EvictionMaxPodGracePeriod,
		// Upstream's default, for every node built from flags (not for
		// the zero value of tests).
		LocalStorageCapacityIsolation: f.gcEnabled(),
	}
	return cfg, cfg.Validate()
}

// ImageGC is the image GC policy from the flags.
func (f *EvictionFlags) ImageGC() imagegc.Config {
	return imagegc.Config{
		HighThresholdPercent: f.ImageGCHighThreshold,
		LowThresholdPercent:  f.ImageGCLowThreshold,
		MinAge:               f.ImageMinimumGCAge,
		MaxAge:               f.ImageMaximumGCAge,
		Period:               f.ImageGCPeriod,
	}
}

// ContainerGC is the container GC policy from the flags.
func (f *EvictionFlags) ContainerGC() containergc.Config {
	return containergc.Config{
		MinAge:             f.MinimumContainerTTLDuration,
		MaxPerPodContainer: f.MaximumDeadContainersPerContainer,
		MaxContainers:      f.MaximumDeadContainers,
	}
}

// validateEviction checks the eviction and GC flags but --eviction-hard
// (ContainerManager reports that one).
func (f *NodeFlags) validateEviction() error {
	_, err := eviction.ParseThresholds(nil, f.EvictionSoft, f.EvictionSoftGracePeriod, f.EvictionMinimumReclaim)
	cfg := eviction.Config{PressureTransitionPeriod: f.EvictionPressureTransitionPeriod, MaxPodGracePeriodSeconds: f.EvictionMaxPodGracePeriod}
	errs := []error{err, cfg.Validate()}
	if f.gcEnabled() {
		ig := f.ImageGC()
		errs = append(errs, ig.Validate())
		cg := f.ContainerGC()
		errs = append(errs, cg.Validate())
	}
	return errors.Join(errs...)
}
