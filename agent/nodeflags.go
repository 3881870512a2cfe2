package agent

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/k1s/k1s/agent/cm"
	"github.com/k1s/k1s/agent/lowwrite"
	"github.com/k1s/k1s/internal/thresholds"
)

// ParseTaints reads --node-taint values: key[=value]:Effect.
func ParseTaints(specs []string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, spec := range specs {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("--node-taint: %q is not key[=value]:Effect", spec)
		}
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--node-taint: %q has effect %q, want NoSchedule, PreferNoSchedule or NoExecute", spec, effect)
		}
		key, value, _ := strings.Cut(kv, "=")
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	return out, nil
}

// DefaultNodeIP is the address of the interface that holds the default
// route, or 127.0.0.1 when there is none.
func DefaultNodeIP() net.IP {
	ip, err := utilnet.ResolveBindAddress(net.IPv4zero)
	if err != nil || ip == nil {
		return net.IPv4(127, 0, 0, 1)
	}
	return ip
}

// DefaultEvictionHard is --eviction-hard's default, k3s's (which sets it
// for its kubelet, replacing upstream's imagefs.available<15%,
// imagefs.inodesFree<5%, memory.available<100Mi, nodefs.available<10%,
// nodefs.inodesFree<5%): a small box's disk is often fuller than 85 %, and
// upstream's thresholds would put such a node under DiskPressure at once.
const DefaultEvictionHard = "imagefs.available<5%,nodefs.available<5%"

// DefaultEvictionMinimumReclaim is --eviction-minimum-reclaim's default,
// k3s's (upstream's is none).
const DefaultEvictionMinimumReclaim = "imagefs.available=10%,nodefs.available=10%"

// NodeFlags are the kubelet flags of the node's resources (cgroups,
// reservations, eviction), under upstream's names and defaults, shared
// by `k1s server` and `k1s agent`: both register CLIFlags. The zero value
// (tests that build an Agent directly) creates no cgroups and reserves
// nothing.
type NodeFlags struct {
	// CgroupRoot (--cgroup-root, default "/") and CgroupsPerQOS
	// (--cgroups-per-qos, default true) place the kubepods tree.
	CgroupRoot    string
	CgroupsPerQOS bool
	// KubeReserved and SystemReserved (--kube-reserved,
	// --system-reserved): "cpu=200m,memory=500Mi,…". Default none.
	KubeReserved, SystemReserved string
	// EvictionHard (--eviction-hard): "signal<value,…". Default
	// DefaultEvictionHard.
	EvictionHard string
	// EnforceNodeAllocatable (--enforce-node-allocatable): "pods" or
	// "none" ("" is none). Default "pods".
	EnforceNodeAllocatable string
	// PodMaxPids (--pod-max-pids): processes per pod, -1 unlimited. Default -1.
	PodMaxPids int64
	// CPUManagerPolicy (--cpu-manager-policy): only "none". Default "none".
	CPUManagerPolicy string
	// Eviction (--eviction-soft, --eviction-soft-grace-period,
	// --eviction-minimum-reclaim, --eviction-pressure-transition-period,
	// --eviction-max-pod-grace-period) and garbage collection
	// (--image-gc-*, --image-*-gc-age, --maximum-dead-containers*,
	// --minimum-container-ttl-duration): see EvictionFlags.
	EvictionFlags
	// EdgeAutonomy (--edge-autonomy, k1s's) marks the Node autonomous
	// (annotation and label node.k1s.io/autonomy=true): while it is
	// unreachable its pods are not evicted. Default false.
	EdgeAutonomy bool
	// LowWrite (--low-write, k1s's) is the low-write mode for SD and
	// eMMC storage: on the node, pod logs go to a tmpfs of
	// LowWriteLogSize (agent/lowwrite); on a server, etcd batches its
	// backend commits and the controllers' leader lease is renewed less
	// often. Default false.
	LowWrite bool
	// LowWriteLogSize (--low-write-log-size) caps the pod log tmpfs of
	// --low-write, a quantity ("64Mi"). Default lowwrite.DefaultLogSize.
	LowWriteLogSize string
	// DisableStats (--disable-stats, k1s's) turns the node's stats
	// collection (agent/stats) off: no /stats/summary, /metrics/resource
	// or /metrics/cadvisor, no metrics for kubectl top from this node,
	// and the eviction manager has no usage to act on. Default false.
	DisableStats bool
}

