package cm

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubectl/pkg/util/qos"
)

// Kernel and CFS constants, as the kubelet uses them.
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	QuotaPeriod    = 100000 // µs: 100 ms
	MinQuotaPeriod = 1000   // µs: a quota is at least 1 ms
)

// ResourceConfig is what one cgroup is set to; nil fields are left as
// they are.
type ResourceConfig struct {
	CPUShares *uint64
	CPUQuota  *int64 // µs per period; -1: unlimited
	CPUPeriod *uint64
	Memory    *int64 // bytes; 0 or -1: unlimited
	PidsLimit *int64 // -1 or 0: unlimited
}

// MilliCPUToShares converts a cpu request to CFS shares: at least 2
// (the kernel's minimum, also what no request gets), at most 262144.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / 1000
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a cpu limit to a CFS quota over period (µs);
// 0 without a limit, else at least 1 ms.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	q := milliCPU * period / 1000
	if q < MinQuotaPeriod {
		q = MinQuotaPeriod
	}
	return q
}

// ResourceConfigForPod is the pod cgroup's settings, as the kubelet's:
// the pod's requests and limits summed over its containers (init
// containers counted as the scheduler does, pod overhead added, or the
// pod-level resources when set). Guaranteed pods get shares, quota and
// memory limit; Burstable pods shares, and quota (memory limit) only when
// every container declares a cpu (memory) limit; BestEffort pods 2
// shares. pidsLimit > 0 caps the pod's processes.
func ResourceConfigForPod(pod *corev1.Pod, pidsLimit int64) *ResourceConfig {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuLimited, memLimited := true, true
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Resources.Limits.Cpu().IsZero() {
				cpuLimited = false
			}
			if cs[i].Resources.Limits.Memory().IsZero() {
				memLimited = false
			}
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuLimited = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memLimited = true
		}
	}
	shares := MilliCPUToShares(reqs.Cpu().MilliValue())
	period := uint64(QuotaPeriod)
	quota := MilliCPUToQuota(limits.Cpu().MilliValue(), QuotaPeriod)
	mem := limits.Memory().Value()

	rc := &ResourceConfig{}
	switch qos.GetPodQOS(pod) {
	case corev1.PodQOSGuaranteed:
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &mem
	case corev1.PodQOSBurstable:
		rc.CPUShares = &shares
		if cpuLimited {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if memLimited {
			rc.Memory = &mem
		}
	default:
		min := uint64(MinShares)
		rc.CPUShares = &min
	}
	if pidsLimit > 0 {
		rc.PidsLimit = &pidsLimit
	}
	return rc
}

// QOSCgroupName is the cgroup of a QoS class under kubepods: "" for
// Guaranteed (kubepods itself), "burstable", "besteffort".
func QOSCgroupName(class corev1.PodQOSClass) string {
	if class == corev1.PodQOSGuaranteed {
		return ""
	}
	return strings.ToLower(string(class))
}

// PodCgroupName is pod's cgroup under the cgroup root, upstream's
// cgroupfs name: /kubepods/pod<uid>, /kubepods/burstable/pod<uid>,
// /kubepods/besteffort/pod<uid> (root "/").
func PodCgroupName(root string, pod *corev1.Pod) string {
	return joinCgroup(root, "kubepods", QOSCgroupName(qos.GetPodQOS(pod)), "pod"+string(pod.UID))
}

// joinCgroup joins cgroup name parts into an absolute name, skipping
// empty ones.
func joinCgroup(parts ...string) string {
	var out []string
	for _, p := range parts {
		for _, s := range strings.Split(p, "/") {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	return "/" + strings.Join(out, "/")
}

// explicit fills rc's unset limits with "unlimited" (quota -1, memory 0,
// pids -1), so that writing it also lifts a limit the cgroup had.
func explicit(rc *ResourceConfig) *ResourceConfig {
	out := *rc
	unlimited := int64(-1)
	if out.CPUQuota == nil {
		out.CPUQuota = &unlimited
	}
	if out.CPUPeriod == nil {
		p := uint64(QuotaPeriod)
		out.CPUPeriod = &p
	}
	if out.Memory == nil {
		zero := int64(0)
		out.Memory = &zero
	}
	if out.PidsLimit == nil {
		out.PidsLimit = &unlimited
	}
	return &out
}

// limitOf reads a limit where 0 and below mean none.
func limitOf(p *int64) int64 {
	if p == nil || *p <= 0 {
		return -1
	}
	return *p
}

func sameConfig(a, b *ResourceConfig) bool {
	u := func(p *uint64) uint64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return u(a.CPUShares) == u(b.CPUShares) && u(a.CPUPeriod) == u(b.CPUPeriod) &&
		limitOf(a.CPUQuota) == limitOf(b.CPUQuota) && limitOf(a.Memory) == limitOf(b.Memory) && limitOf(a.PidsLimit) == limitOf(b.PidsLimit)
}

// grow is, limit by limit, the larger of a and b ("none" is the
// largest): what a pod cgroup holds while its containers are resized.
func grow(a, b *ResourceConfig) *ResourceConfig {
	out := *b
	if a.CPUShares != nil && b.CPUShares != nil && *a.CPUShares > *b.CPUShares {
		out.CPUShares = a.CPUShares
	}
	larger := func(x, y *int64) *int64 {
		lx, ly := limitOf(x), limitOf(y)
		if lx == -1 || ly == -1 {
			v := int64(-1)
			return &v
		}
		if lx > ly {
			return &lx
		}
		return &ly
	}
	out.CPUQuota = larger(a.CPUQuota, b.CPUQuota)
	out.Memory = larger(a.Memory, b.Memory)
	out.PidsLimit = larger(a.PidsLimit, b.PidsLimit)
	return &out
}
