// Package pods holds the agent's desired pods: the pods bound to this node
// in the apiserver and the static pods from the manifest directory, merged
// into one set; static pods get mirror pods in the apiserver.
package pods

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Annotations of static and mirror pods (upstream's names).
const (
	AnnotationSource = "kubernetes.io/config.source"
	AnnotationHash   = "kubernetes.io/config.hash"
	AnnotationMirror = "kubernetes.io/config.mirror"
	SourceFile       = "file"
	SourceAPI        = "api"
)

// IsStatic reports whether pod came from the manifest directory.
func IsStatic(pod *corev1.Pod) bool { return pod.Annotations[AnnotationSource] == SourceFile }

// IsMirror reports whether pod is the apiserver's mirror of a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationMirror]
	return ok
}

// UpdateType says how a pod changed.
type UpdateType int

// Update types.
const (
	Added UpdateType = iota
	Updated
	Removed
	// Reconciled: only the pod's status (or other fields the agent does not
	// act on) changed in the apiserver. The agent does not sync the pod
	// for it; it checks that the status there is still its own (as
	// kubelet's config source sends RECONCILE rather than UPDATE).
	Reconciled
)

// Update is a change of one desired pod.
type Update struct {
	Type UpdateType
	Pod  *corev1.Pod
}

// Manager merges pod sources. Safe for concurrent use.
type Manager struct {
	nodeName string
	client   kubernetes.Interface
	updates  chan Update

	mu      sync.Mutex
	api     map[types.UID]*corev1.Pod // API pods that are not mirrors
	static  map[types.UID]*corev1.Pod
	mirrors map[string]*corev1.Pod // by namespace/name
}

// NewManager returns a pod manager sending changes on its Updates channel.
func NewManager(nodeName string, client kubernetes.Interface) *Manager {
	return &Manager{
		nodeName: nodeName, client: client, updates: make(chan Update, 1024),
		api: map[types.UID]*corev1.Pod{}, static: map[types.UID]*corev1.Pod{}, mirrors: map[string]*corev1.Pod{},
	}
}

// Updates delivers pod changes to the sync loop.
func (m *Manager) Updates() <-chan Update { return m.updates }

// Pods returns the desired pods, sorted by creation time.
func (m *Manager) Pods() []*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(m.api)+len(m.static))
	for _, p := range m.api {
		out = append(out, p)
	}
	for _, p := range m.static {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}

// Get returns a desired pod by UID.
func (m *Manager) Get(uid types.UID) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.api[uid]; ok {
		return p, true
	}
	p, ok := m.static[uid]
	return p, ok
}

// MirrorUID returns the mirror pod's UID of a static pod ("" while it has
// none); ok is false for pods that are not static.
func (m *Manager) MirrorUID(pod *corev1.Pod) (types.UID, bool) {
	if !IsStatic(pod) {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if mp, ok := m.mirrors[pod.Namespace+"/"+pod.Name]; ok && mp.Annotations[AnnotationMirror] == pod.Annotations[AnnotationHash] {
		return mp.UID, true
	}
	return "", true
}

func (m *Manager) send(t UpdateType, pod *corev1.Pod) { m.updates <- Update{Type: t, Pod: pod} }

// differSemantically reports whether the agent must act on the change
// from old to pod: its spec, labels, annotations or deletion changed (as
// kubelet's config source decides between UPDATE and RECONCILE).
func differSemantically(old, pod *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(old.Spec, pod.Spec) ||
		!apiequality.Semantic.DeepEqual(old.Labels, pod.Labels) ||
		!apiequality.Semantic.DeepEqual(old.Annotations, pod.Annotations) ||
		!apiequality.Semantic.DeepEqual(old.DeletionTimestamp, pod.DeletionTimestamp) ||
		!apiequality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds)
}

