package nodelifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/nodelifecycle/taintmanager"
)

// Names under which the controller reports events, as upstream.
const (
	// Component is the node lifecycle controller's event source.
	Component = "node-controller"
	// TaintManagerComponent is the taint manager's event source.
	TaintManagerComponent = "taint-eviction-controller"
)

const (
	// taintingPeriod is how often the zones' taint queues are drained.
	taintingPeriod = 100 * time.Millisecond
	// nodeWorkers keep NoSchedule taints and labels in line with nodes;
	// podWorkers mark pods bound to unhealthy nodes not ready.
	nodeWorkers = 8
	podWorkers  = 4
	// healthWorkers check node heartbeats in parallel.
	healthWorkers = 8
)

// Clock is the time source: tickers for the periodic passes and delayed
// functions for the taint manager's timers. clock.RealClock and the fake
// clock of k8s.io/utils/clock/testing satisfy it.
type Clock = clock.WithTickerAndDelayedExecution

// Controller is the node lifecycle controller. Run may be called once.
type Controller struct {
	cfg      Config
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    Clock
	taints   *taintmanager.Manager

	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseLister
	pods     corelisters.PodLister
	podIndex cache.Indexer
	synced   []cache.InformerSynced

	health *healthMap

	// known and zoneStates belong to the monitor pass.
	known      map[string]*corev1.Node
	zoneStates map[string]ZoneState

	// zoneMu guards tainters, the per-zone NoExecute taint queues.
	zoneMu   sync.Mutex
	tainters map[string]*tainter

	// retry holds the names of nodes whose pods could not all be marked
	// not ready; the next pass tries again.
	retry sync.Map

	nodeQueue workqueue.TypedRateLimitingInterface[string]
	podQueue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// New builds the controller on factory's node, lease, pod and daemon set
// informers (the factory is started by the caller). recorder returns event
// recorders by component (Component and TaintManagerComponent).
func New(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder func(component string) record.EventRecorder, clk Clock) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	nodeInf := factory.Core().V1().Nodes()
	podInf := factory.Core().V1().Pods()
	leaseInf := factory.Coordination().V1().Leases()
	// Upstream watches daemon sets without acting on them any more: their
	// pods carry tolerations for the node controller's taints.
	dsInf := factory.Apps().V1().DaemonSets()

	tm, err := taintmanager.New(client, podInf, nodeInf, recorder(TaintManagerComponent), clk)
	if err != nil {
		return nil, fmt.Errorf("node lifecycle controller: %w", err)
	}
	c := &Controller{
		cfg:        cfg,
		client:     client,
		recorder:   recorder(Component),
		clock:      clk,
		taints:     tm,
		nodes:      nodeInf.Lister(),
		leases:     leaseInf.Lister(),
		pods:       podInf.Lister(),
		podIndex:   podInf.Informer().GetIndexer(),
		synced:     []cache.InformerSynced{nodeInf.Informer().HasSynced, podInf.Informer().HasSynced, leaseInf.Informer().HasSynced, dsInf.Informer().HasSynced},
		health:     &healthMap{m: map[string]*nodeHealth{}},
		known:      map[string]*corev1.Node{},
		zoneStates: map[string]ZoneState{},
		tainters:   map[string]*tainter{},
		nodeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "node_lifecycle_controller"}),
		podQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "node_lifecycle_controller_pods"}),
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				c.podUpdated(nil, p)
			}
		},
		UpdateFunc: func(old, obj any) {
			o, _ := old.(*corev1.Pod)
			if p, ok := obj.(*corev1.Pod); ok {
				c.podUpdated(o, p)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("node lifecycle controller: pod handler: %w", err)
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				c.nodeQueue.Add(n.Name)
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				c.nodeQueue.Add(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				c.retry.Delete(n.Name)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("node lifecycle controller: node handler: %w", err)
	}
	return c, nil
}

// Descriptor registers the controller with the manager as
// kube-controller-manager names it, acting as kube-system/node-controller.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           "node-lifecycle-controller",
		Aliases:        []string{"nodelifecycle"},
		ServiceAccount: "node-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			var clk Clock
			if cc.Clock != nil {
				var ok bool
				if clk, ok = cc.Clock.(Clock); !ok {
					return fmt.Errorf("node lifecycle controller: the manager's clock %T has no AfterFunc", cc.Clock)
				}
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(cfg, client, cc.InformerFactory, cc.EventRecorder, clk)
			if err != nil {
				return err
			}
			cc.Go(c.Run)
			return nil
		},
	}
}

