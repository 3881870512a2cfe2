package kuberuntime

import (
	"context"
	"errors"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/agent/volume"
)

// VolumeMounter gives a container its mounts (the volume manager).
type VolumeMounter interface {
	// Mounts returns the CRI mounts of container c of pod, from the pod's
	// prepared volume host paths (volume name → host path).
	Mounts(pod *corev1.Pod, c *corev1.Container, volumePaths map[string]string, opts volume.ContainerOptions) ([]*runtimeapi.Mount, error)
}

// EnvSource reads the objects environment variables refer to.
type EnvSource interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// ListServices lists the services whose environment variables pods of
	// namespace get (the namespace's, and default/kubernetes).
	ListServices(namespace string) ([]*corev1.Service, error)
}

// Config configures the runtime manager.
type Config struct {
	// NodeName is this node's name.
	NodeName string
	// NodeIPs are the node's addresses (status.hostIP(s)).
	NodeIPs []net.IP
	// Hostname is the node's hostname, for hostNetwork pods.
	Hostname string
	// PodLogsDir holds the pods' log directories. Default /var/log/pods.
	PodLogsDir string
	// ClusterDNS are the cluster DNS server addresses for dnsPolicy
	// ClusterFirst. Default [10.43.0.10].
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain. Default cluster.local.
	ClusterDomain string
	// ResolvConf is the node's resolver configuration, for dnsPolicy
	// Default and the search path. Default /etc/resolv.conf.
	ResolvConf string
	// RuntimeHandler is the CRI runtime handler. Default "" (the runtime's default).
	RuntimeHandler string
	// MemoryCapacity is the node's memory in bytes, for burstable pods'
	// OOM score. Default 8 GiB.
	MemoryCapacity int64
	// CrashLoopBackOffInitial and Max bound the restart back-off. Default 10s and 5m.
	CrashLoopBackOffInitial, CrashLoopBackOffMax time.Duration
	// KeepAllDeadInstances leaves a restarted container's older dead
	// instances to container GC (--maximum-dead-containers-per-container
	// other than 1). Default false: the newest dead one is kept (for
	// logs --previous), older ones are removed at the restart.
	KeepAllDeadInstances bool
}

func (c *Config) setDefaults() {
	if c.PodLogsDir == "" {
		c.PodLogsDir = "/var/log/pods"
	}
	if len(c.ClusterDNS) == 0 {
		c.ClusterDNS = []string{"10.43.0.10"}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.CrashLoopBackOffInitial == 0 {
		c.CrashLoopBackOffInitial = 10 * time.Second
	}
	if c.CrashLoopBackOffMax == 0 {
		c.CrashLoopBackOffMax = 5 * time.Minute
	}
}

// Manager runs pods through a CRI runtime. Safe for concurrent use on
// different pods; callers serialize work on one pod (pod workers do).
type Manager struct {
	cfg      Config
	runtime  internalapi.RuntimeService
	images   internalapi.ImageManagerService
	volumes  VolumeMounter
	env      EnvSource
	recorder record.EventRecorder
	clock    clock.Clock
	// backOff spaces container restarts (CrashLoopBackOff) and image pulls.
	backOff *flowcontrol.Backoff
	// handlers looks up RuntimeClasses' handlers (UseRuntimeClasses); nil:
	// every sandbox runs with cfg.RuntimeHandler.
	handlers RuntimeHandlerFunc
	// allocatable returns the node's allocatable resources, the limits a
	// container without its own gets in the downward API; nil: none.
	allocatable func() corev1.ResourceList
	// cgroupParent is a pod sandbox's cgroup parent (UseCgroupParent);
	// nil: the runtime's default.
	cgroupParent func(*corev1.Pod) string
}

// UseNodeAllocatable gives the manager the node's allocatable resources:
// a downward API resourceFieldRef on limits.cpu, limits.memory or
// limits.ephemeral-storage of a container without that limit resolves to
// them, as kubelet's does. Call before the manager is used.
func (m *Manager) UseNodeAllocatable(fn func() corev1.ResourceList) { m.allocatable = fn }

// UseCgroupParent gives the manager each pod's cgroup (the node's
// container manager): new sandboxes are created under it. Call before the
// manager is used.
func (m *Manager) UseCgroupParent(fn func(*corev1.Pod) string) { m.cgroupParent = fn }

// New returns a runtime manager.
func New(cfg Config, runtime internalapi.RuntimeService, images internalapi.ImageManagerService, volumes VolumeMounter, env EnvSource, recorder record.EventRecorder, clk clock.Clock) (*Manager, error) {
	cfg.setDefaults()
	if runtime == nil || images == nil {
		return nil, errors.New("kuberuntime: a CRI runtime and image service are required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	backOff := flowcontrol.NewBackOffWithJitter(cfg.CrashLoopBackOffInitial, cfg.CrashLoopBackOffMax, 0)
	// The back-off times restarts and pulls against the same clock as the
	// rest of the manager (m.clock.Now() is compared with its entries).
	backOff.Clock = clk
	return &Manager{
		cfg: cfg, runtime: runtime, images: images, volumes: volumes, env: env, recorder: recorder, clock: clk,
		backOff: backOff,
	}, nil
}

// GCBackOff forgets back-off entries of containers that have not failed
// for a while (housekeeping calls it).
func (m *Manager) GCBackOff() { m.backOff.GC() }
