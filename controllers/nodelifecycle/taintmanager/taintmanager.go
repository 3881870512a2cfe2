package taintmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/internal/nodeautonomy"
)

// NodeNameIndex is the pod informer index by spec.nodeName that
// AddNodeNameIndex installs (the name upstream's controllers share).
const NodeNameIndex = "spec.nodeName"

// AddNodeNameIndex indexes the pod informer by spec.nodeName unless an
// index of that name is already there. Call it before the informer starts.
func AddNodeNameIndex(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[NodeNameIndex]; ok {
		return nil
	}
	err := informer.AddIndexers(cache.Indexers{NodeNameIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}})
	if err != nil {
		return fmt.Errorf("index pods by node name: %w", err)
	}
	return nil
}

// PodsOnNode lists the pods of indexer (indexed by AddNodeNameIndex) bound
// to node. The pods are the cache's: do not modify them.
func PodsOnNode(indexer cache.Indexer, node string) ([]*corev1.Pod, error) {
	objs, err := indexer.ByIndex(NodeNameIndex, node)
	if err != nil {
		return nil, fmt.Errorf("pods on node %s: %w", node, err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

const (
	// workers handle node and pod updates.
	workers = 4
	// deleteAttempts is how often a deletion is tried before giving up
	// until the next update of the pod or node.
	deleteAttempts = 5
)

// podItem is a pod update; nodeName is the node it was seen on.
type podItem struct {
	namespace, name, nodeName string
}

// Manager evicts pods from NoExecute-tainted nodes. Run may be called once.
type Manager struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.WithDelayedExecution

	pods       corelisters.PodLister
	podIndex   cache.Indexer
	nodes      corelisters.NodeLister
	podsSynced cache.InformerSynced
	nodeSynced cache.InformerSynced

	nodeQueue workqueue.TypedRateLimitingInterface[string]
	podQueue  workqueue.TypedRateLimitingInterface[podItem]

	// evictions holds the scheduled deletions by "namespace/name".
	evictions *timedQueue

	// mu serialises the decisions about one pod (made from node and pod
	// updates) and guards tainted.
	mu sync.Mutex
	// tainted maps node names to their NoExecute taints.
	tainted map[string][]corev1.Taint

	// ctx is Run's context, for the deletions the timers start.
	ctx context.Context
}

// New builds the manager on the pod and node informers (adding the
// spec.nodeName index to the pod informer). recorder reports the
// TaintManagerEviction events (upstream's component is
// "taint-eviction-controller").
func New(client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, recorder record.EventRecorder, clk clock.WithDelayedExecution) (*Manager, error) {
	if err := AddNodeNameIndex(pods.Informer()); err != nil {
		return nil, err
	}
	m := &Manager{
		client:     client,
		recorder:   recorder,
		clock:      clk,
		pods:       pods.Lister(),
		podIndex:   pods.Informer().GetIndexer(),
		nodes:      nodes.Lister(),
		podsSynced: pods.Informer().HasSynced,
		nodeSynced: nodes.Informer().HasSynced,
		nodeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "noexec_taint_node"}),
		podQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[podItem](),
			workqueue.TypedRateLimitingQueueConfig[podItem]{Name: "noexec_taint_pod"}),
		tainted: map[string][]corev1.Taint{},
		ctx:     context.Background(),
	}
	m.evictions = newTimedQueue(clk, m.evict)
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.podUpdated(nil, asPod(obj)) },
		UpdateFunc: func(old, obj any) { m.podUpdated(asPod(old), asPod(obj)) },
		DeleteFunc: func(obj any) { m.podUpdated(asPod(obj), nil) },
	}); err != nil {
		return nil, fmt.Errorf("taint manager: pod handler: %w", err)
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.nodeUpdated(nil, asNode(obj)) },
		UpdateFunc: func(old, obj any) { m.nodeUpdated(asNode(old), asNode(obj)) },
		DeleteFunc: func(obj any) { m.nodeUpdated(asNode(obj), nil) },
	}); err != nil {
		return nil, fmt.Errorf("taint manager: node handler: %w", err)
	}
	return m, nil
}

