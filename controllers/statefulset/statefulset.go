package statefulset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/k1s/k1s/controllers/controllerutil"
	"github.com/k1s/k1s/controllers/history"
	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/internal/apis/apps"
)

// Name is the controller's name in --controllers and its event source.
const Name = "statefulset-controller"

// Workers is the number of StatefulSets synced at once, upstream's
// --concurrent-statefulset-syncs default.
const Workers = 5

var (
	controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	podKind        = corev1.SchemeGroupVersion.WithKind("Pod")
)

// Controller runs StatefulSets. Create it with New; Run may be called once.
type Controller struct {
	client     kubernetes.Interface
	recorder   record.EventRecorder
	podControl *podControl
	// claimControl adopts and releases pods.
	claimControl controllerutil.PodControl
	history      history.Interface
	clock        clock.WithTicker
	// defaulter applies the apiserver's StatefulSet defaults; nil turns
	// off the comparison of revisions after defaulting.
	defaulter        func(*appsv1.StatefulSet)
	revisionEquality *lru.Cache

	setLister  appslisters.StatefulSetLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller acting through client, watching StatefulSets,
// pods, PersistentVolumeClaims and ControllerRevisions through factory
// (which the caller starts), recording events with recorder and timing
// with clk.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	setInf := factory.Apps().V1().StatefulSets()
	revInf := factory.Apps().V1().ControllerRevisions()
	podInf := factory.Core().V1().Pods()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	h, err := history.New(client, revInf)
	if err != nil {
		return nil, fmt.Errorf("statefulset controller: %w", err)
	}
	if err := controllerutil.AddPodControllerIndexer(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("statefulset controller: %w", err)
	}
	c := &Controller{
		client:   client,
		recorder: recorder,
		podControl: &podControl{
			client:      client,
			podLister:   podInf.Lister(),
			claimLister: pvcInf.Lister(),
			recorder:    recorder,
		},
		claimControl:     controllerutil.NewPodControl(client, recorder),
		history:          h,
		clock:            clk,
		defaulter:        apps.DefaultStatefulSet,
		revisionEquality: lru.New(revisionCacheSize),
		setLister:        setInf.Lister(),
		podIndexer:       podInf.Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "statefulset", Clock: clk}),
	}
	pods := &controllerutil.OwnerRouter[*appsv1.StatefulSet]{
		Kind: controllerKind.Kind,
		Get: func(namespace, name string) (*appsv1.StatefulSet, error) {
			return c.setLister.StatefulSets(namespace).Get(name)
		},
		Matching: controllerutil.SelectorMatching(func(namespace string) ([]*appsv1.StatefulSet, error) {
			return c.setLister.StatefulSets(namespace).List(labels.Everything())
		}, func(set *appsv1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }),
		Enqueue:  func(set *appsv1.StatefulSet) { c.enqueue(set) },
		OnUpdate: c.podChanged,
	}
	podReg, err := podInf.Informer().AddEventHandler(pods.Handlers())
	if err != nil {
		return nil, fmt.Errorf("statefulset controller: watch pods: %w", err)
	}
	setReg, err := setInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("statefulset controller: watch statefulsets: %w", err)
	}
	c.synced = []cache.InformerSynced{podReg.HasSynced, setReg.HasSynced, pvcInf.Informer().HasSynced, revInf.Informer().HasSynced}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/statefulset-controller, with Workers workers.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           Name,
		Aliases:        []string{"statefulset"},
		ServiceAccount: "statefulset-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory, cc.EventRecorder(Name), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, Workers) })
			return nil
		},
	}
}

// Run waits for the caches, then syncs StatefulSets with workers
// goroutines until ctx is cancelled; it returns nil then.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting stateful set controller")
	defer logger.Info("Shut down stateful set controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("statefulset controller: caches did not sync")
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
		klog.FromContext(ctx).Error(err, "Failed to sync StatefulSet, will retry", "statefulSet", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) enqueue(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		c.queue.Add(tomb.Key)
		return
	}
	if set, ok := obj.(*appsv1.StatefulSet); ok {
		c.queue.Add(set.Namespace + "/" + set.Name)
	}
}

func (c *Controller) enqueueAfter(set *appsv1.StatefulSet, d time.Duration) {
	c.queue.AddAfter(set.Namespace+"/"+set.Name, d)
}

// podChanged looks at a StatefulSet again once its pod that just became
// ready counts as available.
func (c *Controller) podChanged(set *appsv1.StatefulSet, oldObj, curObj metav1.Object) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if ok1 && ok2 && !controllerutil.IsPodReady(old) && controllerutil.IsPodReady(cur) && set.Spec.MinReadySeconds > 0 {
		c.enqueueAfter(set, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
}

// canAdopt rereads set from the apiserver before the first adoption: a
// StatefulSet being deleted, or replaced by another of the same name,
// adopts nothing.
func (c *Controller) canAdopt(set *appsv1.StatefulSet) func(context.Context) error {
	return controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != set.UID {
			return nil, fmt.Errorf("original StatefulSet %s/%s is gone: got uid %s, wanted %s", set.Namespace, set.Name, fresh.UID, set.UID)
		}
		return fresh, nil
	})
}

// podsOf returns the pods set controls, adopting orphans that match its
// selector and are named as its members, and releasing owned pods that no
// longer match. They are cached objects.
func (c *Controller) podsOf(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	pods, err := controllerutil.FilterPodsByOwner(c.podIndexer, set, controllerKind.Kind, true)
	if err != nil {
		return nil, err
	}
	m := controllerutil.NewPodRefManager(c.claimControl, set, sel, controllerKind, c.canAdopt(set))
	return m.ClaimPods(ctx, pods, func(p *corev1.Pod) bool { return isMemberOf(set, p) })
}

// sync brings the StatefulSet key one step towards its desired state.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing statefulset", "key", key, "duration", c.clock.Since(start))
	}()
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	set, err := c.setLister.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(3).Info("StatefulSet has been deleted", "key", key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get statefulset %s: %w", key, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		// Validation prevents this; nothing a retry could fix.
		logger.Error(err, "Invalid StatefulSet selector", "statefulSet", key)
		return nil
	}
	if err := c.adoptOrphanRevisions(ctx, set); err != nil {
		return err
	}
	pods, err := c.podsOf(ctx, set, sel)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	status, err := c.updateSet(ctx, set, pods, now)
	if err != nil {
		return err
	}
	// Look again when ready pods should have become available.
	if set.Spec.MinReadySeconds > 0 && status != nil && status.ReadyReplicas != status.AvailableReplicas {
		next := time.Duration(set.Spec.MinReadySeconds) * time.Second
		if d := controllerutil.FindMinNextPodAvailabilityCheck(pods, set.Spec.MinReadySeconds, now, c.clock); d != nil {
			next = *d
		}
		c.enqueueAfter(set, next)
	}
	return nil
}
