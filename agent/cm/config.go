package cm

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/k1s/k1s/internal/thresholds"
)

// Node allocatable enforcement levels (--enforce-node-allocatable).
const (
	EnforcePods           = "pods"
	EnforceSystemReserved = "system-reserved"
	EnforceKubeReserved   = "kube-reserved"
	EnforceNone           = "none"
)

// Config configures the container manager. Every field documents its
// default; only agent/ assembles it.
type Config struct {
	// CgroupRoot is the cgroup k1s's tree lives under (--cgroup-root).
	// Default "/".
	CgroupRoot string
	// CgroupsPerQOS creates kubepods, the QoS cgroups and one cgroup per
	// pod (--cgroups-per-qos). The flag defaults to true; false leaves
	// pods where the runtime puts them (under CgroupRoot when it is not
	// "/").
	CgroupsPerQOS bool
	// KubeReserved (--kube-reserved) and SystemReserved
	// (--system-reserved) are held back from allocatable. Default none.
	KubeReserved, SystemReserved corev1.ResourceList
	// HardEviction are the hard eviction thresholds (--eviction-hard):
	// memory.available and nodefs.available are held back from
	// allocatable.
	HardEviction []thresholds.Threshold
	// EnforceNodeAllocatable (--enforce-node-allocatable): "pods" limits
	// kubepods to capacity − reservations. Default [pods].
	EnforceNodeAllocatable []string
	// PodPidsLimit caps each pod's processes (--pod-max-pids). Default -1:
	// no limit.
	PodPidsLimit int64
	// CPUManagerPolicy (--cpu-manager-policy): only "none" (the default),
	// where every pod shares every CPU by its shares and quota.
	CPUManagerPolicy string
}

// Validate reports configuration errors naming the flag.
func (c *Config) Validate() error {
	var errs []error
	if c.CPUManagerPolicy != "" && c.CPUManagerPolicy != "none" {
		errs = append(errs, fmt.Errorf("--cpu-manager-policy: %q is not supported by k1s, only \"none\"", c.CPUManagerPolicy))
	}
	if c.CgroupRoot != "" && c.CgroupRoot[0] != '/' {
		errs = append(errs, fmt.Errorf("--cgroup-root: %q must be an absolute cgroup path", c.CgroupRoot))
	}
	if c.PodPidsLimit < -1 {
		errs = append(errs, fmt.Errorf("--pod-max-pids: %d must be -1 (no limit) or positive", c.PodPidsLimit))
	}
	seen := sets.New[string]()
	for _, e := range c.EnforceNodeAllocatable {
		if seen.Has(e) {
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q given twice", e))
			continue
		}
		seen.Insert(e)
		switch e {
		case EnforcePods:
			if !c.CgroupsPerQOS {
				errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q needs --cgroups-per-qos=true", e))
			}
		case EnforceNone:
			if len(c.EnforceNodeAllocatable) > 1 {
				errs = append(errs, errors.New("--enforce-node-allocatable: \"none\" may not be combined with other levels"))
			}
		case EnforceSystemReserved, EnforceKubeReserved, EnforceSystemReserved + "-compressible", EnforceKubeReserved + "-compressible":
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q needs --%s-cgroup, which k1s does not support; use \"pods\" or \"none\"", e, trimCompressible(e)))
		default:
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q is not one of pods, none", e))
		}
	}
	for _, r := range []struct {
		flag string
		l    corev1.ResourceList
	}{{"kube-reserved", c.KubeReserved}, {"system-reserved", c.SystemReserved}} {
		for k, v := range r.l {
			if v.Sign() < 0 {
				errs = append(errs, fmt.Errorf("--%s: %s=%s must not be negative", r.flag, k, v.String()))
			}
		}
	}
	return errors.Join(errs...)
}

func trimCompressible(s string) string {
	if len(s) > len("-compressible") && s[len(s)-len("-compressible"):] == "-compressible" {
		return s[:len(s)-len("-compressible")]
	}
	return s
}

func (c *Config) setDefaults() {
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/"
	}
	if c.EnforceNodeAllocatable == nil && c.CgroupsPerQOS {
		c.EnforceNodeAllocatable = []string{EnforcePods}
	}
	if c.PodPidsLimit == 0 {
		c.PodPidsLimit = -1
	}
	if c.CPUManagerPolicy == "" {
		c.CPUManagerPolicy = "none"
	}
}

// ParseReserved reads a --kube-reserved/--system-reserved value,
// "cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000", naming flag in
// errors. Only cpu, memory, ephemeral-storage and pid are accepted, as
// upstream's.
func ParseReserved(flag, value string) (corev1.ResourceList, error) {
	m, err := thresholds.ParseMap(flag, value, "=")
	if err != nil {
		return nil, err
	}
	out := corev1.ResourceList{}
	var errs []error
	for k, v := range m {
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "pid":
		default:
			errs = append(errs, fmt.Errorf("--%s: resource %q is not one of cpu, memory, ephemeral-storage, pid", flag, k))
			continue
		}
		q, err := parseQuantity(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %s=%s: %w", flag, k, v, err))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("--%s: %s=%s must not be negative", flag, k, v))
			continue
		}
		out[corev1.ResourceName(k)] = q
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
