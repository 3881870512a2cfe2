package replicaset

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/controllerutil"
	"github.com/k1s/k1s/controllers/manager"
)

// Name is the controller's name in --controllers and in events.
const Name = "replicaset-controller"

// BurstReplicas caps the pods one sync creates or deletes; the rest wait
// for the next sync, after the expectations are met.
const BurstReplicas = 500

// controllerUIDIndex indexes the owners by their controller's UID.
const controllerUIDIndex = "controllerUID"

// DefaultConcurrentSyncs is the default of Config.ConcurrentSyncs.
const DefaultConcurrentSyncs = 5

var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Config is the controller's configuration.
type Config struct {
	// ConcurrentSyncs is how many ReplicaSets sync at once
	// (--concurrent-replicaset-syncs). Default 5.
	ConcurrentSyncs int
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.ConcurrentSyncs == 0 {
		c.ConcurrentSyncs = DefaultConcurrentSyncs
	}
}

// Validate checks the configuration, naming the flag.
func (c *Config) Validate() error {
	if c.ConcurrentSyncs < 1 {
		return fmt.Errorf("--concurrent-replicaset-syncs: %d must be at least 1", c.ConcurrentSyncs)
	}
	return nil
}

// Controller syncs ReplicaSets, or other Owners seen as ReplicaSets, with
// their pods. Create it with New or NewFor; Run may be called once.
type Controller struct {
	owners       Owners
	kind         schema.GroupVersionKind
	podControl   controllerutil.PodControl
	expectations *controllerutil.UIDTrackingExpectations
	clock        clock.WithTicker
	burst        int

	// pods routes pod events to their owners.
	pods       *controllerutil.OwnerRouter[*appsv1.ReplicaSet]
	rsIndexer  cache.Indexer
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller of ReplicaSets acting through client, watching
// ReplicaSets and pods through the informers (which the caller starts),
// recording events with recorder and timing with clk (clock.RealClock{}
// when nil).
func New(client kubernetes.Interface, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	return NewFor(ReplicaSets(client, rsInformer), client, podInformer, recorder, clk)
}

// NewFor returns a controller keeping the replicas of owners, creating and
// deleting pods through client, watching pods through podInformer (the
// caller starts it and the owners' informer), recording events on the
// owners with recorder and timing with clk (clock.RealClock{} when nil).
func NewFor(owners Owners, client kubernetes.Interface, podInformer coreinformers.PodInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	kind := owners.Kind()
	name := strings.ToLower(kind.Kind)
	c := &Controller{
		owners:       owners,
		kind:         kind,
		podControl:   controllerutil.NewPodControl(client, recorder),
		expectations: controllerutil.NewUIDTrackingExpectations(controllerutil.NewControllerExpectations(clk)),
		clock:        clk,
		burst:        BurstReplicas,
		podLister:    podInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk}),
	}
	rsInf := owners.Informer()
	if _, ok := rsInf.GetIndexer().GetIndexers()[controllerUIDIndex]; !ok {
		if err := rsInf.AddIndexers(cache.Indexers{controllerUIDIndex: indexByControllerUID}); err != nil {
			return nil, fmt.Errorf("%s controller: index %s objects: %w", name, kind.Kind, err)
		}
	}
	c.rsIndexer = rsInf.GetIndexer()
	rsReg, err := rsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addRS,
		UpdateFunc: c.updateRS,
		DeleteFunc: c.deleteRS,
	})
	if err != nil {
		return nil, fmt.Errorf("%s controller: watch %s objects: %w", name, kind.Kind, err)
	}
	podInf := podInformer.Informer()
	if err := controllerutil.AddPodControllerIndexer(podInf); err != nil {
		return nil, fmt.Errorf("%s controller: %w", name, err)
	}
	c.podIndexer = podInf.GetIndexer()
	c.pods = &controllerutil.OwnerRouter[*appsv1.ReplicaSet]{
		Kind: kind.Kind,
		Get: func(namespace, name string) (*appsv1.ReplicaSet, error) {
			rs, ok := c.cached(namespace + "/" + name)
			if !ok {
				return nil, fmt.Errorf("%s %s/%s is not in the cache", kind.Kind, namespace, name)
			}
			return rs, nil
		},
		Matching: c.matching,
		Enqueue:  func(rs *appsv1.ReplicaSet) { c.enqueue(rs) },
		OnCreate: func(rs *appsv1.ReplicaSet, _ metav1.Object) { c.expectations.CreationObserved(key(rs)) },
		OnDelete: func(rs *appsv1.ReplicaSet, obj metav1.Object) {
			if pod, ok := obj.(*corev1.Pod); ok {
				c.expectations.DeletionObserved(key(rs), controllerutil.PodKey(pod))
			}
		},
		OnUpdate: c.podChanged,
	}
	podReg, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	if err != nil {
		return nil, fmt.Errorf("%s controller: watch pods: %w", name, err)
	}
	c.synced = []cache.InformerSynced{rsReg.HasSynced, podReg.HasSynced}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/replicaset-controller.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           Name,
		Aliases:        []string{"replicaset"},
		ServiceAccount: "replicaset-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			cfg.SetDefaults()
			if err := cfg.Validate(); err != nil {
				return err
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Apps().V1().ReplicaSets(), cc.InformerFactory.Core().V1().Pods(), cc.EventRecorder(Name), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentSyncs) })
			return nil
		},
	}
}

