package deployment

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/controllerutil"
	"github.com/k1s/k1s/controllers/manager"
)

// Name is the controller's name in --controllers and in events.
const Name = "deployment-controller"

// DefaultConcurrentSyncs is the default of Config.ConcurrentSyncs.
const DefaultConcurrentSyncs = 5

// maxRetries is how often a failing Deployment is retried (rate-limited)
// before it waits for the next event.
const maxRetries = 15

var (
	controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	rsKind         = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

// Config is the controller's configuration.
type Config struct {
	// ConcurrentSyncs is how many Deployments sync at once
	// (--concurrent-deployment-syncs). Default 5.
	ConcurrentSyncs int
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.ConcurrentSyncs == 0 {
		c.ConcurrentSyncs = DefaultConcurrentSyncs
	}
}

// Validate checks the configuration, naming the flag.
func (c *Config) Validate() error {
	if c.ConcurrentSyncs < 1 {
		return fmt.Errorf("--concurrent-deployment-syncs: %d must be at least 1", c.ConcurrentSyncs)
	}
	return nil
}

// Controller rolls Deployments out through ReplicaSets. Create it with New;
// Run may be called once.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.WithTicker

	dLister appslisters.DeploymentLister
	// replicaSets routes ReplicaSet events to their Deployments.
	replicaSets *controllerutil.OwnerRouter[*appsv1.Deployment]
	rsLister    appslisters.ReplicaSetLister
	podIndexer  cache.Indexer
	synced      []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller acting through client, watching Deployments,
// ReplicaSets and pods through the informers (which the caller starts),
// recording events with recorder and timing with clk (clock.RealClock{}
// when nil).
func New(client kubernetes.Interface, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:   client,
		recorder: recorder,
		clock:    clk,
		dLister:  dInformer.Lister(),
		rsLister: rsInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment", Clock: clk}),
	}
	dReg, err := dInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueObj,
		UpdateFunc: func(_, cur any) { c.enqueueObj(cur) },
		DeleteFunc: c.enqueueObj,
	})
	if err != nil {
		return nil, fmt.Errorf("deployment controller: watch deployments: %w", err)
	}
	c.replicaSets = &controllerutil.OwnerRouter[*appsv1.Deployment]{
		Kind: controllerKind.Kind,
		Get: func(namespace, name string) (*appsv1.Deployment, error) {
			return c.dLister.Deployments(namespace).Get(name)
		},
		Matching: controllerutil.SelectorMatching(func(namespace string) ([]*appsv1.Deployment, error) {
			return c.dLister.Deployments(namespace).List(labels.Everything())
		}, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }),
		Enqueue: c.enqueue,
	}
	rsReg, err := rsInformer.Informer().AddEventHandler(c.replicaSets.Handlers())
	if err != nil {
		return nil, fmt.Errorf("deployment controller: watch replica sets: %w", err)
	}
	podInf := podInformer.Informer()
	if err := controllerutil.AddPodControllerIndexer(podInf); err != nil {
		return nil, fmt.Errorf("deployment controller: %w", err)
	}
	c.podIndexer = podInf.GetIndexer()
	podReg, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.deletePod})
	if err != nil {
		return nil, fmt.Errorf("deployment controller: watch pods: %w", err)
	}
	c.synced = []cache.InformerSynced{dReg.HasSynced, rsReg.HasSynced, podReg.HasSynced}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/deployment-controller.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           Name,
		Aliases:        []string{"deployment"},
		ServiceAccount: "deployment-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			cfg.SetDefaults()
			if err := cfg.Validate(); err != nil {
				return err
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			f := cc.InformerFactory
			c, err := New(client, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cc.EventRecorder(Name), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentSyncs) })
			return nil
		},
	}
}

// Run waits for the caches, then syncs Deployments with workers
// goroutines until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting deployment controller")
	defer logger.Info("Shut down deployment controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("deployment controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.sync(ctx, key)
	switch {
	case err == nil || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		c.queue.Forget(key)
	case c.queue.NumRequeues(key) < maxRetries:
		klog.FromContext(ctx).V(2).Info("Error syncing deployment, will retry", "deployment", key, "err", err)
		c.queue.AddRateLimited(key)
	default:
		klog.FromContext(ctx).Error(err, "Dropping deployment out of the queue", "deployment", key)
		c.queue.Forget(key)
	}
	return true
}

func key(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

func (c *Controller) enqueue(d *appsv1.Deployment) { c.queue.Add(key(d)) }

func (c *Controller) enqueueObj(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if d, ok := obj.(*appsv1.Deployment); ok {
		c.enqueue(d)
	}
}

// deletePod wakes a Recreate Deployment when one of its old pods is gone:
// it waits for all of them before creating new ones.
func (c *Controller) deletePod(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if d, ok := c.replicaSets.Resolve(rs.Namespace, metav1.GetControllerOfNoCopy(rs)); ok && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}

// sync reconciles one Deployment.
func (c *Controller) sync(ctx context.Context, dKey string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(dKey)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()

	if d.Spec.Selector == nil || (len(d.Spec.Selector.MatchLabels) == 0 && len(d.Spec.Selector.MatchExpressions) == 0) {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			if _, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update deployment %s status: %w", dKey, err)
			}
		}
		return nil
	}

	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	// A paused or resumed Deployment gets an Unknown Progressing condition
	// so that time spent paused never counts against the deadline.
	if err := c.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.syncScale(ctx, d, rsList)
	}
	if rollbackTo(d) != nil {
		return c.rollback(ctx, d, rsList)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return c.syncScale(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		pods, err := c.podsByReplicaSet(rsList)
		if err != nil {
			return err
		}
		return c.rolloutRecreate(ctx, d, rsList, pods)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return c.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("deployment %s: unexpected strategy type %q", dKey, d.Spec.Strategy.Type)
}

// claimReplicaSets returns the ReplicaSets the Deployment controls, after
// adopting matching orphans and releasing its ReplicaSets that no longer
// match, rechecking the Deployment live before the first adoption.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has an invalid label selector: %w", d.Namespace, d.Name, err)
	}
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != d.UID {
			return nil, fmt.Errorf("original Deployment %s/%s is gone: got uid %v, wanted %v", d.Namespace, d.Name, fresh.UID, d.UID)
		}
		return fresh, nil
	})
	m := controllerutil.NewReplicaSetRefManager(controllerutil.ReplicaSetPatcher(c.client), d, sel, controllerKind, canAdopt)
	return m.Claim(ctx, all)
}

// podsByReplicaSet returns the pods each ReplicaSet controls, by UID.
func (c *Controller) podsByReplicaSet(rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	out := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		pods, err := controllerutil.FilterPodsByOwner(c.podIndexer, rs, rsKind.Kind, false)
		if err != nil {
			return nil, err
		}
		out[rs.UID] = pods
	}
	return out, nil
}

// rollbackTo is the revision asked for by the deprecated rollback
// annotation (0: the previous one), or nil.
func rollbackTo(d *appsv1.Deployment) *int64 {
	v := d.Annotations[appsv1.DeprecatedRollbackTo]
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}
