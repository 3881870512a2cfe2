// Package pvcprotection owns the pvc-protection controller: every
// PersistentVolumeClaim carries the kubernetes.io/pvc-protection
// finalizer, and a claim being deleted keeps it while a pod scheduled to a
// node uses it (for an ephemeral volume's claim: until the pod is shut
// down), as upstream's PVC protection controller does. Pods are checked in
// the informer first and, when it finds none, in a live list.
package pvcprotection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/volume/storageutil"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// DefaultWorkers is how many claims are processed at once.
const DefaultWorkers = 1

// Controller adds and removes the pvc-protection finalizer. Create it
// with New; Run may be called once.
type Controller struct {
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	pods   corelisters.PodLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller watching claims and pods through the given
// informers (started by the caller) and writing claims with client.
func New(client kubernetes.Interface, pvcs coreinformers.PersistentVolumeClaimInformer, pods coreinformers.PodInformer, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client: client,
		claims: pvcs.Lister(),
		pods:   pods.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvcprotection", Clock: clk}),
	}
	reg, err := pvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.claimChanged,
		UpdateFunc: func(_, obj any) { c.claimChanged(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("pvc-protection: watch claims: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	reg, err = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.podChanged(nil, obj, false) },
		UpdateFunc: func(old, obj any) {
			c.podChanged(old, obj, false)
		},
		DeleteFunc: func(obj any) { c.podChanged(nil, obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("pvc-protection: watch pods: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it,
// acting as kube-system/pvc-protection-controller.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "persistentvolumeclaim-protection-controller",
		Aliases:        []string{"pvc-protection"},
		ServiceAccount: "pvc-protection-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			core := cc.InformerFactory.Core().V1()
			c, err := New(client, core.PersistentVolumeClaims(), core.Pods(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

func needsFinalizer(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.DeletionTimestamp == nil && !slices.Contains(pvc.Finalizers, storageutil.PVCProtectionFinalizer)
}

func deletionCandidate(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.DeletionTimestamp != nil && slices.Contains(pvc.Finalizers, storageutil.PVCProtectionFinalizer)
}

func (c *Controller) claimChanged(obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if ok && (needsFinalizer(pvc) || deletionCandidate(pvc)) {
		c.queue.Add(pvc.Namespace + "/" + pvc.Name)
	}
}

func podFrom(obj any) *corev1.Pod {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// podChanged queues the claims of a pod that may have stopped using them:
// deleted, finished, or not scheduled; and those of a replaced pod.
func (c *Controller) podChanged(oldObj, obj any, deleted bool) {
	pod := podFrom(obj)
	if pod == nil {
		return
	}
	if old := podFrom(oldObj); old != nil && old.UID != pod.UID {
		c.enqueueClaims(old)
	}
	if !deleted && !terminated(pod) && pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
		return
	}
	c.enqueueClaims(pod)
}

func (c *Controller) enqueueClaims(pod *corev1.Pod) {
	for _, pc := range storageutil.PodClaims(pod) {
		c.queue.Add(pod.Namespace + "/" + pc.Name)
	}
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// shutDown: deleted with no grace left, as upstream judges an ephemeral
// volume's pod done with it.
func shutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// usesClaim reports whether the pod keeps pvc from being removed: it is
// scheduled (its node may still have the volume mounted) and refers to
// the claim; an ephemeral claim only while the pod is not shut down and
// owns it.
func usesClaim(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			return true
		}
		if v.Ephemeral != nil && !shutDown(pod) && ephemeral.VolumeClaimName(pod, v) == pvc.Name && ephemeral.VolumeIsForPod(pod, pvc) == nil {
			return true
		}
	}
	return false
}

// Run waits for the caches and processes claims with workers goroutines
// until ctx is cancelled; it returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting PVC protection controller")
	defer logger.Info("Shutting down PVC protection controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("pvc-protection: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, c.queue, workers, c.sync, "PVC protection", "pvc")
	return nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	clone := pvc.DeepCopy()
	switch {
	case deletionCandidate(pvc):
		used, err := c.inUse(ctx, pvc)
		if err != nil || used {
			return err
		}
		clone.Finalizers = slices.DeleteFunc(clone.Finalizers, func(f string) bool { return f == storageutil.PVCProtectionFinalizer })
	case needsFinalizer(pvc):
		clone.Finalizers = append(clone.Finalizers, storageutil.PVCProtectionFinalizer)
	default:
		return nil
	}
	if _, err := c.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, clone, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update finalizers of claim %s: %w", key, err)
	}
	klog.FromContext(ctx).V(3).Info("Updated PVC protection finalizer", "pvc", klog.KObj(pvc), "removed", pvc.DeletionTimestamp != nil)
	return nil
}

// inUse asks the informer, then (when it knows of no user, which may be
// stale) the apiserver.
func (c *Controller) inUse(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	pods, err := c.pods.Pods(pvc.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		if usesClaim(p, pvc) {
			return true, nil
		}
	}
	list, err := c.client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("list pods of namespace %s: %w", pvc.Namespace, err)
	}
	for i := range list.Items {
		if usesClaim(&list.Items[i], pvc) {
			return true, nil
		}
	}
	return false, nil
}