func indexByControllerUID(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}

// Run waits for the caches, then syncs the owners with workers goroutines
// until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx).WithValues("kind", c.kind.Kind)
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()
	logger.Info("Starting controller")
	defer logger.Info("Shut down controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s controller: caches did not sync", strings.ToLower(c.kind.Kind))
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
		klog.FromContext(ctx).Error(err, "Failed to sync, will retry", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func key(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

func (c *Controller) enqueue(rs metav1.Object) { c.queue.Add(key(rs)) }

// cached is the owner with key ("namespace/name") in the informer's cache,
// seen as a ReplicaSet.
func (c *Controller) cached(key string) (*appsv1.ReplicaSet, bool) {
	obj, exists, err := c.rsIndexer.GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	return c.owners.AsReplicaSet(obj)
}

// The owners' own events need their metadata only: no conversion.
func (c *Controller) addRS(obj any) {
	if o, err := meta.Accessor(obj); err == nil {
		c.enqueue(o)
	}
}

func (c *Controller) updateRS(oldObj, newObj any) {
	old, err1 := meta.Accessor(oldObj)
	cur, err2 := meta.Accessor(newObj)
	if err1 != nil || err2 != nil {
		return
	}
	// Deleted and recreated under the same name between two events: the
	// old one's expectations must go.
	if old.GetUID() != cur.GetUID() {
		c.deleteRS(cache.DeletedFinalStateUnknown{Key: key(old), Obj: oldObj})
	}
	// Every update syncs, not only spec changes: a resync then retries
	// owners whose last creations failed.
	c.enqueue(cur)
}

func (c *Controller) deleteRS(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	c.expectations.DeleteExpectations(key(o))
	c.enqueue(o)
}

// matching returns the owners whose selector matches an orphan's labels.
func (c *Controller) matching(namespace string, lbls map[string]string) []*appsv1.ReplicaSet {
	rss := controllerutil.SelectorMatching(func(namespace string) ([]*appsv1.ReplicaSet, error) {
		var out []*appsv1.ReplicaSet
		err := cache.ListAllByNamespace(c.rsIndexer, namespace, labels.Everything(), func(obj any) {
			if rs, ok := c.owners.AsReplicaSet(obj); ok {
				out = append(out, rs)
			}
		})
		return out, err
	}, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector })(namespace, lbls)
	if len(rss) > 1 {
		utilruntime.HandleError(fmt.Errorf("user error: more than one %s selects pods with labels %v", c.kind.Kind, lbls))
	}
	return rss
}

// addPod: a pod seen being deleted already (after a restart, say) is no
// creation; an orphan wakes whoever may adopt it, and no creation was
// expected of them.
func (c *Controller) addPod(obj any) { c.pods.Add(obj) }

func (c *Controller) updatePod(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || cur.ResourceVersion == old.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		// A graceful deletion began: act now rather than when the pod
		// finally goes.
		c.deletePod(cur)
		if !reflect.DeepEqual(cur.Labels, old.Labels) {
			c.deletePod(old)
		}
		return
	}
	c.pods.Changed(old, cur)
}