// SetAPIPod records an added or changed pod from the apiserver.
func (m *Manager) SetAPIPod(pod *corev1.Pod) {
	m.mu.Lock()
	if IsMirror(pod) {
		key := pod.Namespace + "/" + pod.Name
		m.mirrors[key] = pod
		var static *corev1.Pod
		for _, sp := range m.static {
			if sp.Namespace+"/"+sp.Name == key && sp.Annotations[AnnotationHash] == pod.Annotations[AnnotationMirror] {
				static = sp
			}
		}
		m.mu.Unlock()
		if static != nil {
			// The static pod's status lives in its mirror: the status
			// manager checks it (and posts at once to a new mirror).
			withStatus := static.DeepCopy()
			withStatus.Status = pod.Status
			m.send(Reconciled, withStatus)
		}
		return
	}
	old, existed := m.api[pod.UID]
	m.api[pod.UID] = pod
	m.mu.Unlock()
	switch {
	case existed && !differSemantically(old, pod):
		m.send(Reconciled, pod)
	case existed:
		m.send(Updated, pod)
	default:
		m.send(Added, pod)
	}
}

// DeleteAPIPod records a pod gone from the apiserver.
func (m *Manager) DeleteAPIPod(pod *corev1.Pod) {
	m.mu.Lock()
	if IsMirror(pod) {
		if cur, ok := m.mirrors[pod.Namespace+"/"+pod.Name]; ok && cur.UID == pod.UID {
			delete(m.mirrors, pod.Namespace+"/"+pod.Name)
		}
		m.mu.Unlock()
		return
	}
	_, existed := m.api[pod.UID]
	delete(m.api, pod.UID)
	m.mu.Unlock()
	if existed {
		m.send(Removed, pod)
	}
}

// SetStaticPods replaces the set of static pods.
func (m *Manager) SetStaticPods(pods []*corev1.Pod) {
	m.mu.Lock()
	want := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		want[p.UID] = p
	}
	var added, removed []*corev1.Pod
	for uid, p := range want {
		if _, ok := m.static[uid]; !ok {
			added = append(added, p)
		}
	}
	for uid, p := range m.static {
		if _, ok := want[uid]; !ok {
			removed = append(removed, p)
		}
	}
	m.static = want
	m.mu.Unlock()
	for _, p := range added {
		m.send(Added, p)
	}
	for _, p := range removed {
		m.send(Removed, p)
	}
}

// SyncMirrors creates, replaces or deletes mirror pods so each static pod
// has exactly one up-to-date mirror. It needs the apiserver; errors are
// retried on the next call.
func (m *Manager) SyncMirrors(ctx context.Context, nodeUID types.UID) error {
	m.mu.Lock()
	statics := map[string]*corev1.Pod{}
	for _, p := range m.static {
		statics[p.Namespace+"/"+p.Name] = p
	}
	mirrors := map[string]*corev1.Pod{}
	for k, p := range m.mirrors {
		mirrors[k] = p
	}
	m.mu.Unlock()

	var errs []error
	for key, mp := range mirrors {
		sp, ok := statics[key]
		if ok && mp.Annotations[AnnotationMirror] == sp.Annotations[AnnotationHash] && mp.DeletionTimestamp == nil {
			continue
		}
		uid := mp.UID
		err := m.client.CoreV1().Pods(mp.Namespace).Delete(ctx, mp.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete stale mirror pod %s: %w", key, err))
		}
	}
	for key, sp := range statics {
		if mp, ok := mirrors[key]; ok && mp.Annotations[AnnotationMirror] == sp.Annotations[AnnotationHash] && mp.DeletionTimestamp == nil {
			continue
		}
		mirror := sp.DeepCopy()
		mirror.UID = ""
		mirror.ResourceVersion = ""
		mirror.Status = corev1.PodStatus{}
		mirror.Annotations[AnnotationMirror] = sp.Annotations[AnnotationHash]
		if nodeUID != "" {
			mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: m.nodeName, UID: nodeUID, Controller: ptrTrue()}}
		}
		_, err := m.client.CoreV1().Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create mirror pod %s: %w", key, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Created mirror pod", "pod", klog.KObj(mirror))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

func ptrTrue() *bool { b := true; return &b }
