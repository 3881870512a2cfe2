package cm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/util/qos"
)

// Manager keeps the node's pod cgroups. Safe for concurrent use.
type Manager interface {
	// Start creates kubepods and the QoS cgroups, or sets them again when
	// they exist. Pods already running elsewhere are left where they are.
	Start(ctx context.Context) error
	// CgroupParent is the cgroup parent of pod's sandbox: its pod cgroup
	// ("" lets the runtime choose).
	CgroupParent(pod *corev1.Pod) string
	// EnsurePod creates pod's cgroup when it is missing, before its
	// sandbox is made; active are the pods the node runs (for the
	// Burstable class's shares). For a pod whose resources changed (an
	// in-place resize) it raises the pod's limits before the containers'
	// change; PodSynced lowers them after.
	EnsurePod(ctx context.Context, pod *corev1.Pod, active []*corev1.Pod) error
	// PodSynced sets pod's cgroup to exactly its resources once its
	// containers have been synced (a resize's decreases).
	PodSynced(ctx context.Context, pod *corev1.Pod)
	// Cleanup removes the pod cgroups under kubepods of pods not in keep
	// (a cgroup that still holds processes stays until the next call),
	// and sets the QoS classes' shares from active.
	Cleanup(ctx context.Context, active []*corev1.Pod, keep sets.Set[types.UID]) error
	// Allocatable is the node's allocatable for capacity.
	Allocatable(capacity corev1.ResourceList) corev1.ResourceList
}

// driver is the cgroup filesystem (fakeable in tests).
type driver interface {
	Exists(name string) bool
	Ensure(name string, rc *ResourceConfig) error
	Set(name string, rc *ResourceConfig) error
	Children(name string) ([]string, error)
	Remove(name string) error
}

type manager struct {
	cfg      Config
	capacity corev1.ResourceList
	cg       driver

	mu              sync.Mutex
	burstableShares uint64 // last written; 0: not yet
	// applied is what was last written to each pod's cgroup.
	applied map[types.UID]*ResourceConfig
}

// New returns a container manager for a node of capacity (cpu, memory).
// It validates cfg and touches no cgroup before Start.
func New(cfg Config, capacity corev1.ResourceList) (Manager, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &manager{cfg: cfg, capacity: capacity, applied: map[types.UID]*ResourceConfig{}}
	if cfg.CgroupsPerQOS {
		cg, err := newCgroupfs()
		if err != nil {
			return nil, fmt.Errorf("container manager (--cgroups-per-qos): %w", err)
		}
		m.cg = cg
	}
	return m, nil
}

func newWithDriver(cfg Config, capacity corev1.ResourceList, d driver) (*manager, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &manager{cfg: cfg, capacity: capacity, cg: d, applied: map[types.UID]*ResourceConfig{}}, nil
}

func (m *manager) kubepods() string { return joinCgroup(m.cfg.CgroupRoot, "kubepods") }

func (m *manager) qosCgroup(class corev1.PodQOSClass) string {
	return joinCgroup(m.kubepods(), QOSCgroupName(class))
}

func (m *manager) enforcePods() bool {
	for _, e := range m.cfg.EnforceNodeAllocatable {
		if e == EnforcePods {
			return true
		}
	}
	return false
}

func (m *manager) Start(ctx context.Context) error {
	if !m.cfg.CgroupsPerQOS {
		return nil
	}
	logger := klog.FromContext(ctx)
	// kubepods is limited to the node's allocatable (without the eviction
	// thresholds) when pods are enforced, else to its capacity.
	limits := m.capacity
	if m.enforcePods() {
		limits = allocatableAbsolute(m.capacity, m.cfg.KubeReserved, m.cfg.SystemReserved)
	}
	rc := &ResourceConfig{}
	if q, ok := limits[corev1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		rc.CPUShares = &s
	}
	if q, ok := limits[corev1.ResourceMemory]; ok {
		v := q.Value()
		rc.Memory = &v
	}
	if err := m.cg.Ensure(m.kubepods(), rc); err != nil {
		return fmt.Errorf("node allocatable cgroup: %w", err)
	}
	min := uint64(MinShares)
	if err := m.cg.Ensure(m.qosCgroup(corev1.PodQOSBestEffort), &ResourceConfig{CPUShares: &min}); err != nil {
		return fmt.Errorf("BestEffort QoS cgroup: %w", err)
	}
	if err := m.cg.Ensure(m.qosCgroup(corev1.PodQOSBurstable), &ResourceConfig{}); err != nil {
		return fmt.Errorf("Burstable QoS cgroup: %w", err)
	}
	logger.Info("Pod cgroups ready", "kubepods", m.kubepods(), "cpuShares", rc.CPUShares, "memoryLimit", rc.Memory)
	return nil
}

func (m *manager) CgroupParent(pod *corev1.Pod) string {
	if !m.cfg.CgroupsPerQOS {
		if m.cfg.CgroupRoot == "/" {
			return ""
		}
		return m.cfg.CgroupRoot
	}
	return PodCgroupName(m.cfg.CgroupRoot, pod)
}

