package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/manager"
)

// DefaultServiceAccountName is the service account every namespace gets.
const DefaultServiceAccountName = "default"

// Controller ensures the default service account in every active
// namespace. Create it with New; Run may be called once.
type Controller struct {
	client   kubernetes.Interface
	names    []string
	saLister corelisters.ServiceAccountLister
	nsLister corelisters.NamespaceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller that creates the default service account with
// client, watching service accounts and namespaces through the informers
// (which the caller starts).
func New(client kubernetes.Interface, saInformer coreinformers.ServiceAccountInformer, nsInformer coreinformers.NamespaceInformer) (*Controller, error) {
	c := &Controller{
		client:   client,
		names:    []string{DefaultServiceAccountName},
		saLister: saInformer.Lister(),
		nsLister: nsInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount"}),
	}
	saReg, err := saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.serviceAccountDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("service account controller: watch service accounts: %w", err)
	}
	nsReg, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNamespace,
		UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("service account controller: watch namespaces: %w", err)
	}
	c.synced = []cache.InformerSynced{saReg.HasSynced, nsReg.HasSynced}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/service-account-controller, with one worker.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "serviceaccount-controller",
		Aliases:        []string{"serviceaccount"},
		ServiceAccount: "service-account-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Core().V1().ServiceAccounts(), cc.InformerFactory.Core().V1().Namespaces())
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, 1) })
			return nil
		},
	}
}

func (c *Controller) serviceAccountDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return
	}
	for _, n := range c.names {
		if sa.Name == n {
			c.queue.Add(sa.Namespace)
			return
		}
	}
}

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

// Run waits for the caches, then syncs namespaces with workers goroutines
// until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting service account controller")
	defer logger.Info("Shut down service account controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("service account controller: caches did not sync")
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
		klog.FromContext(ctx).Error(err, "Failed to sync namespace, will retry", "namespace", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync creates the missing service accounts of one namespace, if it is
// active.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.nsLister.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return nil
	}
	var errs []error
	for _, name := range c.names {
		_, err := c.saLister.ServiceAccounts(namespace).Get(name)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		_, err = c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(2).Info("Created service account", "serviceAccount", klog.KObj(sa))
		case apierrors.IsAlreadyExists(err),
			// The namespace went away or began terminating meanwhile.
			apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		default:
			errs = append(errs, fmt.Errorf("create service account %s/%s: %w", namespace, name, err))
		}
	}
	return errors.Join(errs...)
}
