package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// Defaults of Config.
const (
	// DefaultTerminatedPodGCThreshold is kube-controller-manager's.
	DefaultTerminatedPodGCThreshold = 12500
	// DefaultCheckPeriod and DefaultQuarantineTime are upstream's
	// built-in values (not flags there).
	DefaultCheckPeriod    = 20 * time.Second
	DefaultQuarantineTime = 40 * time.Second
)

// Reason and message of the DisruptionTarget condition given to pods of
// deleted nodes.
const (
	DisruptionReason  = "DeletionByPodGC"
	DisruptionMessage = "PodGC: node no longer exists"
)

// evictedReason is the kubelet's status reason for pods it evicted.
const evictedReason = "Evicted"

// deleteWorkers bounds the deletions running at once.
const deleteWorkers = 16

// Config is the collector's configuration. Start from DefaultConfig.
type Config struct {
	// TerminatedPodGCThreshold is how many terminated pods may exist
	// before the oldest are deleted; 0 or less turns that off
	// (--terminated-pod-gc-threshold). Default 12500.
	TerminatedPodGCThreshold int
	// CheckPeriod is the time between collections. Default 20s.
	CheckPeriod time.Duration
	// QuarantineTime is how long a node must be missing before its pods
	// are deleted. Default 40s.
	QuarantineTime time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		TerminatedPodGCThreshold: DefaultTerminatedPodGCThreshold,
		CheckPeriod:              DefaultCheckPeriod,
		QuarantineTime:           DefaultQuarantineTime,
	}
}

// Validate checks c. The threshold takes any value, as upstream.
func (c Config) Validate() error {
	var errs []error
	if c.CheckPeriod <= 0 {
		errs = append(errs, fmt.Errorf("pod GC check period %s must be greater than zero", c.CheckPeriod))
	}
	if c.QuarantineTime < 0 {
		errs = append(errs, fmt.Errorf("pod GC quarantine time %s must not be negative", c.QuarantineTime))
	}
	return errors.Join(errs...)
}

// Controller is the pod garbage collector. Run may be called once.
type Controller struct {
	cfg    Config
	client kubernetes.Interface
	clock  clock.WithTicker

	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	podsSynced cache.InformerSynced
	nodeSynced cache.InformerSynced

	// missingSince is when each node that pods are bound to was first
	// seen missing. Only gc touches it.
	missingSince map[string]time.Time
}

// New builds the collector on the pod and node informers.
func New(cfg Config, client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, clk clock.WithTicker) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{
		cfg:          cfg,
		client:       client,
		clock:        clk,
		pods:         pods.Lister(),
		nodes:        nodes.Lister(),
		podsSynced:   pods.Informer().HasSynced,
		nodeSynced:   nodes.Informer().HasSynced,
		missingSince: map[string]time.Time{},
	}, nil
}

// Descriptor registers the collector with the manager as
// kube-controller-manager names it, acting as
// kube-system/pod-garbage-collector.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           "pod-garbage-collector",
		Aliases:        []string{"podgc"},
		ServiceAccount: "pod-garbage-collector",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(cfg, client, cc.InformerFactory.Core().V1().Pods(), cc.InformerFactory.Core().V1().Nodes(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(c.Run)
			return nil
		},
	}
}

// Run collects every CheckPeriod until ctx is cancelled.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.podsSynced, c.nodeSynced) {
		return nil
	}
	logger.Info("Starting pod garbage collector")
	defer logger.Info("Stopped pod garbage collector")
	t := c.clock.NewTicker(c.cfg.CheckPeriod)
	defer t.Stop()
	for {
		c.gc(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// gc is one collection.
func (c *Controller) gc(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing pods failed")
		return
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing nodes failed")
		return
	}
	if c.cfg.TerminatedPodGCThreshold > 0 {
		c.gcTerminated(ctx, pods)
	}
	c.gcTerminatingOutOfService(ctx, pods)
	c.gcOrphaned(ctx, pods, nodes)
	c.gcUnscheduledTerminating(ctx, pods)
}

func isTerminated(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodPending && p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodUnknown
}

func isEvicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == evictedReason
}

// sortForDeletion orders pods evicted first, then oldest first, then by name.
func sortForDeletion(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
			return ea
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// deleteAll force-deletes pods in parallel, each with cond if not nil.
func (c *Controller) deleteAll(ctx context.Context, pods []*corev1.Pod, cond *corev1.PodCondition, what string) {
	workqueue.ParallelizeUntil(ctx, deleteWorkers, len(pods), func(i int) {
		if err := c.failAndDelete(ctx, pods[i], cond); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Pod garbage collection failed", "pod", klog.KObj(pods[i]), "reason", what)
			return
		}
		klog.FromContext(ctx).Info("Forced deletion of pod succeeded", "pod", klog.KObj(pods[i]), "reason", what)
	})
}