// podChanged: a pod that just became ready becomes available
// minReadySeconds later; nothing else would wake the ReplicaSet then.
func (c *Controller) podChanged(rs *appsv1.ReplicaSet, oldObj, curObj metav1.Object) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if ok1 && ok2 && !controllerutil.IsPodReady(old) && controllerutil.IsPodReady(cur) && rs.Spec.MinReadySeconds > 0 {
		c.queue.AddAfter(key(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
	}
}

func (c *Controller) deletePod(obj any) { c.pods.Delete(obj) }

// sync brings one owner's pods to spec.replicas, if its expectations are
// met, and writes its status.
func (c *Controller) sync(ctx context.Context, rsKey string) error {
	logger := klog.FromContext(ctx)
	rs, ok := c.cached(rsKey)
	if !ok {
		c.expectations.DeleteExpectations(rsKey)
		return nil
	}
	needsSync := c.expectations.SatisfiedExpectations(rsKey)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Validation rejects such selectors; nothing to retry.
		utilruntime.HandleError(fmt.Errorf("%s %s: selector: %w", c.kind.Kind, rsKey, err))
		return nil
	}
	all, err := controllerutil.FilterPodsByOwner(c.podIndexer, rs, c.kind.Kind, true)
	if err != nil {
		return err
	}
	active, err := c.claimPods(ctx, rs, selector, controllerutil.FilterActivePods(all))
	if err != nil {
		return err
	}
	terminating := controllerutil.FilterClaimedPods(rs, selector, controllerutil.FilterTerminatingPods(all))

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, active, rs)
	}
	now := c.clock.Now()
	status := calculateStatus(rs, active, terminating, manageErr, now, c.owners.TerminatingReplicas())
	updated, err := c.updateStatus(ctx, rs.DeepCopy(), status)
	if err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	if updated.Spec.MinReadySeconds > 0 && updated.Status.ReadyReplicas != updated.Status.AvailableReplicas {
		next := time.Duration(updated.Spec.MinReadySeconds) * time.Second
		if d := controllerutil.FindMinNextPodAvailabilityCheck(active, updated.Spec.MinReadySeconds, now, c.clock); d != nil {
			next = *d
		}
		logger.V(4).Info("Checking availability again", "replicaSet", klog.KObj(rs), "after", next)
		c.queue.AddAfter(rsKey, next)
	}
	return nil
}

// claimPods adopts and releases pods for rs, rechecking rs live before the
// first adoption.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.owners.Get(ctx, rs.Namespace, rs.Name)
		if err != nil {
			return nil, err
		}
		if fresh.UID != rs.UID {
			return nil, fmt.Errorf("original %s %s/%s is gone: got uid %v, wanted %v", c.kind.Kind, rs.Namespace, rs.Name, fresh.UID, rs.UID)
		}
		return fresh, nil
	})
	return controllerutil.NewPodRefManager(c.podControl, rs, selector, c.kind, canAdopt).ClaimPods(ctx, pods)
}

