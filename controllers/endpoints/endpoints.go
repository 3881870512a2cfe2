package endpoints

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/endpoints/endpointutil"
	"github.com/k1s/k1s/controllers/manager"
)

const (
	// ControllerName is the value of LabelManagedBy on the Endpoints this
	// controller writes.
	ControllerName = "endpoint-controller"
	// LabelManagedBy marks Endpoints written by this controller.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	// MaxCapacity is the most addresses one Endpoints object keeps.
	MaxCapacity = 1000
	// truncated is the value of the over-capacity annotation.
	truncated = "truncated"
	// DefaultWorkers is upstream's --concurrent-endpoint-syncs.
	DefaultWorkers = 5
)

// Config configures the controller.
type Config struct {
	// Workers is how many Services are synced at once
	// (--concurrent-endpoint-syncs). Default DefaultWorkers.
	Workers int
	// BatchPeriod delays the sync that a pod change triggers, so that
	// several changes make one update (--endpoint-updates-batch-period).
	// Default 0: sync at once.
	BatchPeriod time.Duration
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
}

// Validate reports invalid settings, naming the flags.
func (c Config) Validate() error {
	var errs []error
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("--concurrent-endpoint-syncs must not be negative, got %d", c.Workers))
	}
	if c.BatchPeriod < 0 {
		errs = append(errs, fmt.Errorf("--endpoint-updates-batch-period must not be negative, got %s", c.BatchPeriod))
	}
	return errors.Join(errs...)
}

// Controller keeps the Endpoints of selector-based Services. Create it
// with New; Run may be called once.
type Controller struct {
	client    kubernetes.Interface
	recorder  record.EventRecorder
	svcLister corelisters.ServiceLister
	podLister corelisters.PodLister
	epLister  corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	batch     time.Duration

	trigger *endpointutil.TriggerTimeTracker
	stale   staleTracker
}

