package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/endpoints/endpointutil"
	"github.com/k1s/k1s/controllers/manager"
)

const (
	// ControllerName is the value of the managed-by label of the slices
	// this controller writes.
	ControllerName = "endpointslice-controller.k8s.io"
	// DefaultMaxEndpointsPerSlice is upstream's --max-endpoints-per-slice.
	DefaultMaxEndpointsPerSlice = 100
	// DefaultWorkers is upstream's --concurrent-service-endpoint-syncs.
	DefaultWorkers = 5
	// sliceChangeDelay is the least delay before a sync that a change of a
	// slice (by someone else) triggers, so that several changes make one
	// sync.
	sliceChangeDelay = time.Second
)

// Config configures the controller.
type Config struct {
	// MaxEndpointsPerSlice caps the endpoints of one slice
	// (--max-endpoints-per-slice). Default 100; at most 1000.
	MaxEndpointsPerSlice int
	// Workers is how many Services are synced at once
	// (--concurrent-service-endpoint-syncs). Default DefaultWorkers.
	Workers int
	// BatchPeriod delays the sync that a pod change triggers
	// (--endpointslice-updates-batch-period). Default 0: sync at once.
	BatchPeriod time.Duration
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.MaxEndpointsPerSlice == 0 {
		c.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
}

// Validate reports invalid settings, naming the flags.
func (c Config) Validate() error {
	var errs []error
	if c.MaxEndpointsPerSlice < 1 || c.MaxEndpointsPerSlice > 1000 {
		errs = append(errs, fmt.Errorf("--max-endpoints-per-slice must be between 1 and 1000, got %d", c.MaxEndpointsPerSlice))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("--concurrent-service-endpoint-syncs must not be negative, got %d", c.Workers))
	}
	if c.BatchPeriod < 0 {
		errs = append(errs, fmt.Errorf("--endpointslice-updates-batch-period must not be negative, got %s", c.BatchPeriod))
	}
	return errors.Join(errs...)
}

// Informers are the informers the controller reads; the caller starts them.
type Informers struct {
	Pods           coreinformers.PodInformer
	Services       coreinformers.ServiceInformer
	Nodes          coreinformers.NodeInformer
	EndpointSlices discoveryinformers.EndpointSliceInformer
}

// Controller keeps the EndpointSlices of selector-based Services. Create
// it with New; Run may be called once.
type Controller struct {
	recorder    record.EventRecorder
	svcLister   corelisters.ServiceLister
	podLister   corelisters.PodLister
	sliceLister discoverylisters.EndpointSliceLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	batch       time.Duration

	reconciler *reconciler
	tracker    *tracker
	trigger    *endpointutil.TriggerTimeTracker
}

