package job

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/controllerutil"
	"github.com/k1s/k1s/controllers/manager"
)

// ControllerName is the controller's name in events and the value of
// spec.managedBy that selects it.
const ControllerName = "job-controller"

// DefaultWorkers is the number of Jobs synced at once, as upstream's
// --concurrent-job-syncs default.
const DefaultWorkers = 5

// Timing and size limits, as upstream's.
const (
	// syncBatchPeriod delays syncs caused by pod events and Job status
	// updates, so that bursts collapse into one sync.
	syncBatchPeriod = time.Second
	// apiBackoff and maxAPIBackoff bound the retry of a failed sync.
	apiBackoff    = time.Second
	maxAPIBackoff = time.Minute
	// podFailureBackoff is the delay before a failed pod is replaced,
	// doubled with each further failure up to maxPodFailureBackoff.
	podFailureBackoff    = 10 * time.Second
	maxPodFailureBackoff = 10 * time.Minute
	// maxUncountedPods caps status.uncountedTerminatedPods (and the
	// finalizers removed in one sync), keeping the status small.
	maxUncountedPods = 500
	// maxPodCreateDeletePerSync caps the pods created or deleted in one
	// sync.
	maxPodCreateDeletePerSync = 500
	// slowStartInitialBatchSize is the first batch of pod creations; each
	// successful batch doubles the next.
	slowStartInitialBatchSize = 1
)

// controllerKind is the kind of the owner references the controller sets.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Controller keeps the pods of every Job in line with its spec and records
// its progress in its status. Create it with New; Run may be called once.
type Controller struct {
	client     kubernetes.Interface
	podControl controllerutil.PodControl
	recorder   record.EventRecorder
	clock      clock.WithTicker

	jobLister  batchlisters.JobLister
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced

	// expectations counts pod creations and deletions not yet seen.
	expectations *controllerutil.ControllerExpectations
	// finalizers holds, per Job, the pods whose tracking finalizer the
	// controller removed but whose update it has not seen yet.
	finalizers *uidExpectations
	// backoff holds per Job the failures since the last success.
	backoff *backoffStore
	// finished holds the UIDs of Jobs the controller marked finished but
	// whose update it has not seen yet; their syncs are skipped.
	finished sync.Map

	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[orphanKey]

	// Delays, changed by tests.
	batchPeriod       time.Duration
	failureBackoff    time.Duration
	maxFailureBackoff time.Duration
}

// orphanKey names pods whose tracking finalizer may have to be removed
// because no unfinished Job owns them: one pod (name) or every pod of a
// namespace matching a selector.
type orphanKey struct {
	namespace string
	name      string
	selector  string
}