func (m *manager) EnsurePod(ctx context.Context, pod *corev1.Pod, active []*corev1.Pod) error {
	if !m.cfg.CgroupsPerQOS {
		return nil
	}
	name := PodCgroupName(m.cfg.CgroupRoot, pod)
	want := explicit(ResourceConfigForPod(pod, m.cfg.PodPidsLimit))
	if m.cg.Exists(name) {
		m.mu.Lock()
		prev := m.applied[pod.UID]
		m.mu.Unlock()
		if prev != nil && sameConfig(prev, want) {
			return nil
		}
		// Resized (or not written by this process yet): raise what
		// grows now, the containers may need it; PodSynced lowers.
		next := want
		if prev != nil {
			next = grow(prev, want)
		}
		if err := m.cg.Set(name, next); err != nil {
			klog.FromContext(ctx).V(4).Info("Pod cgroup not updated yet", "cgroup", name, "err", err)
			return nil
		}
		m.setApplied(pod.UID, next)
		return nil
	}
	// The Burstable class grows before one of its pods is added.
	if qos.GetPodQOS(pod) == corev1.PodQOSBurstable {
		if err := m.updateQOS(append(active[:len(active):len(active)], pod)); err != nil {
			klog.FromContext(ctx).V(2).Info("Failed to update QoS cgroups", "err", err)
		}
	}
	if err := m.cg.Ensure(name, want); err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	m.setApplied(pod.UID, want)
	klog.FromContext(ctx).V(2).Info("Pod cgroup created", "cgroup", name)
	return nil
}

func (m *manager) setApplied(uid types.UID, rc *ResourceConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applied[uid] = rc
}

func (m *manager) PodSynced(ctx context.Context, pod *corev1.Pod) {
	if !m.cfg.CgroupsPerQOS {
		return
	}
	want := explicit(ResourceConfigForPod(pod, m.cfg.PodPidsLimit))
	m.mu.Lock()
	prev := m.applied[pod.UID]
	m.mu.Unlock()
	if prev == nil || sameConfig(prev, want) {
		return
	}
	name := PodCgroupName(m.cfg.CgroupRoot, pod)
	if err := m.cg.Set(name, want); err != nil {
		// Usage above a lowered memory limit: the next sync tries again.
		klog.FromContext(ctx).V(2).Info("Pod cgroup not lowered yet", "cgroup", name, "err", err)
		return
	}
	m.setApplied(pod.UID, want)
}

// updateQOS sets the Burstable class's shares to the sum of its pods'
// cpu requests (BestEffort's stay 2), as upstream's QoS manager.
func (m *manager) updateQOS(active []*corev1.Pod) error {
	var milli int64
	seen := sets.New[types.UID]()
	for _, p := range active {
		if seen.Has(p.UID) || qos.GetPodQOS(p) != corev1.PodQOSBurstable {
			continue
		}
		seen.Insert(p.UID)
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		milli += req.Cpu().MilliValue()
	}
	shares := MilliCPUToShares(milli)
	m.mu.Lock()
	defer m.mu.Unlock()
	if shares == m.burstableShares {
		return nil
	}
	if err := m.cg.Set(m.qosCgroup(corev1.PodQOSBurstable), &ResourceConfig{CPUShares: &shares}); err != nil {
		return err
	}
	m.burstableShares = shares
	return nil
}

func (m *manager) Cleanup(ctx context.Context, active []*corev1.Pod, keep sets.Set[types.UID]) error {
	if !m.cfg.CgroupsPerQOS {
		return nil
	}
	logger := klog.FromContext(ctx)
	var errs []error
	if err := m.updateQOS(active); err != nil {
		errs = append(errs, fmt.Errorf("QoS cgroups: %w", err))
	}
	for _, parent := range []string{m.kubepods(), m.qosCgroup(corev1.PodQOSBurstable), m.qosCgroup(corev1.PodQOSBestEffort)} {
		children, err := m.cg.Children(parent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range children {
			uid, ok := strings.CutPrefix(c, "pod")
			if !ok || uid == "" || keep.Has(types.UID(uid)) {
				continue
			}
			name := joinCgroup(parent, c)
			m.mu.Lock()
			delete(m.applied, types.UID(uid))
			m.mu.Unlock()
			if err := m.cg.Remove(name); err != nil {
				// Processes still in it: the next pass tries again.
				logger.V(4).Info("Orphaned pod cgroup not removed yet", "cgroup", name, "err", err)
				continue
			}
			logger.V(2).Info("Removed orphaned pod cgroup", "cgroup", name)
		}
	}
	return errors.Join(errs...)
}

func (m *manager) Allocatable(capacity corev1.ResourceList) corev1.ResourceList {
	return Allocatable(capacity, m.cfg.KubeReserved, m.cfg.SystemReserved, m.cfg.HardEviction)
}
