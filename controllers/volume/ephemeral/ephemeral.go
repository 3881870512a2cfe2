// Package ephemeral owns the ephemeral-volume controller: for each
// `ephemeral` volume of a pod it creates the PersistentVolumeClaim
// <pod>-<volume> from the volume's claim template, owned by the pod (so the
// garbage collector removes it with the pod), as upstream's ephemeral
// volume controller does. A claim of that name the pod does not own is
// reported (event FailedBinding on the pod) and left alone.
package ephemeral

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	helper "k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// DefaultWorkers is upstream's --concurrent-ephemeralvolume-syncs default.
const DefaultWorkers = 5

// Controller creates the claims of pods' ephemeral volumes. Create it
// with New; Run may be called once.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller watching pods and claims through the given
// informers (started by the caller).
func New(client kubernetes.Interface, pods coreinformers.PodInformer, pvcs coreinformers.PersistentVolumeClaimInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client: client, recorder: recorder,
		pods: pods.Lister(), claims: pvcs.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ephemeral_volume", Clock: clk}),
	}
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, obj any) { c.podChanged(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("ephemeral-volume: watch pods: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	reg, err = pvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.claimDeleted})
	if err != nil {
		return nil, fmt.Errorf("ephemeral-volume: watch claims: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it,
// acting as kube-system/ephemeral-volume-controller.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "ephemeral-volume-controller",
		Aliases:        []string{"ephemeral-volume"},
		ServiceAccount: "ephemeral-volume-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			core := cc.InformerFactory.Core().V1()
			c, err := New(client, core.Pods(), core.PersistentVolumeClaims(), cc.EventRecorder("ephemeral_volume"), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

func hasEphemeral(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

func (c *Controller) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp != nil || !hasEphemeral(pod) {
		return
	}
	c.queue.Add(pod.Namespace + "/" + pod.Name)
}

// claimDeleted queues the pod that owns a deleted claim, which may need
// it again.
func (c *Controller) claimDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pvc); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
		c.queue.Add(pvc.Namespace + "/" + ref.Name)
	}
}

// Run waits for the caches and creates claims with workers goroutines
// until ctx is cancelled; it returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting ephemeral volume controller")
	defer logger.Info("Shutting down ephemeral volume controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("ephemeral-volume: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, c.queue, workers, c.sync, "Ephemeral volume", "pod")
	return nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Ephemeral == nil {
			continue
		}
		if err := c.ensureClaim(ctx, pod, v); err != nil {
			c.recorder.Event(pod, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("ephemeral volume %s: %v", v.Name, err))
			return fmt.Errorf("pod %s, ephemeral volume %s: %w", key, v.Name, err)
		}
	}
	return nil
}

func (c *Controller) ensureClaim(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	name := helper.VolumeClaimName(pod, v)
	existing, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if existing != nil {
		return helper.VolumeIsForPod(pod, existing)
	}
	tmpl := v.Ephemeral.VolumeClaimTemplate
	if tmpl == nil {
		return errors.New("volumeClaimTemplate is not set")
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the informer brings it; the next sync checks its owner
		}
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created claim for ephemeral volume", "pod", klog.KObj(pod), "pvc", name)
	return nil
}