// New returns a Job controller that acts with client, records events with
// recorder and reads the time from clk (which also drives its queues),
// watching pods and Jobs through the informers (started by the caller).
func New(client kubernetes.Interface, pods coreinformers.PodInformer, jobs batchinformers.JobInformer,
	recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:            client,
		podControl:        controllerutil.NewPodControl(client, recorder),
		recorder:          recorder,
		clock:             clk,
		jobLister:         jobs.Lister(),
		podLister:         pods.Lister(),
		podIndexer:        pods.Informer().GetIndexer(),
		expectations:      controllerutil.NewControllerExpectations(clk),
		finalizers:        newUIDExpectations(),
		backoff:           newBackoffStore(),
		batchPeriod:       syncBatchPeriod,
		failureBackoff:    podFailureBackoff,
		maxFailureBackoff: maxPodFailureBackoff,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](apiBackoff, maxAPIBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job", Clock: clk}),
		orphanQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[orphanKey](apiBackoff, maxAPIBackoff),
			workqueue.TypedRateLimitingQueueConfig[orphanKey]{Name: "job_orphan_pod", Clock: clk}),
	}
	if err := controllerutil.AddPodControllerIndexer(pods.Informer()); err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	jobReg, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addJob,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	})
	if err != nil {
		return nil, fmt.Errorf("job controller: watch jobs: %w", err)
	}
	podReg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: func(obj any) { c.deletePod(obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("job controller: watch pods: %w", err)
	}
	c.synced = []cache.InformerSynced{jobReg.HasSynced, podReg.HasSynced}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/job-controller with DefaultWorkers workers.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "job-controller",
		Aliases:        []string{"job"},
		ServiceAccount: "job-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Core().V1().Pods(), cc.InformerFactory.Batch().V1().Jobs(),
				cc.EventRecorder(ControllerName), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

// Run waits for the caches, then syncs Jobs and cleans orphan pods with
// workers goroutines each until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	defer c.orphanQueue.ShutDown()
	logger.Info("Starting job controller")
	defer logger.Info("Shut down job controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("job controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
		wg.Go(func() {
			for c.processNextOrphan(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.orphanQueue.ShutDown()
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
		klog.FromContext(ctx).Error(err, "Failed to sync Job, will retry", "job", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) processNextOrphan(ctx context.Context) bool {
	key, quit := c.orphanQueue.Get()
	if quit {
		return false
	}
	defer c.orphanQueue.Done(key)
	if err := c.syncOrphan(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to clean up orphan pod, will retry", "namespace", key.namespace, "pod", key.name, "selector", key.selector)
		c.orphanQueue.AddRateLimited(key)
		return true
	}
	c.orphanQueue.Forget(key)
	return true
}

func jobKey(job *batchv1.Job) string { return job.Namespace + "/" + job.Name }

// enqueue queues the Job's sync after delay.
func (c *Controller) enqueue(job *batchv1.Job, delay time.Duration) {
	c.queue.AddAfter(jobKey(job), delay)
}

// enqueueBatched queues the Job's sync after the batch period, or after
// delay when that is longer.
func (c *Controller) enqueueBatched(job *batchv1.Job, delay time.Duration) {
	c.enqueue(job, max(delay, c.batchPeriod))
}

func (c *Controller) enqueueOrphanPod(pod *corev1.Pod) {
	c.orphanQueue.Add(orphanKey{namespace: pod.Namespace, name: pod.Name})
}

// enqueueOrphansOf queues the clean-up of the pods the Job's selector
// matches, for a Job that finished or went away.
func (c *Controller) enqueueOrphansOf(job *batchv1.Job) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return
	}
	c.orphanQueue.Add(orphanKey{namespace: job.Namespace, selector: sel.String()})
}

func asJob(obj any) *batchv1.Job {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	job, _ := obj.(*batchv1.Job)
	return job
}

func asPod(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

func (c *Controller) addJob(obj any) {
	if job := asJob(obj); job != nil {
		c.enqueue(job, 0)
	}
}

func (c *Controller) updateJob(oldObj, newObj any) {
	old, cur := asJob(oldObj), asJob(newObj)
	if old == nil || cur == nil {
		return
	}
	// A finished Job keeps no finalizers on its pods; make sure of it.
	if isFinished(cur) {
		c.enqueueOrphansOf(cur)
		return
	}
	if cur.Generation == old.Generation {
		// A status update, usually after pod events: batch it.
		c.enqueueBatched(cur, 0)
	} else {
		c.enqueue(cur, 0)
	}
	// A changed deadline needs a sync when it runs out.
	if cur.Status.StartTime != nil && cur.Spec.ActiveDeadlineSeconds != nil &&
		(old.Spec.ActiveDeadlineSeconds == nil || *old.Spec.ActiveDeadlineSeconds != *cur.Spec.ActiveDeadlineSeconds) {
		left := time.Duration(*cur.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(cur.Status.StartTime.Time)
		c.enqueue(cur, left)
	}
}

func (c *Controller) deleteJob(obj any) {
	job := asJob(obj)
	if job == nil {
		return
	}
	c.enqueue(job, 0)
	c.finished.Delete(job.UID)
	c.enqueueOrphansOf(job)
	c.backoff.remove(jobKey(job))
}

// resolveControllerRef returns the Job ref names, if it is in the cache
// with that UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	job, err := c.jobLister.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// jobsSelecting returns the Jobs whose selector matches the orphan pod.
func (c *Controller) jobsSelecting(pod *corev1.Pod) []*batchv1.Job {
	jobs, err := c.jobLister.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, job := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, job)
	}
	return out
}

func (c *Controller) addPod(obj any) {
	pod := asPod(obj)
	if pod == nil {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen first while being deleted (e.g. after a restart): not a
		// creation this controller waits for.
		c.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		job := c.resolveControllerRef(pod.Namespace, ref)
		if job == nil {
			return
		}
		c.expectations.CreationObserved(jobKey(job))
		c.enqueueBatched(job, 0)
		return
	}
	if hasTrackingFinalizer(pod) {
		c.enqueueOrphanPod(pod)
	}
	for _, job := range c.jobsSelecting(pod) {
		c.enqueueBatched(job, 0)
	}
}

func (c *Controller) updatePod(oldObj, newObj any) {
	old, cur := asPod(oldObj), asPod(newObj)
	if old == nil || cur == nil || cur.ResourceVersion == old.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		// Graceful deletion has begun: the Job may replace the pod now.
		c.deletePod(cur, false)
		return
	}
	// The finalizer may have been removed and added again (an ownership
	// change); only the latest state counts.
	finalizerGone := !hasTrackingFinalizer(cur)
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.resolveControllerRef(old.Namespace, oldRef); job != nil {
			if finalizerGone {
				c.finalizers.observed(jobKey(job), cur.UID)
			}
			c.enqueueBatched(job, 0)
		}
	}
	if curRef != nil {
		job := c.resolveControllerRef(cur.Namespace, curRef)
		if job == nil {
			return
		}
		if finalizerGone {
			c.finalizers.observed(jobKey(job), cur.UID)
		}
		c.enqueueBatched(job, 0)
		return
	}
	if hasTrackingFinalizer(cur) {
		c.enqueueOrphanPod(cur)
	}
	if refChanged || !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, job := range c.jobsSelecting(cur) {
			c.enqueueBatched(job, 0)
		}
	}
}