func asPod(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

func asNode(obj any) *corev1.Node {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	n, _ := obj.(*corev1.Node)
	return n
}

// Run handles updates until ctx is cancelled; pending deletions are
// cancelled then, and Run waits for the ones in progress.
func (m *Manager) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	m.ctx = ctx
	var wg sync.WaitGroup
	defer func() {
		m.nodeQueue.ShutDown()
		m.podQueue.ShutDown()
		wg.Wait()
		m.evictions.stop()
		logger.Info("Stopped taint manager")
	}()
	if !cache.WaitForCacheSync(ctx.Done(), m.podsSynced, m.nodeSynced) {
		return nil
	}
	logger.Info("Starting taint manager")
	for range workers {
		wg.Go(func() {
			for m.processNode(ctx) {
			}
		})
		wg.Go(func() {
			for m.processPod(ctx) {
			}
		})
	}
	<-ctx.Done()
	return nil
}

func (m *Manager) podUpdated(old, cur *corev1.Pod) {
	var item podItem
	switch {
	case cur != nil:
		item = podItem{cur.Namespace, cur.Name, cur.Spec.NodeName}
	case old != nil:
		item = podItem{old.Namespace, old.Name, old.Spec.NodeName}
	default:
		return
	}
	if old != nil && cur != nil && old.Spec.NodeName == cur.Spec.NodeName &&
		apiequality.Semantic.DeepEqual(old.Spec.Tolerations, cur.Spec.Tolerations) {
		return
	}
	m.podQueue.Add(item)
}

func (m *Manager) nodeUpdated(old, cur *corev1.Node) {
	switch {
	case cur != nil:
		if old != nil && apiequality.Semantic.DeepEqual(evictingTaints(old), evictingTaints(cur)) {
			return
		}
		m.nodeQueue.Add(cur.Name)
	case old != nil:
		m.nodeQueue.Add(old.Name)
	}
}

func (m *Manager) processNode(ctx context.Context) bool {
	name, quit := m.nodeQueue.Get()
	if quit {
		return false
	}
	defer m.nodeQueue.Done(name)
	if err := m.syncNode(ctx, name); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Taint manager failed to handle node", "node", name)
		m.nodeQueue.AddRateLimited(name)
		return true
	}
	m.nodeQueue.Forget(name)
	return true
}

func (m *Manager) processPod(ctx context.Context) bool {
	item, quit := m.podQueue.Get()
	if quit {
		return false
	}
	defer m.podQueue.Done(item)
	if err := m.syncPod(ctx, item); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Taint manager failed to handle pod", "pod", klog.KRef(item.namespace, item.name))
		m.podQueue.AddRateLimited(item)
		return true
	}
	m.podQueue.Forget(item)
	return true
}

// syncNode records the node's NoExecute taints and decides for each of
// its pods.
func (m *Manager) syncNode(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	node, err := m.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		m.mu.Lock()
		delete(m.tainted, name)
		m.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	taints := evictingTaints(node)
	m.mu.Lock()
	if len(taints) == 0 {
		delete(m.tainted, name)
	} else {
		m.tainted[name] = taints
	}
	m.mu.Unlock()

	pods, err := PodsOnNode(m.podIndex, name)
	if err != nil {
		return err
	}
	now := m.clock.Now()
	for _, pod := range pods {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if len(taints) == 0 {
			m.mu.Lock()
			m.cancel(key)
			m.mu.Unlock()
			continue
		}
		logger.V(4).Info("Checking pod on NoExecute-tainted node", "pod", klog.KObj(pod), "node", name)
		m.decide(ctx, key, pod.Spec.Tolerations, taints, now)
	}
	return nil
}

// syncPod decides for one pod whose node or tolerations changed.
func (m *Manager) syncPod(ctx context.Context, item podItem) error {
	key := types.NamespacedName{Namespace: item.namespace, Name: item.name}
	pod, err := m.pods.Pods(item.namespace).Get(item.name)
	if apierrors.IsNotFound(err) {
		m.mu.Lock()
		m.cancel(key)
		m.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	// A newer update for the pod on another node is queued.
	if pod.Spec.NodeName != item.nodeName || pod.Spec.NodeName == "" {
		return nil
	}
	m.mu.Lock()
	taints, ok := m.tainted[pod.Spec.NodeName]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	m.decide(ctx, key, pod.Spec.Tolerations, taints, m.clock.Now())
	return nil
}

// decide schedules, keeps or cancels the deletion of the pod key with
// tolerations on a node with the NoExecute taints, at now.
func (m *Manager) decide(ctx context.Context, key types.NamespacedName, tolerations []corev1.Toleration, taints []corev1.Taint, now time.Time) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(taints) == 0 {
		m.cancel(key)
		return
	}
	used, all := matchingTolerations(logger, taints, tolerations)
	if !all {
		logger.V(2).Info("Pod does not tolerate every NoExecute taint of its node, deleting it", "pod", key)
		m.cancel(key)
		m.evictions.add(key.String(), now, now)
		return
	}
	wait := minTolerationTime(used)
	if wait < 0 {
		logger.V(4).Info("Pod tolerates the NoExecute taints of its node forever", "pod", key)
		m.cancel(key)
		return
	}
	start := now
	if s := m.evictions.get(key.String()); s != nil {
		// The deletion already scheduled started the toleration period
		// earlier; it stands.
		if s.created.Before(now) {
			return
		}
		start = s.created
		m.cancel(key)
	}
	logger.V(2).Info("Scheduling deletion of pod tolerating NoExecute taints for a while", "pod", key, "after", wait)
	m.evictions.add(key.String(), start, start.Add(wait))
}