// gcTerminated deletes the terminated pods beyond the threshold.
func (c *Controller) gcTerminated(ctx context.Context, pods []*corev1.Pod) {
	var terminated []*corev1.Pod
	for _, p := range pods {
		if isTerminated(p) {
			terminated = append(terminated, p)
		}
	}
	n := len(terminated) - c.cfg.TerminatedPodGCThreshold
	if n <= 0 {
		return
	}
	klog.FromContext(ctx).Info("Garbage collecting terminated pods", "count", n, "threshold", c.cfg.TerminatedPodGCThreshold)
	sortForDeletion(terminated)
	c.deleteAll(ctx, terminated[:n], nil, "terminated")
}

// gcTerminatingOutOfService deletes terminating pods on NotReady nodes that
// carry the out-of-service taint.
func (c *Controller) gcTerminatingOutOfService(ctx context.Context, pods []*corev1.Pod) {
	var victims []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		node, err := c.nodes.Get(p.Spec.NodeName)
		if err != nil {
			continue
		}
		if !nodeReady(node) && hasTaintKey(node, corev1.TaintNodeOutOfService) {
			victims = append(victims, p)
		}
	}
	if len(victims) == 0 {
		return
	}
	sortForDeletion(victims)
	c.deleteAll(ctx, victims, nil, "terminating on an out-of-service node")
}

// gcOrphaned deletes the pods of nodes that have been missing for the
// quarantine time and that the apiserver confirms are gone.
func (c *Controller) gcOrphaned(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	logger := klog.FromContext(ctx)
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	now := c.clock.Now()
	referenced := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || exists[p.Spec.NodeName] {
			continue
		}
		referenced[p.Spec.NodeName] = true
		if _, ok := c.missingSince[p.Spec.NodeName]; !ok {
			c.missingSince[p.Spec.NodeName] = now
		}
	}
	gone := map[string]bool{}
	for name, since := range c.missingSince {
		if !referenced[name] {
			delete(c.missingSince, name)
			continue
		}
		if now.Sub(since) < c.cfg.QuarantineTime {
			continue
		}
		delete(c.missingSince, name)
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[name] = true
		case err != nil:
			logger.Error(err, "Checking whether a node exists failed", "node", name)
		}
	}
	if len(gone) == 0 {
		return
	}
	var orphans []*corev1.Pod
	for _, p := range pods {
		if gone[p.Spec.NodeName] {
			logger.V(2).Info("Found orphaned pod bound to a deleted node", "pod", klog.KObj(p), "node", p.Spec.NodeName)
			orphans = append(orphans, p)
		}
	}
	cond := &corev1.PodCondition{
		Type:    corev1.DisruptionTarget,
		Status:  corev1.ConditionTrue,
		Reason:  DisruptionReason,
		Message: DisruptionMessage,
	}
	c.deleteAll(ctx, orphans, cond, "orphaned")
}

// gcUnscheduledTerminating deletes terminating pods bound to no node.
func (c *Controller) gcUnscheduledTerminating(ctx context.Context, pods []*corev1.Pod) {
	var victims []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			victims = append(victims, p)
		}
	}
	c.deleteAll(ctx, victims, nil, "unscheduled and terminating")
}

// failAndDelete sets a pod that has not terminated Failed (with cond, if
// given) through the status subresource, then deletes it with grace 0.
func (c *Controller) failAndDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition) error {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		status := map[string]any{"phase": corev1.PodFailed, "observedGeneration": pod.Generation}
		if cond != nil {
			next := *cond
			next.ObservedGeneration = pod.Generation
			next.LastTransitionTime = metav1.NewTime(c.clock.Now())
			if old := podCondition(pod, cond.Type); old != nil && old.Status == next.Status {
				next.LastTransitionTime = old.LastTransitionTime
			}
			status["conditions"] = []corev1.PodCondition{next}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": status})
		if err != nil {
			return fmt.Errorf("status patch for pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if _, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("set pod %s/%s Failed: %w", pod.Namespace, pod.Name, err)
		}
	}
	opts := *metav1.NewDeleteOptions(0)
	opts.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))
	if err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaintKey(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
