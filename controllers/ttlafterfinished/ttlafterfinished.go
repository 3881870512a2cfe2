package ttlafterfinished

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// DefaultWorkers is the number of Jobs examined at once, as upstream's
// --concurrent-ttl-after-finished-syncs default.
const DefaultWorkers = 5

// Controller deletes finished Jobs once their TTL has run out. Create it
// with New; Run may be called once.
type Controller struct {
	client kubernetes.Interface
	lister batchlisters.JobLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.WithTicker
}

// New returns a controller that deletes Jobs with client, watching them
// through jobs (started by the caller) and reading the time from clk, which
// also drives the queue's delays.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: jobs.Lister(),
		clock:  clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ttl_jobs_to_delete", Clock: clk}),
	}
	reg, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("ttl-after-finished controller: watch jobs: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/ttl-after-finished-controller with DefaultWorkers workers.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "ttl-after-finished-controller",
		Aliases:        []string{"ttl-after-finished"},
		ServiceAccount: "ttl-after-finished-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Batch().V1().Jobs(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

func (c *Controller) enqueue(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok || job.DeletionTimestamp != nil || !needsCleanup(job) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(job)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

// Run waits for the cache, then deletes expired Jobs with workers
// goroutines until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting TTL after finished controller")
	defer logger.Info("Shut down TTL after finished controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("ttl-after-finished controller: cache did not sync")
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
		klog.FromContext(ctx).Error(err, "Failed to clean up Job, will retry", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync deletes the Job key when its TTL has run out, or queues it again
// for the moment it will. The cached Job is checked first; the decision to
// delete is confirmed on a fresh read, since the TTL may have been changed
// or the Job replaced, and the delete is guarded by the Job's UID.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	job, err := c.lister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expired, err := c.expired(logger, key, job); err != nil || !expired {
		return err
	}

	fresh, err := c.client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	if expired, err := c.expired(logger, key, fresh); err != nil || !expired {
		return err
	}
	policy := metav1.DeletePropagationBackground
	err = c.client.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	})
	switch {
	case err == nil:
		logger.V(2).Info("Deleted finished Job after its TTL", "job", klog.KObj(fresh))
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by a Job of the same name.
		return nil
	default:
		return fmt.Errorf("delete job %s: %w", key, err)
	}
}

// expired reports whether job is finished, has a TTL, is not being deleted
// and has outlived its TTL. A Job whose TTL has yet to run out is queued
// again for that moment.
func (c *Controller) expired(logger klog.Logger, key string, job *batchv1.Job) (bool, error) {
	if job.DeletionTimestamp != nil || !needsCleanup(job) {
		return false, nil
	}
	finishedAt, err := finishTime(job)
	if err != nil {
		return false, err
	}
	now := c.clock.Now()
	if finishedAt.After(now) {
		logger.Info("Job finished in the future, probably clock skew; cleanup deferred", "job", klog.KObj(job), "finishTime", finishedAt.UTC())
	}
	left := finishedAt.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second).Sub(now)
	if left > 0 {
		logger.V(4).Info("Job TTL not yet expired", "job", klog.KObj(job), "remaining", left)
		c.queue.AddAfter(key, left)
		return false, nil
	}
	return true, nil
}

// needsCleanup reports whether job has a TTL and has finished.
func needsCleanup(job *batchv1.Job) bool {
	if job.Spec.TTLSecondsAfterFinished == nil {
		return false
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// finishTime is the lastTransitionTime of the Job's true Complete or
// Failed condition.
func finishTime(job *batchv1.Job) (time.Time, error) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if c.LastTransitionTime.IsZero() {
				return time.Time{}, fmt.Errorf("job %s/%s: %s condition has no lastTransitionTime", job.Namespace, job.Name, c.Type)
			}
			return c.LastTransitionTime.Time, nil
		}
	}
	return time.Time{}, fmt.Errorf("job %s/%s has not finished", job.Namespace, job.Name)
}
