package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	quotaeval "github.com/k1s/k1s/internal/quota"
)

const (
	// DefaultResyncPeriod recomputes every quota this often (upstream's
	// --resource-quota-sync-period).
	DefaultResyncPeriod = 5 * time.Minute
	// DefaultWorkers is how many quotas are computed at once (upstream's
	// --concurrent-resource-quota-syncs).
	DefaultWorkers = 5
)

// Config configures the controller.
type Config struct {
	// ResyncPeriod recomputes every quota this often
	// (--resource-quota-sync-period). Default DefaultResyncPeriod; a
	// negative value disables the resync.
	ResyncPeriod time.Duration
	// Workers is how many quotas are computed at once
	// (--concurrent-resource-quota-syncs). Default DefaultWorkers.
	Workers int
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = DefaultResyncPeriod
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
}

// Validate reports invalid settings, naming the flags.
func (c Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-resource-quota-syncs must not be negative, got %d", c.Workers)
	}
	return nil
}

// MeasuredResources returns the resources whose objects the default
// registry (quotaeval.NewRegistry) measures: pods, services, claims, the
// object counts with legacy names and quotaeval.DefaultCountedResources.
// The controller watches each of them to recompute quotas.
func MeasuredResources() []schema.GroupVersionResource {
	core := corev1.SchemeGroupVersion
	return append([]schema.GroupVersionResource{
		core.WithResource("pods"),
		core.WithResource("services"),
		core.WithResource("persistentvolumeclaims"),
		core.WithResource("configmaps"),
		core.WithResource("secrets"),
		core.WithResource("replicationcontrollers"),
		core.WithResource("resourcequotas"),
	}, quotaeval.DefaultCountedResources()...)
}

// Controller keeps ResourceQuota status. Create it with New; Run may be
// called once.
type Controller struct {
	client   corev1client.ResourceQuotasGetter
	lister   corelisters.ResourceQuotaLister
	registry quota.Registry
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	resync   time.Duration
	clock    clock.WithTicker
}

// New returns a controller that writes quota status with client, watches
// quotas through quotas, measures usage with registry (whose listers must
// be served by informers the caller starts), and recomputes the quotas of
// a namespace when an object of one of sources (informers keyed by the
// resource their objects are measured as) changes there. resync <= 0
// disables the periodic recomputation.
func New(client corev1client.ResourceQuotasGetter, quotas coreinformers.ResourceQuotaInformer, registry quota.Registry,
	sources map[schema.GroupResource]cache.SharedIndexInformer, resync time.Duration, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:   client,
		lister:   quotas.Lister(),
		registry: registry,
		resync:   resync,
		clock:    clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota"}),
	}
	reg, err := quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.ResourceQuota)
			cur, ok2 := newObj.(*corev1.ResourceQuota)
			// Status writes (ours and admission's) need no recomputation;
			// spec changes, and a status.hard that lags the spec, do.
			if ok1 && ok2 && equality.Semantic.DeepEqual(old.Spec, cur.Spec) && quota.Equals(cur.Spec.Hard, cur.Status.Hard) {
				return
			}
			c.enqueue(newObj)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("resource quota controller: watch resource quotas: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	for gr, inf := range sources {
		reg, err := inf.AddEventHandler(c.replenishHandler(gr))
		if err != nil {
			return nil, fmt.Errorf("resource quota controller: watch %s: %w", gr, err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/resourcequota-controller. It measures with
// quotaeval.NewRegistry over the shared informers of MeasuredResources.
func Descriptor(cfg Config) manager.Controller {
	cfg.SetDefaults()
	return manager.Controller{
		Name:           "resourcequota-controller",
		Aliases:        []string{"resourcequota"},
		ServiceAccount: "resourcequota-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			sources := map[schema.GroupResource]cache.SharedIndexInformer{}
			for _, gvr := range MeasuredResources() {
				inf, err := cc.InformerFactory.ForResource(gvr)
				if err != nil {
					return fmt.Errorf("resource quota controller: informer for %s: %w", gvr, err)
				}
				sources[gvr.GroupResource()] = inf.Informer()
			}
			registry := quotaeval.NewRegistry(quotaeval.ListerFuncForFactory(cc.InformerFactory))
			c, err := New(client.CoreV1(), cc.InformerFactory.Core().V1().ResourceQuotas(), registry, sources, cfg.ResyncPeriod, cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, cfg.Workers) })
			return nil
		},
	}
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err == nil {
		c.queue.Add(key)
	}
}

// replenishHandler recomputes the quotas of an object's namespace that
// measure gr when an object is added or deleted, or changes its usage.
func (c *Controller) replenishHandler(gr schema.GroupResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.replenish(gr, obj) },
		UpdateFunc: func(oldObj, newObj any) {
			evaluator := c.registry.Get(gr)
			if evaluator == nil {
				return
			}
			oldUsage, err1 := evaluator.Usage(oldObj.(runtime.Object))
			newUsage, err2 := evaluator.Usage(newObj.(runtime.Object))
			if err1 == nil && err2 == nil && quota.Equals(oldUsage, newUsage) {
				return
			}
			c.replenish(gr, newObj)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			c.replenish(gr, obj)
		},
	}
}

func (c *Controller) replenish(gr schema.GroupResource, obj any) {
	evaluator := c.registry.Get(gr)
	if evaluator == nil {
		return
	}
	accessor, err := meta.Accessor(obj)
	if err != nil || accessor.GetNamespace() == "" {
		return
	}
	quotas, err := c.lister.ResourceQuotas(accessor.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		if len(evaluator.MatchingResources(quota.ResourceNames(q.Spec.Hard))) > 0 {
			c.enqueue(q)
		}
	}
}

func (c *Controller) enqueueAll() {
	quotas, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.enqueue(q)
	}
}

// Run waits for the caches, then keeps quota status with workers
// goroutines until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting resource quota controller")
	defer logger.Info("Shut down resource quota controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("resource quota controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	if c.resync > 0 {
		wg.Go(func() {
			t := c.clock.NewTicker(c.resync)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C():
					c.enqueueAll()
				}
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
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to sync resource quota, will retry", "resourceQuota", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync recomputes one quota's status and writes it if it changed. A
// measurement that fails still writes what could be measured, and the
// error is returned for a retry.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rq, err := c.lister.ResourceQuotas(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	status, calcErr := quotaeval.CalculateStatus(rq, c.registry)
	dirty := rq.Status.Hard == nil || rq.Status.Used == nil ||
		!quota.Equals(rq.Status.Hard, status.Hard) || !quota.Equals(rq.Status.Used, status.Used)
	if !dirty {
		return calcErr
	}
	updated := rq.DeepCopy()
	updated.Status = status
	if _, err := c.client.ResourceQuotas(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return errors.Join(calcErr, fmt.Errorf("update status of resource quota %s: %w", key, err))
	}
	klog.FromContext(ctx).V(2).Info("Updated resource quota status", "resourceQuota", klog.KObj(rq), "used", status.Used)
	return calcErr
}
