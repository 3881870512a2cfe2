// Package pvprotection owns the pv-protection controller: every
// PersistentVolume carries the kubernetes.io/pv-protection finalizer, and
// a volume being deleted keeps it while it is Bound, so a volume in use by
// a claim is not removed under it (upstream's PV protection controller).
package pvprotection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/volume/storageutil"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// DefaultWorkers is how many volumes are processed at once (upstream's 1).
const DefaultWorkers = 1

// Controller adds and removes the pv-protection finalizer. Create it with
// New; Run may be called once.
type Controller struct {
	client kubernetes.Interface
	lister corelisters.PersistentVolumeLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller watching volumes through pvs (started by the
// caller) and writing them with client.
func New(client kubernetes.Interface, pvs coreinformers.PersistentVolumeInformer, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: pvs.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvprotection", Clock: clk}),
	}
	reg, err := pvs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("pv-protection: watch volumes: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it,
// acting as kube-system/pv-protection-controller.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "persistentvolume-protection-controller",
		Aliases:        []string{"pv-protection"},
		ServiceAccount: "pv-protection-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Core().V1().PersistentVolumes(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

func needsFinalizer(pv *corev1.PersistentVolume) bool {
	return pv.DeletionTimestamp == nil && !slices.Contains(pv.Finalizers, storageutil.PVProtectionFinalizer)
}

func deletionCandidate(pv *corev1.PersistentVolume) bool {
	return pv.DeletionTimestamp != nil && slices.Contains(pv.Finalizers, storageutil.PVProtectionFinalizer)
}

func (c *Controller) enqueue(obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if ok && (needsFinalizer(pv) || deletionCandidate(pv)) {
		c.queue.Add(pv.Name)
	}
}

// Run waits for the cache and processes volumes with workers goroutines
// until ctx is cancelled; it returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting PV protection controller")
	defer logger.Info("Shutting down PV protection controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("pv-protection: cache did not sync")
	}
	controllerutil.RunWorkers(ctx, c.queue, workers, c.sync, "PV protection", "pv")
	return nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	pv, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	clone := pv.DeepCopy()
	switch {
	case deletionCandidate(pv):
		// The binder keeps the phase; Bound means a claim still holds it.
		if pv.Status.Phase == corev1.VolumeBound {
			return nil
		}
		clone.Finalizers = slices.DeleteFunc(clone.Finalizers, func(f string) bool { return f == storageutil.PVProtectionFinalizer })
	case needsFinalizer(pv):
		clone.Finalizers = append(clone.Finalizers, storageutil.PVProtectionFinalizer)
	default:
		return nil
	}
	if _, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update finalizers of volume %s: %w", name, err)
	}
	klog.FromContext(ctx).V(3).Info("Updated PV protection finalizer", "pv", name, "removed", pv.DeletionTimestamp != nil)
	return nil
}
