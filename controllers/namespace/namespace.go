package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

const (
	// DefaultWorkers is how many namespaces are emptied at once
	// (kube-controller-manager's --concurrent-namespace-syncs).
	DefaultWorkers = 10
	// DefaultResyncPeriod re-examines every namespace this often
	// (kube-controller-manager's --namespace-sync-period).
	DefaultResyncPeriod = 5 * time.Minute

	// deletionDelay postpones the first look at a deleted namespace, so
	// that other apiservers see the deletion (and refuse new content)
	// before the content is listed.
	deletionDelay = 5 * time.Second
	// finalizerEstimate is the wait assumed for objects that are held by
	// finalizers.
	finalizerEstimate int64 = 15
)

// DiscoverFunc lists the namespaced resources the server serves, in their
// preferred versions. It may return a partial list with an error.
type DiscoverFunc func(ctx context.Context) ([]*metav1.APIResourceList, error)

// Controller empties deleted namespaces and then lets the apiserver remove
// them. Create it with New; Run may be called once.
type Controller struct {
	client      kubernetes.Interface
	metadata    metadata.Interface
	discover    DiscoverFunc
	lister      corelisters.NamespaceLister
	synced      cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	clock       clock.WithTicker
	gracePeriod time.Duration
}

// New returns a namespace controller that reads and finalizes namespaces
// and estimates pod termination with client, deletes content through
// metadataClient, finds the resources to delete with discover, and watches
// namespaces through nsInformer (started by the caller), re-examining each
// every resync (0: never).
func New(client kubernetes.Interface, metadataClient metadata.Interface, discover DiscoverFunc,
	nsInformer coreinformers.NamespaceInformer, resync time.Duration, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:      client,
		metadata:    metadataClient,
		discover:    discover,
		lister:      nsInformer.Lister(),
		clock:       clk,
		gracePeriod: deletionDelay,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace", Clock: clk}),
	}
	reg, err := nsInformer.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}, resync)
	if err != nil {
		return nil, fmt.Errorf("namespace controller: watch namespaces: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// rateLimiter retries faster than the default controller limiter (a
// namespace is retried at least every minute) with the usual overall cap.
func rateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/namespace-controller with DefaultWorkers workers. Its
// clients get twenty times the manager's QPS and a hundred times its burst,
// as upstream's, since emptying a namespace takes many requests.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "namespace-controller",
		Aliases:        []string{"namespace"},
		ServiceAccount: "namespace-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			cfg, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			cfg.QPS *= 20
			cfg.Burst *= 100
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("namespace controller: client: %w", err)
			}
			metadataClient, err := metadata.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("namespace controller: metadata client: %w", err)
			}
			c, err := New(client, metadataClient, DiscoveryFunc(client.Discovery()),
				cc.InformerFactory.Core().V1().Namespaces(), DefaultResyncPeriod, cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

// DiscoveryFunc discovers the preferred namespaced resources of d.
func DiscoveryFunc(d discovery.DiscoveryInterface) DiscoverFunc {
	return func(ctx context.Context) ([]*metav1.APIResourceList, error) {
		return discovery.ServerPreferredNamespacedResourcesWithContext(ctx, discovery.ToDiscoveryInterfaceWithContext(d))
	}
}

func (c *Controller) enqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return
	}
	c.queue.AddAfter(ns.Name, c.gracePeriod)
}

// Run waits for the cache, then empties deleted namespaces with workers
// goroutines until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting namespace controller")
	defer logger.Info("Shut down namespace controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("namespace controller: cache did not sync")
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
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	logger := klog.FromContext(ctx)
	if remaining, ok := errors.AsType[*ResourcesRemainingError](err); ok {
		wait := time.Duration(remaining.Estimate/2+1) * time.Second
		logger.V(4).Info("Content remains in namespace", "namespace", key, "retryAfter", wait)
		c.queue.AddAfter(key, wait)
		return true
	}
	logger.Error(err, "Failed to empty namespace, will retry", "namespace", key)
	c.queue.AddRateLimited(key)
	return true
}

// ResourcesRemainingError says that content is going away but is not gone
// yet (pods terminating gracefully, objects held by finalizers).
type ResourcesRemainingError struct {
	// Estimate is the expected wait in seconds.
	Estimate int64
}

func (e *ResourcesRemainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.Estimate)
}

// sync moves one deleted namespace forward: mark it Terminating, delete its
// content, remove the "kubernetes" finalizer once it is empty, and delete
// the namespace when no spec finalizer is left.
func (c *Controller) sync(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp == nil {
		return nil
	}
	// Read the latest state: other controllers edit terminating namespaces.
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	ns, err = c.retryOnConflict(ctx, ns, c.markTerminating)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark namespace %s terminating: %w", name, err)
	}

	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		// Content is gone already; other spec finalizers are for others.
		if len(ns.Spec.Finalizers) == 0 {
			return c.remove(ctx, ns)
		}
		return nil
	}

	ns, estimate, err := c.deleteAllContent(ctx, ns)
	if err != nil {
		return err
	}
	if estimate > 0 {
		return &ResourcesRemainingError{Estimate: estimate}
	}

	ns, err = c.retryOnConflict(ctx, ns, c.finalize)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	logger.V(2).Info("Namespace emptied and finalized", "namespace", name, "finalizers", ns.Spec.Finalizers)
	if len(ns.Spec.Finalizers) > 0 {
		return nil
	}
	return c.remove(ctx, ns)
}

type namespaceUpdate func(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error)

// retryOnConflict applies fn to ns, re-reading the namespace after each
// conflict, as long as it is the same namespace (same UID).
func (c *Controller) retryOnConflict(ctx context.Context, ns *corev1.Namespace, fn namespaceUpdate) (*corev1.Namespace, error) {
	for {
		out, err := fn(ctx, ns)
		if !apierrors.IsConflict(err) {
			return out, err
		}
		latest, err := c.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, fmt.Errorf("namespace %s was replaced (uid %s, was %s)", ns.Name, latest.UID, ns.UID)
		}
		ns = latest
	}
}

// markTerminating sets status.phase Terminating if it is not yet.
func (c *Controller) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.Status.Phase = corev1.NamespaceTerminating
	return c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
}

// finalize removes the "kubernetes" finalizer through namespaces/finalize.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	ns = ns.DeepCopy()
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool {
		return f == corev1.FinalizerKubernetes
	})
	return c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
}

// remove deletes the finalized namespace again, which makes k1s's
// apiserver drop it. A namespace still carrying metadata finalizers
// (orphan, foregroundDeletion) is left to the garbage collector, which
// removes them; the update it makes brings the namespace back here.
func (c *Controller) remove(ctx context.Context, ns *corev1.Namespace) error {
	logger := klog.FromContext(ctx)
	if len(ns.Finalizers) > 0 {
		logger.V(2).Info("Namespace waits for its metadata finalizers", "namespace", ns.Name, "finalizers", ns.Finalizers)
		return nil
	}
	uid := ns.UID
	err := c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil:
		logger.V(2).Info("Namespace deleted", "namespace", ns.Name)
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by a new namespace of the same name.
		return nil
	}
	return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
}
