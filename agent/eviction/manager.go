package eviction

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/internal/thresholds"
)

// Reason is the status reason of an evicted or refused pod (upstream's).
const Reason = "Evicted"

// SummaryProvider gives the node's stats summary (kubelet's
// /stats/summary); updateStats asks for fresh numbers.
type SummaryProvider interface {
	Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error)
}

// ImageGC frees image-filesystem space by removing unused images.
type ImageGC interface {
	DeleteUnusedImages(ctx context.Context) error
}

// ContainerGC removes every dead container and sandbox it may.
type ContainerGC interface {
	DeleteAllUnusedContainers(ctx context.Context) error
}

// KillPodFunc stops pod with the grace period given and reports it with
// the status update applies (phase Failed, reason Evicted). It may
// return before the pod is stopped; PodCleanedUpFunc tells when it is.
type KillPodFunc func(pod *corev1.Pod, gracePeriodSeconds int64, update func(*corev1.PodStatus)) error

// Deps are the manager's handles.
type Deps struct {
	Summary     SummaryProvider
	ImageGC     ImageGC
	ContainerGC ContainerGC
	// ActivePods are the pods that may be evicted (not terminated).
	ActivePods func() []*corev1.Pod
	KillPod    KillPodFunc
	// PodCleanedUp reports whether an evicted pod's resources are
	// reclaimed (containers stopped, volumes removed).
	PodCleanedUp func(*corev1.Pod) bool
	// DedicatedImageFs reports whether the image filesystem is not the
	// node filesystem; nil: the same one.
	DedicatedImageFs func() bool
	Recorder         record.EventRecorder
	NodeRef          *corev1.ObjectReference
	Clock            clock.WithTicker
}

// Manager observes the node's resources, reports pressure and evicts
// pods. Safe for concurrent use.
type Manager interface {
	// Run monitors every interval until ctx is done.
	Run(ctx context.Context) error
	IsUnderMemoryPressure() bool
	IsUnderDiskPressure() bool
	IsUnderPIDPressure() bool
	// Admit says whether a new pod may start on the node; when not, the
	// message to report with reason Evicted.
	Admit(pod *corev1.Pod) (ok bool, message string)
}

type manager struct {
	cfg  Config
	deps Deps

	mu sync.RWMutex
	// conditions are the pressure conditions now reported.
	conditions []corev1.NodeConditionType
	// conditionLastObserved is when each condition's threshold was last met.
	conditionLastObserved map[corev1.NodeConditionType]time.Time
	// firstObserved is when each met threshold (by index) was first met.
	firstObserved map[int]time.Time
	// lastMet are the thresholds met after their grace periods.
	lastMet []int
}

// New validates cfg and returns a manager. It starts nothing.
func New(cfg Config, deps Deps) (Manager, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Summary == nil || deps.ActivePods == nil || deps.KillPod == nil {
		return nil, errors.New("eviction: a summary provider, active pods and a kill function are required")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Recorder == nil {
		deps.Recorder = &record.FakeRecorder{}
	}
	if deps.PodCleanedUp == nil {
		deps.PodCleanedUp = func(*corev1.Pod) bool { return true }
	}
	return &manager{cfg: cfg, deps: deps, conditionLastObserved: map[corev1.NodeConditionType]time.Time{}, firstObserved: map[int]time.Time{}}, nil
}

func (m *manager) has(c corev1.NodeConditionType) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return hasCondition(m.conditions, c)
}

func (m *manager) IsUnderMemoryPressure() bool { return m.has(corev1.NodeMemoryPressure) }
func (m *manager) IsUnderDiskPressure() bool   { return m.has(corev1.NodeDiskPressure) }
func (m *manager) IsUnderPIDPressure() bool    { return m.has(corev1.NodePIDPressure) }