// deletePod handles a pod deletion: the final delete event (final) or the
// update that set its deletionTimestamp.
func (c *Controller) deletePod(obj any, final bool) {
	pod := asPod(obj)
	if pod == nil {
		return
	}
	ref := metav1.GetControllerOf(pod)
	hasFinalizer := hasTrackingFinalizer(pod)
	if ref == nil {
		// Possibly a Job's pod whose reference the garbage collector
		// removed: no Job will count it, so drop its finalizer.
		if hasFinalizer {
			c.enqueueOrphanPod(pod)
		}
		return
	}
	job := c.resolveControllerRef(pod.Namespace, ref)
	if job == nil || isFinished(job) {
		if hasFinalizer {
			c.enqueueOrphanPod(pod)
		}
		return
	}
	key := jobKey(job)
	c.expectations.DeletionObserved(key)
	if final || !hasFinalizer {
		c.finalizers.observed(key, pod.UID)
	}
	c.enqueueBatched(job, 0)
}

// syncOrphan removes the tracking finalizer from the pods key names that
// no unfinished Job controls.
func (c *Controller) syncOrphan(ctx context.Context, key orphanKey) error {
	if key.name != "" {
		pod, err := c.podLister.Pods(key.namespace).Get(key.name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return c.cleanOrphan(ctx, pod)
	}
	sel, err := labels.Parse(key.selector)
	if err != nil {
		return fmt.Errorf("orphan pods of selector %q: %w", key.selector, err)
	}
	pods, err := c.podLister.Pods(key.namespace).List(sel)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if err := c.cleanOrphan(ctx, pod); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to remove the tracking finalizer of an orphan pod", "pod", klog.KObj(pod))
			c.orphanQueue.AddRateLimited(orphanKey{namespace: pod.Namespace, name: pod.Name})
		}
	}
	return nil
}

// cleanOrphan removes the pod's tracking finalizer unless an unfinished
// Job (or another controller) controls it.
func (c *Controller) cleanOrphan(ctx context.Context, pod *corev1.Pod) error {
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind != controllerKind.Kind || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return nil
		}
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil {
			if managedElsewhere(job) || !isFinished(job) {
				return nil
			}
		}
	}
	err := c.podControl.PatchPod(ctx, pod.Namespace, pod.Name, removeFinalizerPatch)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove tracking finalizer of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// uidExpectations records, per Job key, the pods whose finalizer removal
// the controller waits to observe. Safe for concurrent use.
type uidExpectations struct {
	mu sync.Mutex
	m  map[string]map[types.UID]bool
}

func newUIDExpectations() *uidExpectations {
	return &uidExpectations{m: map[string]map[types.UID]bool{}}
}

func (u *uidExpectations) expect(key string, uids ...types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.m[key]
	if s == nil {
		s = map[types.UID]bool{}
		u.m[key] = s
	}
	for _, uid := range uids {
		s[uid] = true
	}
}

func (u *uidExpectations) observed(key string, uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m[key], uid)
}

// expected returns a copy of the UIDs still expected for key.
func (u *uidExpectations) expected(key string) map[types.UID]bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[types.UID]bool, len(u.m[key]))
	for uid := range u.m[key] {
		out[uid] = true
	}
	return out
}

func (u *uidExpectations) forget(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, key)
}
