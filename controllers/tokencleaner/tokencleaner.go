package tokencleaner

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// Controller deletes expired bootstrap-token Secrets. Create it with New;
// Run may be called once.
type Controller struct {
	client kubernetes.Interface
	lister corelisters.SecretLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.WithTicker
}

// New returns a cleaner that deletes with client the expired bootstrap
// tokens it sees through secrets (started by the caller; Secrets of other
// types or namespaces are ignored) and reads the time from clk, which also
// drives the queue's delays.
func New(client kubernetes.Interface, secrets coreinformers.SecretInformer, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: secrets.Lister(),
		clock:  clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "token_cleaner", Clock: clk}),
	}
	reg, err := secrets.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			s, ok := obj.(*corev1.Secret)
			return ok && isBootstrapToken(s)
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("token cleaner: watch secrets: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

func isBootstrapToken(s *corev1.Secret) bool {
	return s.Namespace == metav1.NamespaceSystem && s.Type == bootstrapapi.SecretTypeBootstrapToken
}

// Descriptor is the controller as kube-controller-manager names it
// (token-cleaner-controller, alias tokencleaner), acting as
// kube-system/token-cleaner. It watches only the bootstrap-token Secrets of
// kube-system, with an informer of its own (the shared one would cache
// every Secret of the cluster). kube-controller-manager leaves it off
// unless named in --controllers; k1s, as k3s and kubeadm clusters do,
// runs it under "*".
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "token-cleaner-controller",
		Aliases:        []string{"tokencleaner"},
		ServiceAccount: "token-cleaner",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
				informers.WithNamespace(metav1.NamespaceSystem),
				informers.WithTweakListOptions(func(o *metav1.ListOptions) {
					o.FieldSelector = fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
				}))
			c, err := New(client, factory.Core().V1().Secrets(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error {
				factory.Start(ctx.Done())
				defer factory.Shutdown()
				return c.Run(ctx)
			})
			return nil
		},
	}
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

// Run waits for the cache, then deletes expired tokens with one worker (as
// upstream's) until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting token cleaner controller")
	defer logger.Info("Shut down token cleaner controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("token cleaner: cache did not sync")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c.processNext(ctx) {
		}
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	<-done
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to delete an expired bootstrap token, will retry", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync deletes the Secret key when its token has expired, or queues it
// again for its expiry. The delete is guarded by the cached Secret's UID
// and resourceVersion: a token replaced or given a later expiration
// meanwhile is not deleted (its update comes through the informer and is
// judged again).
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	secret, err := c.lister.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isBootstrapToken(secret) || secret.DeletionTimestamp != nil {
		return nil
	}
	left, expired := bootstrapsecrets.GetExpiration(secret, c.clock.Now())
	if !expired {
		if left > 0 {
			logger.V(4).Info("Bootstrap token not yet expired", "secret", klog.KObj(secret), "remaining", left)
			c.queue.AddAfter(key, left)
		}
		return nil
	}
	uid, rv := secret.UID, secret.ResourceVersion
	opts := metav1.DeleteOptions{}
	if uid != "" || rv != "" {
		opts.Preconditions = &metav1.Preconditions{}
		if uid != "" {
			opts.Preconditions.UID = &uid
		}
		if rv != "" {
			opts.Preconditions.ResourceVersion = &rv
		}
	}
	err = c.client.CoreV1().Secrets(namespace).Delete(ctx, name, opts)
	switch {
	case err == nil:
		logger.V(2).Info("Deleted expired bootstrap token", "secret", klog.KObj(secret))
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or changed since cached: its update will be judged.
		return nil
	default:
		return fmt.Errorf("delete %s: %w", key, err)
	}
}