// Admit refuses new pods under pressure as upstream's kubelet: critical
// pods always start; under memory pressure alone, only BestEffort pods
// are refused, unless they tolerate the memory-pressure taint; under any
// other pressure every pod is refused.
func (m *manager) Admit(pod *corev1.Pod) (bool, string) {
	m.mu.RLock()
	conds := append([]corev1.NodeConditionType(nil), m.conditions...)
	m.mu.RUnlock()
	if len(conds) == 0 || IsCriticalPod(pod) {
		return true, ""
	}
	if len(conds) == 1 && conds[0] == corev1.NodeMemoryPressure {
		if QOSClass(pod) != corev1.PodQOSBestEffort {
			return true, ""
		}
		taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("The node had condition: %v. ", conds)
}

// Run observes and acts every MonitoringInterval; after an eviction it
// waits for the pod's resources to be reclaimed first, as upstream.
func (m *manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("eviction")
	ctx = klog.NewContext(ctx, logger)
	if len(m.cfg.Thresholds) == 0 && !m.cfg.LocalStorageCapacityIsolation {
		logger.Info("No eviction thresholds: the eviction manager only reports no pressure")
		<-ctx.Done()
		return nil
	}
	logger.Info("Eviction manager started", "thresholds", m.cfg.Thresholds, "interval", m.cfg.MonitoringInterval)
	for {
		evicted, err := m.synchronize(ctx)
		if err != nil {
			logger.Error(err, "Eviction pass failed")
		}
		if len(evicted) > 0 {
			m.waitForCleanup(ctx, evicted)
		} else {
			select {
			case <-ctx.Done():
				return nil
			case <-m.deps.Clock.After(m.cfg.MonitoringInterval):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (m *manager) waitForCleanup(ctx context.Context, pods []*corev1.Pod) {
	logger := klog.FromContext(ctx)
	timeout := m.deps.Clock.NewTimer(m.cfg.PodCleanupTimeout)
	defer timeout.Stop()
	tick := m.deps.Clock.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			logger.Info("Timed out waiting for evicted pods to be cleaned up", "pods", klog.KObjSlice(pods))
			return
		case <-tick.C():
			clean := true
			for _, pod := range pods {
				clean = clean && m.deps.PodCleanedUp(pod)
			}
			if clean {
				logger.V(2).Info("Evicted pods cleaned up", "pods", klog.KObjSlice(pods))
				return
			}
		}
	}
}

// synchronize is one pass: observe, evict the pods over their local
// storage limits, update the conditions, reclaim, and evict at most one
// pod for a threshold; it returns the pods evicted.
func (m *manager) synchronize(ctx context.Context) ([]*corev1.Pod, error) {
	logger := klog.FromContext(ctx)
	ts := m.cfg.Thresholds
	summary, err := m.deps.Summary.Get(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("get stats summary: %w", err)
	}
	obs := observe(summary)
	now := m.deps.Clock.Now()
	stats := podStatsFunc(summary)
	if m.cfg.LocalStorageCapacityIsolation {
		if evicted := m.localStorageEviction(ctx, m.deps.ActivePods(), stats); len(evicted) > 0 {
			return evicted, nil
		}
	}

	m.mu.Lock()
	// Thresholds met now, and those met last time whose minimum reclaim
	// is not yet reached.
	metNow := met(ts, allIndexes(ts), obs, false)
	if len(m.lastMet) > 0 {
		metNow = union(metNow, met(ts, m.lastMet, obs, true))
	}
	first := map[int]time.Time{}
	for _, i := range metNow {
		if at, ok := m.firstObserved[i]; ok {
			first[i] = at
		} else {
			first[i] = now
		}
	}
	for _, c := range conditionsOf(ts, metNow) {
		m.conditionLastObserved[c] = now
	}
	var conds []corev1.NodeConditionType
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if at, ok := m.conditionLastObserved[c]; ok && now.Sub(at) < m.cfg.PressureTransitionPeriod {
			conds = append(conds, c)
		}
	}
	var due []int
	for _, i := range metNow {
		if now.Sub(first[i]) >= ts[i].GracePeriod {
			due = append(due, i)
		}
	}
	if !equalConditions(conds, m.conditions) {
		logger.Info("Node pressure conditions changed", "conditions", conds)
	}
	m.conditions, m.firstObserved, m.lastMet = conds, first, due
	m.mu.Unlock()

	if len(due) == 0 {
		return nil, nil
	}
	// Memory first, as upstream.
	sort.SliceStable(due, func(a, b int) bool {
		return ts[due[a]].Signal == thresholds.MemoryAvailable && ts[due[b]].Signal != thresholds.MemoryAvailable
	})
	t := ts[due[0]]
	res := signalResource[t.Signal]
	logger.Info("Attempting to reclaim", "resource", res, "threshold", t.String())
	m.deps.Recorder.Eventf(m.deps.NodeRef, corev1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", res)

	if m.reclaimNodeLevel(ctx, t.Signal) {
		logger.Info("Reclaimed enough without evicting pods", "resource", res)
		return nil, nil
	}
	pods := m.deps.ActivePods()
	if len(pods) == 0 {
		logger.Info("Eviction thresholds met, but no pod to evict", "resource", res)
		return nil, nil
	}
	dedicated := m.deps.DedicatedImageFs != nil && m.deps.DedicatedImageFs()
	rankFuncs(dedicated)[t.Signal](pods, stats)
	logger.V(2).Info("Pods ranked for eviction", "pods", klog.KObjSlice(pods))

	for _, pod := range pods {
		if IsCriticalPod(pod) {
			continue
		}
		grace := int64(1)
		if !t.Hard() {
			grace = m.cfg.MaxPodGracePeriodSeconds
			if pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds < grace {
				grace = *pod.Spec.TerminationGracePeriodSeconds
			}
		}
		msg := evictionMessage(res, pod, stats, ts, due, obs)
		m.deps.Recorder.Event(pod, corev1.EventTypeWarning, Reason, msg)
		logger.Info("Evicting pod", "pod", klog.KObj(pod), "message", msg)
		generation := pod.Generation
		err := m.deps.KillPod(pod, grace, func(st *corev1.PodStatus) {
			st.Phase, st.Reason, st.Message = corev1.PodFailed, Reason, msg
			setCondition(st, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: generation,
				Reason: corev1.PodReasonTerminationByKubelet, Message: msg,
			})
		})
		if err != nil {
			logger.Error(err, "Failed to evict pod", "pod", klog.KObj(pod))
		}
		return []*corev1.Pod{pod}, nil
	}
	logger.Info("Unable to evict any pod from the node")
	return nil, nil
}

// reclaimNodeLevel runs container and image GC for the disk signals, as
// upstream's (on a dedicated image filesystem, only imagefs pressure
// does), then reports whether every threshold is clear with its minimum
// reclaim.
func (m *manager) reclaimNodeLevel(ctx context.Context, sig thresholds.Signal) bool {
	logger := klog.FromContext(ctx)
	disk := signalResource[sig] == corev1.ResourceEphemeralStorage || signalResource[sig] == resourceInodes
	if !disk {
		return false
	}
	dedicated := m.deps.DedicatedImageFs != nil && m.deps.DedicatedImageFs()
	if dedicated && (sig == thresholds.NodeFsAvailable || sig == thresholds.NodeFsInodesFree) {
		return false
	}
	ran := false
	if m.deps.ContainerGC != nil {
		ran = true
		if err := m.deps.ContainerGC.DeleteAllUnusedContainers(ctx); err != nil {
			logger.Info("Container GC failed while reclaiming", "err", err)
		}
	}
	if m.deps.ImageGC != nil {
		ran = true
		if err := m.deps.ImageGC.DeleteUnusedImages(ctx); err != nil {
			logger.Info("Image GC failed while reclaiming", "err", err)
		}
	}
	if !ran {
		return false
	}
	summary, err := m.deps.Summary.Get(ctx, true)
	if err != nil {
		logger.Error(err, "Failed to get stats after reclaiming")
		return false
	}
	return len(met(m.cfg.Thresholds, allIndexes(m.cfg.Thresholds), observe(summary), true)) == 0
}

// evictionMessage is upstream's: the starved resource, the threshold and
// what was available, then each container above its request.
func evictionMessage(res corev1.ResourceName, pod *corev1.Pod, stats statsFunc, ts []Threshold, due []int, obs observations) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %v. ", res)
	for _, i := range due {
		if signalResource[ts[i].Signal] != res {
			continue
		}
		if o, ok := obs[ts[i].Signal]; ok {
			q := ts[i].quantity(o.capacity, false)
			fmt.Fprintf(&b, "Threshold quantity: %v, available: %v. ", q.String(), o.available.String())
			break
		}
	}
	s, ok := stats(pod)
	if !ok {
		return b.String()
	}
	containers := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
	for _, cs := range s.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case corev1.ResourceEphemeralStorage:
				if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
					q := bytesQ(*cs.Rootfs.UsedBytes + *cs.Logs.UsedBytes)
					usage = &q
				}
			case corev1.ResourceMemory:
				if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
					q := bytesQ(*cs.Memory.WorkingSetBytes)
					usage = &q
				}
			}
			if usage != nil && usage.Cmp(req) > 0 {
				fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %v. ", c.Name, usage.String(), req.String(), res)
			}
			break
		}
	}
	return b.String()
}

func setCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	c.LastTransitionTime = nowTime()
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

func equalConditions(a, b []corev1.NodeConditionType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
