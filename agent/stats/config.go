package stats

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Config configures the provider. Every field documents its default.
type Config struct {
	// NodeName names the node in the summary (--node-name). Required.
	NodeName string
	// RootDir is the agent's root directory (<data-dir>/agent): the
	// filesystem the summary reports as the node's (nodefs). Required.
	RootDir string
	// PodsDir holds the pods' volumes. Default <RootDir>/pods.
	PodsDir string
	// PodLogsDir holds the containers' logs. Default /var/log/pods.
	PodLogsDir string
	// CgroupRoot is the root of the pods' cgroup hierarchy
	// (--cgroup-root); "<CgroupRoot>/kubepods" is reported as the pods
	// system container when it exists. Default "/".
	CgroupRoot string
	// HousekeepingInterval is how often usage is sampled (cAdvisor's
	// --housekeeping_interval). Default 10s.
	HousekeepingInterval time.Duration
	// VolumeStatsAggPeriod is how often the pods' volume usage is walked
	// (--volume-stats-agg-period). Default 1m; negative: never.
	VolumeStatsAggPeriod time.Duration
	// EmbeddedRuntime says the runtime runs in the agent's own cgroup
	// (k1s's embedded containerd): the runtime system container is then
	// reported as the agent's.
	EmbeddedRuntime bool
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.PodsDir == "" && c.RootDir != "" {
		c.PodsDir = filepath.Join(c.RootDir, "pods")
	}
	if c.PodLogsDir == "" {
		c.PodLogsDir = "/var/log/pods"
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/"
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = 10 * time.Second
	}
	if c.VolumeStatsAggPeriod == 0 {
		c.VolumeStatsAggPeriod = time.Minute
	}
}

// Validate reports configuration errors naming the flag.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("--node-name: must not be empty"))
	}
	if c.RootDir == "" {
		errs = append(errs, errors.New("--data-dir: the stats provider needs the agent's root directory"))
	}
	if c.HousekeepingInterval < 0 {
		errs = append(errs, fmt.Errorf("--housekeeping-interval: %v must not be negative", c.HousekeepingInterval))
	}
	if !filepath.IsAbs(c.CgroupRoot) {
		errs = append(errs, fmt.Errorf("--cgroup-root: %q is not an absolute path", c.CgroupRoot))
	}
	return errors.Join(errs...)
}

// Runtime is the part of the CRI runtime service the provider reads:
// sandboxes and containers with their processes (verbose status) and
// their writable layers. The remote CRI client satisfies it. Safe for
// concurrent use.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// ImageFs reports the runtime's image filesystem; the CRI image service
// satisfies it.
type ImageFs interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// PVCVolume is a pod's volume backed by a claim whose PersistentVolume is
// a local path on this node (hostPath or local), used in place.
type PVCVolume struct {
	// Name is the pod's volume name.
	Name string
	// Namespace and Claim name the PersistentVolumeClaim.
	Namespace, Claim string
	// Path is the volume's directory on the node.
	Path string
}