// manageReplicas creates or deletes pods so that active matches
// spec.replicas, at most burst at a time. It does not modify active.
func (c *Controller) manageReplicas(ctx context.Context, active []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	logger := klog.FromContext(ctx)
	rsKey := key(rs)
	// Events name the owner as its own kind.
	owner := c.owners.Object(rs)
	diff := len(active) - int(replicas(rs))
	switch {
	case diff < 0:
		n := min(-diff, c.burst)
		c.expectations.ExpectCreations(rsKey, n)
		logger.V(2).Info("Too few replicas", "replicaSet", klog.KObj(rs), "need", replicas(rs), "creating", n)
		ref := controllerutil.NewControllerRef(rs, c.kind)
		created, err := slowStartBatch(n, 1, func() error {
			err := c.podControl.CreatePods(ctx, rs.Namespace, &rs.Spec.Template, owner, ref)
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// Every creation fails in a terminating namespace; no error.
				return nil
			}
			return err
		})
		// Creations never attempted will not be observed.
		if skipped := n - created; skipped > 0 {
			logger.V(2).Info("Slow-start failure, skipping pod creations", "replicaSet", klog.KObj(rs), "skipped", skipped)
			c.expectations.LowerExpectations(rsKey, skipped, 0)
		}
		return err
	case diff > 0:
		n := min(diff, c.burst)
		logger.V(2).Info("Too many replicas", "replicaSet", klog.KObj(rs), "need", replicas(rs), "deleting", n)
		related, err := c.relatedPods(rs)
		if err != nil {
			utilruntime.HandleError(err)
		}
		victims := podsToDelete(active, related, n, metav1.NewTime(c.clock.Now()))
		keys := make([]string, 0, len(victims))
		for _, p := range victims {
			keys = append(keys, controllerutil.PodKey(p))
		}
		// Deletions count once each, whether seen as the update setting
		// deletionTimestamp or as the delete itself.
		c.expectations.ExpectDeletions(rsKey, keys)
		errCh := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Go(func() {
				if err := c.podControl.DeletePod(ctx, rs.Namespace, p.Name, owner); err != nil {
					c.expectations.DeletionObserved(rsKey, controllerutil.PodKey(p))
					if !apierrors.IsNotFound(err) {
						errCh <- err
					}
				}
			})
		}
		wg.Wait()
		select {
		case err := <-errCh:
			return err
		default:
		}
	}
	return nil
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// slowStartBatch calls fn count times in batches of initial, 2*initial,
// 4*initial, ... (each batch concurrently), stopping after the first batch
// with a failure. It returns the number of successful calls and one of the
// errors.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errCh := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errCh <- err
				}
			})
		}
		wg.Wait()
		successes += batch - len(errCh)
		if len(errCh) > 0 {
			return successes, <-errCh
		}
		remaining -= batch
	}
	return successes, nil
}

// relatedPods returns the pods of every owner sharing rs's controller
// (rs's own when it has none), each once.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	sets := []*appsv1.ReplicaSet{rs}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		objs, err := c.rsIndexer.ByIndex(controllerUIDIndex, string(ref.UID))
		if err != nil {
			return nil, fmt.Errorf("%s objects of controller %s: %w", c.kind.Kind, ref.UID, err)
		}
		sets = sets[:0]
		for _, o := range objs {
			if r, ok := c.owners.AsReplicaSet(o); ok {
				sets = append(sets, r)
			}
		}
	}
	seen := map[string]bool{}
	var out []*corev1.Pod
	for _, r := range sets {
		sel, err := metav1.LabelSelectorAsSelector(r.Spec.Selector)
		if err != nil {
			continue
		}
		pods, err := c.podLister.Pods(r.Namespace).List(sel)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[string(p.UID)] {
				seen[string(p.UID)] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// podsToDelete picks n of pods to delete: all when n covers them,
// otherwise the first n in deletion order, each ranked by the number of
// active related pods on its node. It does not reorder pods.
func podsToDelete(pods, related []*corev1.Pod, n int, now metav1.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if controllerutil.IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := controllerutil.ActivePodsWithRanks{Pods: append([]*corev1.Pod(nil), pods...), Rank: make([]int, len(pods)), Now: now}
	for i, p := range ranked.Pods {
		ranked.Rank[i] = onNode[p.Spec.NodeName]
	}
	sort.Stable(ranked)
	return ranked.Pods[:n]
}
