package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/controllerutil"
	"github.com/k1s/k1s/controllers/history"
	"github.com/k1s/k1s/controllers/manager"
)

// Name is the controller's name in --controllers and its event source.
const Name = "daemonset-controller"

// Workers is the number of DaemonSets synced at once, upstream's
// --concurrent-daemonset-syncs default.
const Workers = 2

// BurstReplicas bounds the pods one sync creates, and those it deletes.
const BurstReplicas = 250

// Event reasons, as upstream's.
const (
	// SelectingAllReason: the DaemonSet's selector is empty.
	SelectingAllReason = "SelectingAll"
	// FailedDaemonPodReason: a daemon pod failed and is deleted.
	FailedDaemonPodReason = "FailedDaemonPod"
	// SucceededDaemonPodReason: a daemon pod succeeded and is deleted.
	SucceededDaemonPodReason = "SucceededDaemonPod"
)

const (
	// nodeNameIndex indexes daemon pods by the node they are for: their
	// spec.nodeName, or before binding the node their affinity requires.
	nodeNameIndex = "daemonset-target-node"
	// statusUpdateRetries is how often a failed status write is retried
	// within one sync, after reading the DaemonSet afresh.
	statusUpdateRetries = 1
	// Failed daemon pods are deleted with a per-node back-off between these
	// bounds (upstream's kube-controller-manager values).
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
	backoffGCInterval       = time.Minute
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller runs DaemonSets. Create it with New; Run may be called once.
type Controller struct {
	client        kubernetes.Interface
	recorder      record.EventRecorder
	podControl    controllerutil.PodControl
	history       history.Interface
	expectations  *controllerutil.ControllerExpectations
	clock         clock.WithTicker
	failedBackoff *flowcontrol.Backoff
	burstReplicas int

	dsLister   appslisters.DaemonSetLister
	revLister  appslisters.ControllerRevisionLister
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced

	// revisions and pods route their objects' events to DaemonSets.
	revisions, pods *controllerutil.OwnerRouter[*appsv1.DaemonSet]

	// queue holds DaemonSet keys; nodeQueue node names whose change may
	// concern some DaemonSets.
	queue     workqueue.TypedRateLimitingInterface[string]
	nodeQueue workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller acting through client, watching DaemonSets,
// ControllerRevisions, pods and nodes through factory (which the caller
// starts), recording events with recorder and timing with clk.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	dsInf := factory.Apps().V1().DaemonSets()
	revInf := factory.Apps().V1().ControllerRevisions()
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	h, err := history.New(client, revInf)
	if err != nil {
		return nil, fmt.Errorf("daemonset controller: %w", err)
	}
	c := &Controller{
		client:        client,
		recorder:      recorder,
		podControl:    controllerutil.NewPodControl(client, recorder),
		history:       h,
		expectations:  controllerutil.NewControllerExpectations(clk),
		clock:         clk,
		failedBackoff: flowcontrol.NewFakeBackOff(failedPodBackoffInitial, failedPodBackoffMax, clk),
		burstReplicas: BurstReplicas,
		dsLister:      dsInf.Lister(),
		revLister:     revInf.Lister(),
		podLister:     podInf.Lister(),
		podIndexer:    podInf.Informer().GetIndexer(),
		nodeLister:    nodeInf.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "daemonset", Clock: clk}),
		nodeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "daemonset-node-updates", Clock: clk}),
	}
	c.revisions = c.router()
	c.pods = c.router()
	c.pods.TerminatingIsDeleted = true
	c.pods.OnCreate = func(ds *appsv1.DaemonSet, _ metav1.Object) {
		c.expectations.CreationObserved(ds.Namespace + "/" + ds.Name)
	}
	c.pods.OnDelete = func(ds *appsv1.DaemonSet, _ metav1.Object) {
		c.expectations.DeletionObserved(ds.Namespace + "/" + ds.Name)
	}
	c.pods.OnUpdate = c.podChanged
	if err := controllerutil.AddPodControllerIndexer(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("daemonset controller: %w", err)
	}
	if err := addNodeNameIndex(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("daemonset controller: %w", err)
	}
	regs := make([]cache.ResourceEventHandlerRegistration, 0, 4)
	for _, h := range []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{
		{dsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.addDaemonSet,
			UpdateFunc: c.updateDaemonSet,
			DeleteFunc: c.deleteDaemonSet,
		}},
		{revInf.Informer(), c.revisions.Handlers()},
		{podInf.Informer(), c.pods.Handlers()},
		{nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.addNode,
			UpdateFunc: c.updateNode,
		}},
	} {
		reg, err := h.inf.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("daemonset controller: add event handler: %w", err)
		}
		regs = append(regs, reg)
	}
	for _, r := range regs {
		c.synced = append(c.synced, r.HasSynced)
	}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/daemon-set-controller, with Workers workers.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           Name,
		Aliases:        []string{"daemonset"},
		ServiceAccount: "daemon-set-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory, cc.EventRecorder(Name), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, Workers) })
			return nil
		},
	}
}

func addNodeNameIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[nodeNameIndex]; ok {
		return nil
	}
	err := inf.AddIndexers(cache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref == nil || ref.Kind != controllerKind.Kind {
			return nil, nil
		}
		node, err := targetNode(pod)
		if err != nil {
			return nil, nil
		}
		return []string{node}, nil
	}})
	if err != nil {
		if _, ok := inf.GetIndexer().GetIndexers()[nodeNameIndex]; ok {
			return nil
		}
		return fmt.Errorf("add pod node name index: %w", err)
	}
	return nil
}

// Run waits for the caches, then syncs DaemonSets with workers goroutines
// (and as many for node changes) until ctx is cancelled; it returns nil
// then.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	defer c.nodeQueue.ShutDown()
	logger.Info("Starting daemon sets controller")
	defer logger.Info("Shut down daemon sets controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("daemonset controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
		wg.Go(func() {
			for c.processNextNode(ctx) {
			}
		})
	}
	wg.Go(func() {
		t := c.clock.NewTicker(backoffGCInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				c.failedBackoff.GC()
			}
		}
	})
	<-ctx.Done()
	c.queue.ShutDown()
	c.nodeQueue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to sync daemon set, will retry", "daemonset", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) processNextNode(ctx context.Context) bool {
	name, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(name)
	if err := c.syncNode(ctx, name); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to process node update, will retry", "node", name)
		c.nodeQueue.AddRateLimited(name)
		return true
	}
	c.nodeQueue.Forget(name)
	return true
}

func (c *Controller) enqueue(ds *appsv1.DaemonSet) {
	c.queue.Add(ds.Namespace + "/" + ds.Name)
}

func (c *Controller) enqueueAfter(ds *appsv1.DaemonSet, d time.Duration) {
	c.queue.AddAfter(ds.Namespace+"/"+ds.Name, d)
}

func (c *Controller) addDaemonSet(obj any) {
	if ds, ok := obj.(*appsv1.DaemonSet); ok {
		c.enqueue(ds)
	}
}

func (c *Controller) updateDaemonSet(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1.DaemonSet)
	cur, ok2 := newObj.(*appsv1.DaemonSet)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != cur.UID {
		// Deleted and recreated between two events: forget the old one.
		c.deleteDaemonSet(cache.DeletedFinalStateUnknown{Key: old.Namespace + "/" + old.Name, Obj: old})
	}
	c.enqueue(cur)
}

func (c *Controller) deleteDaemonSet(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return
	}
	key := ds.Namespace + "/" + ds.Name
	c.expectations.DeleteExpectations(key)
	c.queue.Add(key)
}

// router routes the events of objects DaemonSets control (their
// ControllerRevisions, their pods) to the DaemonSets' queue.
func (c *Controller) router() *controllerutil.OwnerRouter[*appsv1.DaemonSet] {
	return &controllerutil.OwnerRouter[*appsv1.DaemonSet]{
		Kind: controllerKind.Kind,
		Get: func(namespace, name string) (*appsv1.DaemonSet, error) {
			return c.dsLister.DaemonSets(namespace).Get(name)
		},
		Matching: controllerutil.SelectorMatching(func(namespace string) ([]*appsv1.DaemonSet, error) {
			return c.dsLister.DaemonSets(namespace).List(labels.Everything())
		}, func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }),
		Enqueue: c.enqueue,
	}
}

// podChanged looks at a DaemonSet again once its pod that just became
// ready counts as available; the extra second absorbs clock granularity.
func (c *Controller) podChanged(ds *appsv1.DaemonSet, oldObj, curObj metav1.Object) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if ok1 && ok2 && !controllerutil.IsPodReady(old) && controllerutil.IsPodReady(cur) && ds.Spec.MinReadySeconds > 0 {
		c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}

func (c *Controller) addNode(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		c.nodeQueue.Add(node.Name)
	}
}

func (c *Controller) updateNode(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	// Only labels and taints decide eligibility.
	if apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) && apiequality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		return
	}
	c.nodeQueue.Add(cur.Name)
}

// syncNode enqueues the DaemonSets a change of node may concern: those
// that should now start a pod there, those whose pod there must go, and
// those with a pod there while reporting misscheduled pods.
func (c *Controller) syncNode(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list daemon sets: %w", err)
	}
	// Pods not yet bound count too: the node may have become ineligible
	// before the scheduler bound them.
	objs, err := c.podIndexer.ByIndex(nodeNameIndex, name)
	if err != nil {
		return fmt.Errorf("pods on node %s: %w", name, err)
	}
	onNode := map[string]bool{}
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == controllerKind.Kind {
			onNode[pod.Namespace+"/"+ref.Name] = true
		}
	}
	for _, ds := range all {
		shouldRun, shouldContinue := NodeShouldRunDaemonPod(logger, node, ds)
		scheduled := onNode[ds.Namespace+"/"+ds.Name]
		if (shouldRun && !scheduled) || (!shouldContinue && scheduled) || (scheduled && ds.Status.NumberMisscheduled > 0) {
			c.enqueue(ds)
		}
	}
	return nil
}