// New returns a controller that writes Endpoints with client, watches
// pods, Services and Endpoints through the informers (started by the
// caller), records events with recorder and delays pod-triggered syncs by
// batchPeriod.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, services coreinformers.ServiceInformer,
	endpoints coreinformers.EndpointsInformer, recorder record.EventRecorder, batchPeriod time.Duration) (*Controller, error) {
	c := &Controller{
		client:    client,
		recorder:  recorder,
		svcLister: services.Lister(),
		podLister: pods.Lister(),
		epLister:  endpoints.Lister(),
		batch:     batchPeriod,
		trigger:   endpointutil.NewTriggerTimeTracker(),
		stale:     staleTracker{versions: map[types.NamespacedName]string{}},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint"}),
	}
	regs := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{services.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, obj any) { c.enqueue(obj) },
			DeleteFunc: c.enqueue,
		}},
		{pods.Informer(), endpointutil.PodHandler(c.svcLister, c.enqueueBatched)},
		{endpoints.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueue}},
	}
	for _, r := range regs {
		reg, err := r.inf.AddEventHandler(r.h)
		if err != nil {
			return nil, fmt.Errorf("endpoints controller: add event handler: %w", err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/endpoint-controller.
func Descriptor(cfg Config) manager.Controller {
	cfg.SetDefaults()
	return manager.Controller{
		Name:           "endpoints-controller",
		Aliases:        []string{"endpoint"},
		ServiceAccount: "endpoint-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			core := cc.InformerFactory.Core().V1()
			c, err := New(client, core.Pods(), core.Services(), core.Endpoints(), cc.EventRecorder(ControllerName), cfg.BatchPeriod)
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

func (c *Controller) enqueueBatched(key string) {
	if c.batch > 0 {
		c.queue.AddAfter(key, c.batch)
		return
	}
	c.queue.Add(key)
}

// Run waits for the caches, queues every existing Endpoints once (to
// delete those whose Service is gone), then syncs Services with workers
// goroutines until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting endpoint controller")
	defer logger.Info("Shut down endpoint controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("endpoint controller: caches did not sync")
	}
	c.queueLeftovers()
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

// queueLeftovers queues every Endpoints so that those without a Service
// are deleted; leader-election records have no Service and are skipped.
func (c *Controller) queueLeftovers() {
	eps, err := c.epLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ep := range eps {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; ok {
			continue
		}
		c.enqueue(ep)
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Failed to sync endpoints, will retry", "service", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync makes the Endpoints of one Service match its pods.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		c.trigger.Delete(namespace, name)
		c.stale.forget(namespace, name)
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		// Endpoints of selector-less Services are written by their users.
		return nil
	}
	pods, err := c.podLister.Pods(namespace).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	triggerTime := c.trigger.Compute(svc, pods)
	subsets, ready, notReady := desiredSubsets(svc, pods)

	current, err := c.epLister.Endpoints(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	case err != nil:
		return err
	case c.stale.isStale(current):
		return fmt.Errorf("endpoints informer cache is out of date: resource version %s of endpoints %s already replaced", current.ResourceVersion, key)
	}
	create := current.ResourceVersion == ""
	if !create && subsetsEqual(current.Subsets, subsets) && labelsCorrect(current.Labels, svc.Labels) &&
		capacityAnnotationCorrect(current.Annotations, current.Subsets) {
		return nil
	}

	updated := current.DeepCopy()
	updated.Subsets = subsets
	updated.Labels = maps.Clone(svc.Labels)
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	if !triggerTime.IsZero() {
		updated.Annotations[corev1.EndpointsLastChangeTriggerTime] = triggerTime.UTC().Format(time.RFC3339Nano)
	} else {
		delete(updated.Annotations, corev1.EndpointsLastChangeTriggerTime)
	}
	if truncate(updated) {
		updated.Annotations[corev1.EndpointsOverCapacity] = truncated
	} else {
		delete(updated.Annotations, corev1.EndpointsOverCapacity)
	}
	if endpointutil.IsServiceIPSet(svc) {
		delete(updated.Labels, corev1.IsHeadlessService)
	} else {
		updated.Labels[corev1.IsHeadlessService] = ""
	}
	updated.Labels[LabelManagedBy] = ControllerName

	logger.V(4).Info("Updating endpoints", "service", klog.KObj(svc), "readyEndpoints", ready, "notReadyEndpoints", notReady)
	if create {
		_, err = c.client.CoreV1().Endpoints(namespace).Create(ctx, updated, metav1.CreateOptions{})
		if err != nil {
			if apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			c.recorder.Eventf(updated, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s: %v", key, err)
			return fmt.Errorf("create endpoints %s: %w", key, err)
		}
		return nil
	}
	written, err := c.client.CoreV1().Endpoints(namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		c.recorder.Eventf(updated, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s: %v", key, err)
		return fmt.Errorf("update endpoints %s: %w", key, err)
	}
	if written.ResourceVersion != current.ResourceVersion {
		// Until the informer shows a newer version, the cached one is
		// known to be stale.
		c.stale.mark(current)
	}
	return nil
}

// desiredSubsets lists the pods as endpoint subsets of svc, with the
// counts of ready and not-ready endpoint entries.
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) ([]corev1.EndpointSubset, int, int) {
	var subsets []corev1.EndpointSubset
	var ready, notReady int
	add := func(pod *corev1.Pod, addr corev1.EndpointAddress, port *corev1.EndpointPort) {
		s := corev1.EndpointSubset{}
		if port != nil {
			s.Ports = []corev1.EndpointPort{*port}
		}
		if svc.Spec.PublishNotReadyAddresses || endpointutil.IsPodReady(pod) {
			s.Addresses = []corev1.EndpointAddress{addr}
			ready++
		} else {
			s.NotReadyAddresses = []corev1.EndpointAddress{addr}
			notReady++
		}
		subsets = append(subsets, s)
	}
	for _, pod := range pods {
		if !endpointutil.ShouldPodBeInEndpoints(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		ip := endpointutil.PodIP(pod, endpointutil.ServiceFamily(svc, pod.Status.PodIP))
		if ip == "" {
			continue
		}
		addr := corev1.EndpointAddress{
			IP:        ip,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			addr.NodeName = &pod.Spec.NodeName
		}
		if endpointutil.ShouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(pod, addr, nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := endpointutil.FindPort(pod, sp)
			if err != nil {
				continue
			}
			add(pod, addr, &corev1.EndpointPort{Name: sp.Name, Port: int32(n), Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		}
	}
	return Repack(subsets), ready, notReady
}

// subsetsEqual compares subsets, also after repacking the current ones
// (which another writer may have ordered differently), ignoring the
// resource versions of target references.
func subsetsEqual(current, desired []corev1.EndpointSubset) bool {
	return equality.Semantic.DeepEqual(withoutTargetVersions(current), desired) ||
		equality.Semantic.DeepEqual(Repack(withoutTargetVersions(current)), desired)
}

func withoutTargetVersions(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	out := make([]corev1.EndpointSubset, len(subsets))
	for i := range subsets {
		s := subsets[i].DeepCopy()
		for _, list := range [][]corev1.EndpointAddress{s.Addresses, s.NotReadyAddresses} {
			for j := range list {
				if list[j].TargetRef != nil {
					list[j].TargetRef.ResourceVersion = ""
				}
			}
		}
		out[i] = *s
	}
	return out
}

// labelsCorrect reports whether the Endpoints' labels are the Service's
// plus the managed-by label (and the headless label, whatever its value).
func labelsCorrect(epLabels, svcLabels map[string]string) bool {
	if epLabels[LabelManagedBy] != ControllerName {
		return false
	}
	n := 0
	for k, v := range epLabels {
		if k == LabelManagedBy || k == corev1.IsHeadlessService {
			continue
		}
		if sv, ok := svcLabels[k]; !ok || sv != v {
			return false
		}
		n++
	}
	return n == len(svcLabels)
}

// capacityAnnotationCorrect is false when the subsets exceed MaxCapacity
// (they must be truncated) or when the over-capacity annotation is on
// Endpoints within capacity.
func capacityAnnotationCorrect(annotations map[string]string, subsets []corev1.EndpointSubset) bool {
	if countAddresses(subsets) > MaxCapacity {
		return false
	}
	_, marked := annotations[corev1.EndpointsOverCapacity]
	return !marked
}

func countAddresses(subsets []corev1.EndpointSubset) int {
	n := 0
	for _, s := range subsets {
		n += len(s.Addresses) + len(s.NotReadyAddresses)
	}
	return n
}

// staleTracker remembers, per Endpoints, a resource version this
// controller has replaced, so that a sync reading it from a lagging cache
// waits instead of computing from it.
type staleTracker struct {
	mu       sync.Mutex
	versions map[types.NamespacedName]string
}

func (t *staleTracker) mark(ep *corev1.Endpoints) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.versions[types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}] = ep.ResourceVersion
}

func (t *staleTracker) isStale(ep *corev1.Endpoints) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.versions[types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}]
	return ok && v == ep.ResourceVersion
}

func (t *staleTracker) forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.versions, types.NamespacedName{Namespace: namespace, Name: name})
}