// CLIFlags are the flags that fill f.
func (f *NodeFlags) CLIFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "disable-stats", Usage: "(k1s) collect no resource usage on this node: no /stats/summary, /metrics/resource, kubectl top or eviction signals", Destination: &f.DisableStats},
		&cli.StringFlag{Name: "cgroup-root", Usage: "cgroup the node's pod cgroups (kubepods) go under", Value: "/", EnvVars: []string{"K1S_CGROUP_ROOT"}, Destination: &f.CgroupRoot},
		&cli.BoolFlag{Name: "cgroups-per-qos", Usage: "create the QoS cgroup hierarchy (kubepods, burstable, besteffort) and one cgroup per pod", Value: true, Destination: &f.CgroupsPerQOS},
		&cli.StringFlag{Name: "kube-reserved", Usage: "resources reserved for Kubernetes components, e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000 (held back from allocatable)", Destination: &f.KubeReserved},
		&cli.StringFlag{Name: "system-reserved", Usage: "resources reserved for the rest of the system, as --kube-reserved", Destination: &f.SystemReserved},
		&cli.StringFlag{Name: "eviction-hard", Usage: "hard eviction thresholds, signal<value (e.g. memory.available<1Gi), comma separated; memory.available and nodefs.available are held back from allocatable", Value: DefaultEvictionHard, EnvVars: []string{"K1S_EVICTION_HARD"}, Destination: &f.EvictionHard},
		&cli.StringFlag{Name: "enforce-node-allocatable", Usage: "node allocatable enforcement: pods (kubepods limited to capacity less reservations) or none", Value: "pods", Destination: &f.EnforceNodeAllocatable},
		&cli.Int64Flag{Name: "pod-max-pids", Usage: "maximum processes per pod (-1: no limit)", Value: -1, Destination: &f.PodMaxPids},
		&cli.BoolFlag{Name: "edge-autonomy", Usage: "mark the node autonomous (annotation and label node.k1s.io/autonomy=true): the servers do not evict its pods while it is unreachable (every node runs its pods from its checkpoint while cut off)", EnvVars: []string{"K1S_EDGE_AUTONOMY"}, Destination: &f.EdgeAutonomy},
		&cli.BoolFlag{Name: "low-write", Usage: "low-write mode for SD cards and eMMC: pod logs on a size-capped tmpfs (lost at reboot), etcd commits batched (acknowledged writes stay durable), leader lease renewed every 30s (see README)", EnvVars: []string{"K1S_LOW_WRITE"}, Destination: &f.LowWrite},
		&cli.StringFlag{Name: "low-write-log-size", Usage: "size cap of the pod log tmpfs of --low-write", Value: lowwrite.DefaultLogSize, EnvVars: []string{"K1S_LOW_WRITE_LOG_SIZE"}, Destination: &f.LowWriteLogSize},
		&cli.StringFlag{Name: "cpu-manager-policy", Usage: "CPU manager policy: only none (pods share all CPUs by shares and quota)", Value: "none", Destination: &f.CPUManagerPolicy},
	}, f.EvictionFlags.cliFlags()...)
}

// HardThresholds are the parsed --eviction-hard thresholds.
func (f *NodeFlags) HardThresholds() ([]thresholds.Threshold, error) {
	return thresholds.ParseFlag("eviction-hard", f.EvictionHard)
}

// ContainerManager is the container manager's configuration from f;
// errors name the flag.
func (f *NodeFlags) ContainerManager() (cm.Config, error) {
	var errs []error
	kube, err := cm.ParseReserved("kube-reserved", f.KubeReserved)
	errs = append(errs, err)
	system, err := cm.ParseReserved("system-reserved", f.SystemReserved)
	errs = append(errs, err)
	hard, err := f.HardThresholds()
	errs = append(errs, err)
	enforce := []string{}
	for _, e := range strings.Split(f.EnforceNodeAllocatable, ",") {
		if e = strings.TrimSpace(e); e != "" {
			enforce = append(enforce, e)
		}
	}
	if len(enforce) == 1 && enforce[0] == cm.EnforceNone {
		enforce = []string{}
	}
	cfg := cm.Config{
		CgroupRoot:             f.CgroupRoot,
		CgroupsPerQOS:          f.CgroupsPerQOS,
		KubeReserved:           kube,
		SystemReserved:         system,
		HardEviction:           hard,
		EnforceNodeAllocatable: enforce,
		PodPidsLimit:           f.PodMaxPids,
		CPUManagerPolicy:       f.CPUManagerPolicy,
	}
	errs = append(errs, cfg.Validate())
	if err := errors.Join(errs...); err != nil {
		return cm.Config{}, err
	}
	return cfg, nil
}
