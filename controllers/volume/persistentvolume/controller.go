package persistentvolume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// DefaultSyncPeriod is how often every volume and claim is synced again
// (kube-controller-manager's --pvclaimbinder-sync-period default).
const DefaultSyncPeriod = 15 * time.Second

// EventComponent is the source of the controller's events, as upstream.
const EventComponent = "persistentvolume-controller"

// Config configures the binder.
type Config struct {
	// SyncPeriod is how often every volume and claim is synced again
	// (--pvclaimbinder-sync-period). Default 15s.
	SyncPeriod time.Duration
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.SyncPeriod == 0 {
		c.SyncPeriod = DefaultSyncPeriod
	}
}

// Validate checks c after SetDefaults.
func (c *Config) Validate() error {
	if c.SyncPeriod <= 0 {
		return fmt.Errorf("--pvclaimbinder-sync-period: %v must be positive", c.SyncPeriod)
	}
	return nil
}

// Controller binds PersistentVolumeClaims to PersistentVolumes, asks
// external provisioners for volumes, and reclaims released volumes.
// Create it with New; Run may be called once.
type Controller struct {
	cfg      Config
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.WithTicker

	volumes *store[*corev1.PersistentVolume]
	claims  *store[*corev1.PersistentVolumeClaim]

	claimLister corelisters.PersistentVolumeClaimLister
	classLister storagelisters.StorageClassLister
	podLister   corelisters.PodLister
	synced      []cache.InformerSynced

	volumeQueue workqueue.TypedRateLimitingInterface[string]
	claimQueue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a binder fed by the factory's PersistentVolume,
// PersistentVolumeClaim, StorageClass and Pod informers (started by the
// caller). It registers event handlers and starts nothing.
func New(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	core := factory.Core().V1()
	c := &Controller{
		cfg: cfg, client: client, recorder: recorder, clock: clk,
		volumes:     newStore(func(v *corev1.PersistentVolume) string { return v.Name }),
		claims:      newStore(claimKey),
		claimLister: core.PersistentVolumeClaims().Lister(),
		classLister: factory.Storage().V1().StorageClasses().Lister(),
		podLister:   core.Pods().Lister(),
		volumeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "volumes", Clock: clk}),
		claimQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "claims", Clock: clk}),
	}
	reg, err := core.PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.volumeChanged,
		UpdateFunc: func(_, obj any) { c.volumeChanged(obj) },
		DeleteFunc: c.volumeDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("persistentvolume-binder: watch volumes: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	reg, err = core.PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.claimChanged,
		UpdateFunc: func(_, obj any) { c.claimChanged(obj) },
		DeleteFunc: c.claimDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("persistentvolume-binder: watch claims: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced,
		factory.Storage().V1().StorageClasses().Informer().HasSynced, core.Pods().Informer().HasSynced)
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it,
// acting as kube-system/persistent-volume-binder.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           "persistentvolume-binder-controller",
		Aliases:        []string{"persistentvolume-binder"},
		ServiceAccount: "persistent-volume-binder",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(cfg, client, cc.InformerFactory, cc.EventRecorder(EventComponent), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(c.Run)
			return nil
		},
	}
}

func claimKey(c *corev1.PersistentVolumeClaim) string { return c.Namespace + "/" + c.Name }

func claimRefKey(r *corev1.ObjectReference) string { return r.Namespace + "/" + r.Name }

func volumeFrom(obj any) *corev1.PersistentVolume {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, _ := obj.(*corev1.PersistentVolume)
	return v
}

func claimFrom(obj any) *corev1.PersistentVolumeClaim {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, _ := obj.(*corev1.PersistentVolumeClaim)
	return v
}

func (c *Controller) volumeChanged(obj any) {
	if v := volumeFrom(obj); v != nil && c.volumes.update(v) {
		c.volumeQueue.Add(v.Name)
	}
}

func (c *Controller) volumeDeleted(obj any) {
	v := volumeFrom(obj)
	if v == nil {
		return
	}
	c.volumes.delete(v.Name)
	// The claim bound to it is now lost.
	if v.Spec.ClaimRef != nil {
		c.claimQueue.Add(claimRefKey(v.Spec.ClaimRef))
	}
}

func (c *Controller) claimChanged(obj any) {
	if cl := claimFrom(obj); cl != nil && c.claims.update(cl) {
		c.claimQueue.Add(claimKey(cl))
	}
}

func (c *Controller) claimDeleted(obj any) {
	cl := claimFrom(obj)
	if cl == nil {
		return
	}
	c.claims.delete(claimKey(cl))
	// Its volume is now released.
	if cl.Spec.VolumeName != "" {
		c.volumeQueue.Add(cl.Spec.VolumeName)
	}
}

// Run waits for the caches, then syncs volumes and claims (one worker
// each, as upstream) and resyncs everything every SyncPeriod, until ctx is
// cancelled; it returns nil.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer c.volumeQueue.ShutDown()
	defer c.claimQueue.ShutDown()
	logger.Info("Starting persistent volume controller")
	defer logger.Info("Shutting down persistent volume controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("persistentvolume-binder: caches did not sync")
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for c.processNext(ctx, c.volumeQueue, c.syncVolumeKey) {
		}
	})
	wg.Go(func() {
		for c.processNext(ctx, c.claimQueue, c.syncClaimKey) {
		}
	})
	t := c.clock.NewTicker(c.cfg.SyncPeriod)
	defer t.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C():
			c.resync()
		}
	}
	c.volumeQueue.ShutDown()
	c.claimQueue.ShutDown()
	wg.Wait()
	return nil
}

// resync queues every known volume and claim.
func (c *Controller) resync() {
	for _, v := range c.volumes.list() {
		c.volumeQueue.Add(v.Name)
	}
	for _, cl := range c.claims.list() {
		c.claimQueue.Add(claimKey(cl))
	}
}

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Sync failed, will retry", "key", key, "err", err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

func (c *Controller) syncVolumeKey(ctx context.Context, name string) error {
	v, ok := c.volumes.get(name)
	if !ok {
		return nil
	}
	return c.syncVolume(ctx, v)
}

func (c *Controller) syncClaimKey(ctx context.Context, key string) error {
	cl, ok := c.claims.get(key)
	if !ok {
		return nil
	}
	return c.syncClaim(ctx, cl)
}

// ignoreConflict turns a conflict into a quiet retry: the newer version
// is on its way through the informer and queues the object again.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
