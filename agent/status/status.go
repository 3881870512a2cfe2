// Package status is the one writer of pod status to the apiserver: it
// keeps the latest status the agent computed for each pod, preserves
// condition transition times and the start time, and patches the API
// object when the status changed; once a deleted pod's containers are gone
// it removes the pod object.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// MirrorResolver maps a static pod to the UID of its mirror pod in the
// apiserver (status of a static pod is written to its mirror).
type MirrorResolver func(pod *corev1.Pod) (types.UID, bool)

type entry struct {
	pod     *corev1.Pod
	status  corev1.PodStatus
	version uint64
	synced  uint64
	// deletable is set once the pod's containers and volumes are gone.
	deletable bool
}

// Manager caches pod statuses and writes them. Safe for concurrent use.
type Manager struct {
	client kubernetes.Interface
	clock  clock.WithTicker
	mirror MirrorResolver

	mu      sync.Mutex
	entries map[types.UID]*entry
	kick    chan struct{}
}

// New returns a status manager.
func New(client kubernetes.Interface, mirror MirrorResolver, clk clock.WithTicker) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{client: client, clock: clk, mirror: mirror, entries: map[types.UID]*entry{}, kick: make(chan struct{}, 1)}
}

// SetPodStatus records the status the agent computed for pod.
func (m *Manager) SetPodStatus(pod *corev1.Pod, st corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	old := pod.Status
	if e != nil {
		old = e.status
	}
	st = merge(old, st, m.clock.Now())
	keepTerminated(pod, old, &st)
	if e != nil && apiequality.Semantic.DeepEqual(e.status, st) {
		e.pod = pod
		return
	}
	if e == nil {
		e = &entry{}
		m.entries[pod.UID] = e
	}
	e.pod, e.status = pod, st
	e.version++
	m.poke()
}

// Reconcile is told that pod changed in the apiserver in what the agent
// does not act on (its status, say). When the status there no longer says
// what the agent last posted — the node-lifecycle controller marks a
// node's pods NotReady when the node stops reporting, and nothing the
// agent computes changes when the node is back — the status is posted
// again, as kubelet's status manager reconciles.
func (m *Manager) Reconcile(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		return
	}
	e.pod = pod
	switch {
	case e.synced != e.version:
		// A post is due anyway: make it now (a static pod's status
		// waits for its mirror pod, which may just have appeared).
		m.poke()
	case e.deletable:
	case !agrees(pod.Status, e.status):
		e.version++
		m.poke()
	}
}

// agrees reports whether the apiserver's status says what the agent's
// does: phase, addresses, condition statuses and each container's
// identity, state and readiness. Times are left out: the apiserver keeps
// them to the second.
func agrees(api, own corev1.PodStatus) bool {
	if api.Phase != own.Phase || api.PodIP != own.PodIP || api.HostIP != own.HostIP {
		return false
	}
	for _, c := range own.Conditions {
		found := false
		for _, a := range api.Conditions {
			if a.Type == c.Type {
				found = a.Status == c.Status
				break
			}
		}
		if !found {
			return false
		}
	}
	return containersAgree(api.InitContainerStatuses, own.InitContainerStatuses) &&
		containersAgree(api.ContainerStatuses, own.ContainerStatuses)
}

func containersAgree(api, own []corev1.ContainerStatus) bool {
	if len(api) != len(own) {
		return false
	}
	for i := range own {
		a, o := api[i], own[i]
		if a.Name != o.Name || a.ContainerID != o.ContainerID || a.Ready != o.Ready ||
			a.RestartCount != o.RestartCount || stateKind(a.State) != stateKind(o.State) {
			return false
		}
	}
	return true
}

func stateKind(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated"
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason
	}
	return ""
}

// GetPodStatus returns the cached status of a pod.
func (m *Manager) GetPodStatus(uid types.UID) (corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[uid]; ok {
		return *e.status.DeepCopy(), true
	}
	return corev1.PodStatus{}, false
}

// MarkDeletable says a terminated pod's resources are gone: its API
// object may be removed.
func (m *Manager) MarkDeletable(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		e = &entry{pod: pod, status: pod.Status}
		m.entries[pod.UID] = e
	}
	e.pod = pod
	e.deletable = true
	e.version++
	m.poke()
}

// Forget drops a pod the agent no longer tracks.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, uid)
}