// Run monitors nodes until ctx is cancelled, then waits for its workers.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	var tmErr error
	defer func() {
		c.nodeQueue.ShutDown()
		c.podQueue.ShutDown()
		wg.Wait()
		logger.Info("Stopped node lifecycle controller")
	}()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return nil
	}
	logger.Info("Starting node lifecycle controller", "monitorPeriod", c.cfg.NodeMonitorPeriod, "gracePeriod", c.cfg.NodeMonitorGracePeriod)
	wg.Go(func() { tmErr = c.taints.Run(ctx) })
	for range nodeWorkers {
		wg.Go(func() {
			for c.processNode(ctx) {
			}
		})
	}
	for range podWorkers {
		wg.Go(func() {
			for c.processPod(ctx) {
			}
		})
	}
	wg.Go(func() { c.every(ctx, taintingPeriod, c.noExecuteTaintingPass) })
	wg.Go(func() {
		c.every(ctx, c.cfg.NodeMonitorPeriod, func(ctx context.Context) {
			if err := c.monitorNodeHealth(ctx); err != nil {
				logger.Error(err, "Monitoring node health failed")
			}
		})
	})
	<-ctx.Done()
	c.nodeQueue.ShutDown()
	c.podQueue.ShutDown()
	wg.Wait()
	return tmErr
}

// every runs fn now and then every period until ctx is cancelled.
func (c *Controller) every(ctx context.Context, period time.Duration, fn func(context.Context)) {
	t := c.clock.NewTicker(period)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (c *Controller) processNode(ctx context.Context) bool {
	name, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(name)
	err := c.syncNoScheduleTaints(ctx, name)
	if err == nil {
		err = c.reconcileNodeLabels(ctx, name)
	}
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing node taints and labels failed", "node", name)
		c.nodeQueue.AddRateLimited(name)
		return true
	}
	c.nodeQueue.Forget(name)
	return true
}

// podUpdated queues pods newly bound to a node: if the node is unhealthy
// they are marked not ready at once.
func (c *Controller) podUpdated(old, cur *corev1.Pod) {
	if cur.Spec.NodeName != "" && (old == nil || old.Spec.NodeName != cur.Spec.NodeName) {
		c.podQueue.Add(types.NamespacedName{Namespace: cur.Namespace, Name: cur.Name})
	}
}

func (c *Controller) processPod(ctx context.Context) bool {
	key, quit := c.podQueue.Get()
	if quit {
		return false
	}
	defer c.podQueue.Done(key)
	if err := c.syncPod(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Marking pod not ready failed, will retry", "pod", key, "err", err)
		c.podQueue.AddRateLimited(key)
		return true
	}
	c.podQueue.Forget(key)
	return true
}

// syncPod marks the pod not ready if the controller last saw its node's
// Ready condition other than True.
func (c *Controller) syncPod(ctx context.Context, key types.NamespacedName) error {
	pod, err := c.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	h := c.health.get(pod.Spec.NodeName)
	if h == nil {
		// Not seen by a monitor pass yet (or gone).
		return nil
	}
	if _, err := c.nodes.Get(pod.Spec.NodeName); err != nil {
		return fmt.Errorf("node %s of pod %s: %w", pod.Spec.NodeName, key, err)
	}
	ready := nodeCondition(h.status, corev1.NodeReady)
	if ready == nil || ready.Status == corev1.ConditionTrue {
		return nil
	}
	return c.markPodsNotReady(ctx, []*corev1.Pod{pod}, pod.Spec.NodeName)
}