// cancel drops the pod's scheduled deletion, with an event when one was
// pending. m.mu is held.
func (m *Manager) cancel(key types.NamespacedName) {
	if m.evictions.cancel(key.String()) {
		m.event(key, "Cancelling deletion of Pod %s")
	}
}

func (m *Manager) event(key types.NamespacedName, format string) {
	if m.recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: key.Namespace, Name: key.Name}
	m.recorder.Eventf(ref, corev1.EventTypeNormal, "TaintManagerEviction", format, key.String())
}

// evict deletes the pod "namespace/name", retrying a few times.
func (m *Manager) evict(k string, _ time.Time) {
	ctx := m.ctx
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	logger.Info("Deleting pod for a NoExecute taint", "pod", key)
	m.event(key, "Marking for deletion Pod %s")
	for attempt := range deleteAttempts {
		if err = m.deletePod(ctx, ns, name); err == nil || ctx.Err() != nil {
			break
		}
		if attempt < deleteAttempts-1 {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Taint manager could not delete pod", "pod", key)
	}
}

// deletePod marks the pod with the DisruptionTarget condition and deletes
// it; a pod that is gone already is fine.
func (m *Manager) deletePod(ctx context.Context, ns, name string) error {
	pod, err := m.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", ns, name, err)
	}
	if patch := disruptionPatch(pod, metav1.NewTime(m.clock.Now())); patch != nil {
		if _, err := m.client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("set DisruptionTarget condition of pod %s/%s: %w", ns, name, err)
		}
	}
	err = m.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// Reason and message of the DisruptionTarget condition the manager sets.
const (
	DisruptionReason  = "DeletionByTaintManager"
	DisruptionMessage = "Taint manager: deleting due to NoExecute taint"
)

// disruptionPatch is the status patch adding the DisruptionTarget
// condition to pod (with a UID precondition), or nil if it is there.
func disruptionPatch(pod *corev1.Pod, now metav1.Time) []byte {
	cond := corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		Status:             corev1.ConditionTrue,
		ObservedGeneration: pod.Generation,
		Reason:             DisruptionReason,
		Message:            DisruptionMessage,
		LastTransitionTime: now,
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return nil
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	return patch
}

// evictingTaints are the NoExecute taints of node that evict its pods: on
// a node marked autonomous (internal/nodeautonomy) the node lifecycle
// controller's not-ready and unreachable taints are left out, so the pods
// of an edge node cut off from the server are kept (OpenYurt's autonomy).
func evictingTaints(node *corev1.Node) []corev1.Taint {
	return nodeautonomy.EvictingTaints(node, noExecuteTaints(node.Spec.Taints))
}

func noExecuteTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// matchingTolerations returns, for each taint, the first toleration that
// tolerates it, and whether every taint is tolerated.
func matchingTolerations(logger klog.Logger, taints []corev1.Taint, tolerations []corev1.Toleration) ([]corev1.Toleration, bool) {
	var used []corev1.Toleration
	for i := range taints {
		found := false
		for j := range tolerations {
			// Numeric comparison operators are an alpha feature upstream, off by default.
			if tolerations[j].ToleratesTaint(logger, &taints[i], false) {
				used = append(used, tolerations[j])
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return used, true
}

// minTolerationTime is the shortest tolerationSeconds of tolerations: 0 if
// there are none or one is not positive, -1 if none is bounded (forever).
func minTolerationTime(tolerations []corev1.Toleration) time.Duration {
	if len(tolerations) == 0 {
		return 0
	}
	least := int64(math.MaxInt64)
	for _, t := range tolerations {
		if t.TolerationSeconds == nil {
			continue
		}
		if *t.TolerationSeconds <= 0 {
			return 0
		}
		least = min(least, *t.TolerationSeconds)
	}
	if least == math.MaxInt64 {
		return -1
	}
	return time.Duration(least) * time.Second
}