func (m *Manager) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// keepTerminated keeps, in st, the old terminated state of each
// container that cannot run again (a pod whose restartPolicy is Never, an
// OnFailure pod's container that exited 0, a regular init container that
// succeeded), as kubelet's status manager refuses that transition and the
// apiserver rejects it: once the runtime has removed a finished pod's
// containers, a fresh status would report them waiting again, and a
// rejected status would keep a deleted pod from being removed.
func keepTerminated(pod *corev1.Pod, old corev1.PodStatus, st *corev1.PodStatus) {
	if pod == nil {
		return
	}
	policy := pod.Spec.RestartPolicy
	restartable := func(prev *corev1.ContainerStateTerminated) bool {
		switch policy {
		case corev1.RestartPolicyNever:
			return false
		case corev1.RestartPolicyOnFailure:
			return prev.ExitCode != 0
		}
		return true
	}
	fix := func(olds, news []corev1.ContainerStatus, init bool) {
		for i := range news {
			n := &news[i]
			if n.State.Terminated != nil {
				continue
			}
			for _, o := range olds {
				if o.Name != n.Name || o.State.Terminated == nil {
					continue
				}
				if init {
					if sidecar(pod, n.Name) || o.State.Terminated.ExitCode != 0 && restartable(o.State.Terminated) {
						break
					}
				} else if restartable(o.State.Terminated) {
					break
				}
				*n = *o.DeepCopy()
				break
			}
		}
	}
	fix(old.InitContainerStatuses, st.InitContainerStatuses, true)
	fix(old.ContainerStatuses, st.ContainerStatuses, false)
}

// sidecar reports whether name is a restartable init container of pod.
func sidecar(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// merge keeps the start time and the transition times of conditions whose
// status did not change.
func merge(old, st corev1.PodStatus, now time.Time) corev1.PodStatus {
	if old.StartTime != nil && !old.StartTime.IsZero() {
		st.StartTime = old.StartTime
	} else if st.StartTime == nil {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = metav1.NewTime(now)
		for _, oc := range old.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
			}
		}
	}
	// Terminal phases never go back, nor does the reason a pod was
	// failed for (DeadlineExceeded) go away.
	if old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed {
		st.Phase = old.Phase
		if st.Reason == "" && st.Message == "" {
			st.Reason, st.Message = old.Reason, old.Message
		}
	}
	return st
}

// Run writes changed statuses as they come and every 10 s retries what
// failed, until ctx is cancelled.
func (m *Manager) Run(ctx context.Context) error {
	t := m.clock.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.kick:
		case <-t.C():
		}
		m.syncAll(ctx)
	}
}

func (m *Manager) syncAll(ctx context.Context) {
	m.mu.Lock()
	var todo []types.UID
	for uid, e := range m.entries {
		if e.synced != e.version {
			todo = append(todo, uid)
		}
	}
	m.mu.Unlock()
	for _, uid := range todo {
		m.syncOne(ctx, uid)
	}
}

func (m *Manager) syncOne(ctx context.Context, uid types.UID) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	e, ok := m.entries[uid]
	if !ok {
		m.mu.Unlock()
		return
	}
	pod, st, version, deletable := e.pod, *e.status.DeepCopy(), e.version, e.deletable
	m.mu.Unlock()

	apiUID := pod.UID
	if m.mirror != nil {
		if mu, isStatic := m.mirror(pod); isStatic {
			if mu == "" {
				return // the mirror pod does not exist yet
			}
			apiUID = mu
		}
	}
	pods := m.client.CoreV1().Pods(pod.Namespace)
	if err := m.patch(ctx, pod, apiUID, st); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or replaced by a pod with the same name.
			m.Forget(uid)
			return
		}
		if !apierrors.IsInvalid(err) || !deletable || pod.DeletionTimestamp == nil {
			logger.V(2).Info("Failed to update pod status", "pod", klog.KObj(pod), "err", err)
			return
		}
		// A pod whose deletion is done goes even when its last status
		// is refused: no retry of that status would ever be accepted.
		logger.Info("The final status of a deleted pod was refused; removing the pod anyway", "pod", klog.KObj(pod), "err", err)
	}
	if deletable && pod.DeletionTimestamp != nil && apiUID == pod.UID {
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &apiUID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			logger.V(2).Info("Failed to delete pod", "pod", klog.KObj(pod), "err", err)
			return
		}
		logger.V(2).Info("Pod deleted", "pod", klog.KObj(pod))
		m.Forget(uid)
		return
	}
	m.mu.Lock()
	if e, ok := m.entries[uid]; ok && e.version == version {
		e.synced = version
	}
	m.mu.Unlock()
}

// patch writes status with a strategic merge patch guarded by the UID.
// The pod's and host's addresses replace the stored lists (a directive in
// each): merged by IP, a pod whose sandbox came back with a new address
// (a node restarted while cut off from its servers) would keep the old one
// first, which validation refuses.
func (m *Manager) patch(ctx context.Context, pod *corev1.Pod, uid types.UID, st corev1.PodStatus) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	var status map[string]any
	if err := json.Unmarshal(raw, &status); err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	for _, key := range []string{"podIPs", "hostIPs"} {
		if list, ok := status[key].([]any); ok && len(list) > 0 {
			status[key] = append(list, map[string]any{"$patch": "replace"})
		}
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status":   status,
	})
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	_, err = m.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}