// New returns a controller that writes slices with client, reads through
// inf, records events with recorder, puts at most maxPerSlice endpoints in
// a slice and delays pod-triggered syncs by batchPeriod.
func New(client kubernetes.Interface, inf Informers, recorder record.EventRecorder, maxPerSlice int, batchPeriod time.Duration) (*Controller, error) {
	if maxPerSlice < 1 {
		return nil, fmt.Errorf("endpointslice controller: max endpoints per slice %d", maxPerSlice)
	}
	tr := newTracker()
	c := &Controller{
		recorder:    recorder,
		svcLister:   inf.Services.Lister(),
		podLister:   inf.Pods.Lister(),
		sliceLister: inf.EndpointSlices.Lister(),
		batch:       batchPeriod,
		tracker:     tr,
		trigger:     endpointutil.NewTriggerTimeTracker(),
		reconciler:  &reconciler{client: client, nodes: inf.Nodes.Lister(), maxPerSlice: maxPerSlice, tracker: tr},
		// Retries back off from one second, as upstream's: a failed sync
		// may mean many slice writes.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 1000*time.Second),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint_slice"}),
	}
	regs := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{inf.Services.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, obj any) { c.enqueue(obj) },
			DeleteFunc: c.enqueue,
		}},
		{inf.Pods.Informer(), endpointutil.PodHandler(c.svcLister, c.enqueueAfterBatch)},
		{inf.EndpointSlices.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.sliceAdded,
			UpdateFunc: c.sliceUpdated,
			DeleteFunc: c.sliceDeleted,
		}},
		// Nodes give endpoints their zone; they only need to be cached.
		{inf.Nodes.Informer(), cache.ResourceEventHandlerFuncs{}},
	}
	for _, r := range regs {
		reg, err := r.inf.AddEventHandler(r.h)
		if err != nil {
			return nil, fmt.Errorf("endpointslice controller: add event handler: %w", err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/endpointslice-controller.
func Descriptor(cfg Config) manager.Controller {
	cfg.SetDefaults()
	return manager.Controller{
		Name:           "endpointslice-controller",
		Aliases:        []string{"endpointslice"},
		ServiceAccount: "endpointslice-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			f := cc.InformerFactory
			c, err := New(client, Informers{
				Pods:           f.Core().V1().Pods(),
				Services:       f.Core().V1().Services(),
				Nodes:          f.Core().V1().Nodes(),
				EndpointSlices: f.Discovery().V1().EndpointSlices(),
			}, cc.EventRecorder("endpoint-slice-controller"), cfg.MaxEndpointsPerSlice, cfg.BatchPeriod)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, cfg.Workers) })
			return nil
		},
	}
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueAfterBatch(key string) {
	if c.batch > 0 {
		c.queue.AddAfter(key, c.batch)
		return
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueForSlice(s *discoveryv1.EndpointSlice) {
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	c.queue.AddAfter(s.Namespace+"/"+name, max(sliceChangeDelay, c.batch))
}

func managed(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == ControllerName
}

func (c *Controller) sliceAdded(obj any) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok && managed(s) && c.tracker.shouldSync(s) {
		c.enqueueForSlice(s)
	}
}

func (c *Controller) sliceUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*discoveryv1.EndpointSlice)
	cur, ok2 := newObj.(*discoveryv1.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	if old.Labels[discoveryv1.LabelServiceName] != cur.Labels[discoveryv1.LabelServiceName] {
		c.tracker.relabelled(old)
		c.enqueueForSlice(old)
		c.enqueueForSlice(cur)
		return
	}
	if managed(old) != managed(cur) || (managed(cur) && c.tracker.shouldSync(cur)) {
		c.enqueueForSlice(cur)
	}
}

func (c *Controller) sliceDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || !managed(s) || !c.tracker.has(s) {
		return
	}
	if !c.tracker.handleDeletion(s) {
		// Someone else deleted it.
		c.enqueueForSlice(s)
	}
}

// Run waits for the caches, then syncs Services with workers goroutines
// until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting endpoint slice controller")
	defer logger.Info("Shut down endpoint slice controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("endpointslice controller: caches did not sync")
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
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Failed to sync endpoint slices, will retry", "service", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// errStaleCache says the slice cache predates this controller's writes.
var errStaleCache = errors.New("endpoint slice informer cache is out of date")

// sync makes the slices of one Service match its pods.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The slices go with the Service through their owner reference.
		c.trigger.Delete(namespace, name)
		c.tracker.forget(serviceKeyOf(namespace, name))
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}
	pods, err := c.podLister.Pods(namespace).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	all, err := c.sliceLister.EndpointSlices(namespace).List(labels.Set{
		discoveryv1.LabelServiceName: svc.Name,
		discoveryv1.LabelManagedBy:   ControllerName,
	}.AsSelectorPreValidated())
	if err != nil {
		return err
	}
	if c.tracker.stale(serviceKey(svc), all) {
		return errStaleCache
	}
	var existing []*discoveryv1.EndpointSlice
	for _, s := range all {
		// Slices being deleted are gone for our purposes.
		if s.DeletionTimestamp == nil {
			existing = append(existing, s)
		}
	}
	triggerTime := c.trigger.Compute(svc, pods)
	if err := c.reconciler.reconcile(ctx, svc, pods, existing, triggerTime); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return err
	}
	return nil
}
