package cronjob

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// ControllerName is the controller's name in events.
const ControllerName = "cronjob-controller"

// DefaultWorkers is the number of CronJobs synced at once, as upstream's
// --concurrent-cron-job-syncs default.
const DefaultWorkers = 5

// jobOwnerIndex indexes Jobs by the UID of their controller.
const jobOwnerIndex = "cronjob-controller-uid"

var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller creates the Jobs of CronJobs on schedule. Create it with New;
// Run may be called once.
type Controller struct {
	client        kubernetes.Interface
	recorder      record.EventRecorder
	clock         clock.WithTicker
	cronJobLister batchlisters.CronJobLister
	jobIndexer    cache.Indexer
	synced        []cache.InformerSynced
	queue         workqueue.TypedRateLimitingInterface[string]
}

// New returns a CronJob controller that acts with client, records events
// with recorder and reads the time from clk (which also drives the queue's
// delays, so a fake clock decides when schedules fire), watching Jobs and
// CronJobs through the informers (started by the caller).
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, cronJobs batchinformers.CronJobInformer,
	recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:        client,
		recorder:      recorder,
		clock:         clk,
		cronJobLister: cronJobs.Lister(),
		jobIndexer:    jobs.Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cronjob", Clock: clk}),
	}
	if _, ok := jobs.Informer().GetIndexer().GetIndexers()[jobOwnerIndex]; !ok {
		if err := jobs.Informer().AddIndexers(cache.Indexers{jobOwnerIndex: func(obj any) ([]string, error) {
			job, ok := obj.(*batchv1.Job)
			if !ok {
				return nil, nil
			}
			if ref := metav1.GetControllerOfNoCopy(job); ref != nil {
				return []string{string(ref.UID)}, nil
			}
			return nil, nil
		}}); err != nil {
			return nil, fmt.Errorf("cronjob controller: index jobs: %w", err)
		}
	}
	jobReg, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addJob,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	})
	if err != nil {
		return nil, fmt.Errorf("cronjob controller: watch jobs: %w", err)
	}
	cjReg, err := cronJobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.updateCronJob,
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("cronjob controller: watch cronjobs: %w", err)
	}
	c.synced = []cache.InformerSynced{jobReg.HasSynced, cjReg.HasSynced}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/cronjob-controller with DefaultWorkers workers.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "cronjob-controller",
		Aliases:        []string{"cronjob"},
		ServiceAccount: "cronjob-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Batch().V1().Jobs(), cc.InformerFactory.Batch().V1().CronJobs(),
				cc.EventRecorder(ControllerName), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

// Run waits for the caches, then syncs CronJobs with workers goroutines
// until ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting cronjob controller")
	defer logger.Info("Shut down cronjob controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("cronjob controller: caches did not sync")
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
	requeueAfter, err := c.sync(ctx, key)
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Failed to sync CronJob, will retry", "cronjob", key)
		c.queue.AddRateLimited(key)
	case requeueAfter != nil:
		c.queue.Forget(key)
		c.queue.AddAfter(key, *requeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

func cronJobKey(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return key, err == nil
}

func (c *Controller) enqueue(obj any) {
	if key, ok := cronJobKey(obj); ok {
		c.queue.Add(key)
	}
}

// updateCronJob syncs a CronJob at once, or, when its schedule changed, at
// the new schedule's next time.
func (c *Controller) updateCronJob(oldObj, newObj any) {
	old, okOld := oldObj.(*batchv1.CronJob)
	cur, okCur := newObj.(*batchv1.CronJob)
	if !okOld || !okCur {
		return
	}
	if old.Spec.Schedule == cur.Spec.Schedule && reflect.DeepEqual(old.Spec.TimeZone, cur.Spec.TimeZone) {
		c.enqueue(cur)
		return
	}
	sched, err := parseSchedule(cur)
	if err != nil {
		c.recorder.Eventf(cur, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cur.Spec.Schedule)
		return
	}
	key, ok := cronJobKey(cur)
	if !ok {
		return
	}
	if d := nextScheduleDelay(cur, c.clock.Now(), sched); d != nil {
		c.queue.AddAfter(key, *d)
	}
}

// owner returns the CronJob controlling job, if it is in the cache.
func (c *Controller) owner(job *batchv1.Job, ref *metav1.OwnerReference) *batchv1.CronJob {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	cj, err := c.cronJobLister.CronJobs(job.Namespace).Get(ref.Name)
	if err != nil || cj.UID != ref.UID {
		return nil
	}
	return cj
}

func asJob(obj any) *batchv1.Job {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	job, _ := obj.(*batchv1.Job)
	return job
}

func (c *Controller) addJob(obj any) {
	job := asJob(obj)
	if job == nil {
		return
	}
	if cj := c.owner(job, metav1.GetControllerOf(job)); cj != nil {
		c.enqueue(cj)
	}
}

func (c *Controller) updateJob(oldObj, newObj any) {
	old, cur := asJob(oldObj), asJob(newObj)
	if old == nil || cur == nil || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	if !reflect.DeepEqual(oldRef, curRef) {
		if cj := c.owner(old, oldRef); cj != nil {
			c.enqueue(cj)
		}
	}
	if cj := c.owner(cur, curRef); cj != nil {
		c.enqueue(cj)
	}
}

func (c *Controller) deleteJob(obj any) {
	c.addJob(obj)
}

// sync reconciles the CronJob key: it drops finished and vanished Jobs
// from status.active, deletes the Jobs beyond the history limits, starts
// the Job of the latest scheduled time if due, and writes the status. It
// returns when to sync again for the next scheduled time (nil: not on a
// schedule).
func (c *Controller) sync(ctx context.Context, key string) (*time.Duration, error) {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, err
	}
	cached, err := c.cronJobLister.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("CronJob not found, probably deleted", "cronjob", key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	objs, err := c.jobIndexer.ByIndex(jobOwnerIndex, string(cached.UID))
	if err != nil {
		return nil, err
	}
	var jobs []*batchv1.Job
	for _, o := range objs {
		if j, ok := o.(*batchv1.Job); ok {
			jobs = append(jobs, j)
		}
	}
	cj := cached.DeepCopy()
	cleaned := c.cleanupFinishedJobs(ctx, cj, jobs)
	requeueAfter, changed, syncErr := c.syncCronJob(ctx, cj, jobs)
	if syncErr != nil {
		logger.V(2).Info("Error reconciling CronJob", "cronjob", klog.KObj(cj), "err", syncErr)
	}
	if cleaned || changed {
		if _, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("update status of cronjob %s: %w", key, err)
		}
	}
	if requeueAfter != nil {
		logger.V(4).Info("Requeuing CronJob for its next schedule", "cronjob", klog.KObj(cj), "after", *requeueAfter)
		return requeueAfter, nil
	}
	return nil, syncErr
}

// finishedCondition returns Complete or Failed when the Job has finished.
func finishedCondition(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

func inActive(cj *batchv1.CronJob, uid types.UID) bool {
	for _, r := range cj.Status.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func inActiveByName(cj *batchv1.CronJob, name string) bool {
	for _, r := range cj.Status.Active {
		if r.Name == name && r.Namespace == cj.Namespace {
			return true
		}
	}
	return false
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	kept := []corev1.ObjectReference{}
	for _, r := range cj.Status.Active {
		if r.UID != uid {
			kept = append(kept, r)
		}
	}
	cj.Status.Active = kept
}

// syncCronJob updates cj's status from its Jobs and starts the Job of the
// latest due schedule. It reports when to come back and whether the
// status changed.
func (c *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*time.Duration, bool, error) {
	logger := klog.FromContext(ctx)
	now := c.clock.Now()
	changed := false

	children := map[types.UID]bool{}
	for _, j := range jobs {
		children[j.UID] = true
		listed := inActive(cj, j.UID)
		cond, finished := finishedCondition(j)
		switch {
		case !listed && !finished:
			// Perhaps the status write that listed it is not in the
			// cache yet: ask the apiserver.
			fresh, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return nil, changed, fmt.Errorf("get cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
			}
			if inActive(fresh, j.UID) {
				// Go on from the apiserver's copy; the caller writes it.
				*cj = *fresh
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case finished:
			if listed {
				removeActive(cj, j.UID)
				c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, cond)
				changed = true
			}
			if cond == batchv1.JobComplete && j.Status.CompletionTime != nil &&
				(cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time)) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime
				changed = true
			}
		}
	}
	// Active Jobs the cache does not show: gone, or not seen yet.
	for _, r := range cj.Status.Active {
		if children[r.UID] {
			continue
		}
		_, err := c.client.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", r.Name)
			removeActive(cj, r.UID)
			changed = true
		case err != nil:
			return nil, changed, fmt.Errorf("get job %s/%s: %w", r.Namespace, r.Name, err)
		}
	}

	if cj.DeletionTimestamp != nil {
		// The garbage collector is removing it.
		return nil, changed, nil
	}
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			logger.V(4).Info("Not starting job because timeZone is invalid", "cronjob", klog.KObj(cj), "timeZone", *tz, "err", err)
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return nil, changed, nil
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		logger.V(4).Info("Not starting job because the cron is suspended", "cronjob", klog.KObj(cj))
		return nil, changed, nil
	}
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := parseSchedule(cj)
	if err != nil {
		logger.V(2).Info("Unparseable schedule", "cronjob", klog.KObj(cj), "schedule", cj.Spec.Schedule, "err", err)
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return nil, changed, nil
	}

	_, scheduled, m, err := mostRecentScheduleTime(cj, now, sched, true)
	if err != nil {
		logger.V(2).Info("Invalid schedule", "cronjob", klog.KObj(cj), "schedule", cj.Spec.Schedule, "err", err)
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return nil, changed, nil
	}
	next := nextScheduleDelay(cj, now, sched)
	if scheduled == nil {
		logger.V(4).Info("No unmet start times", "cronjob", klog.KObj(cj))
		return next, changed, nil
	}
	if m == manyMissed {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		logger.Info("Too many missed times", "cronjob", klog.KObj(cj))
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		logger.V(4).Info("Missed starting window", "cronjob", klog.KObj(cj))
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next, changed, nil
	}
	if inActiveByName(cj, jobName(cj, *scheduled)) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)) {
		logger.V(4).Info("Not starting job because the scheduled time is already processed", "cronjob", klog.KObj(cj), "schedule", scheduled)
		return next, changed, nil
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0 {
		// The time is not recorded: should the running Job finish
		// before the next one, this time may still run.
		logger.V(4).Info("Not starting job because prior execution is still running and concurrency policy is Forbid", "cronjob", klog.KObj(cj))
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return next, changed, nil
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		for _, r := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			logger.V(4).Info("Deleting job that was still running at next scheduled start time", "job", klog.KRef(r.Namespace, r.Name))
			job, err := c.client.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedGet", "Get job: %v", err)
				return nil, changed, fmt.Errorf("get job %s/%s: %w", r.Namespace, r.Name, err)
			}
			if !c.deleteJobOf(ctx, cj, job) {
				return nil, changed, fmt.Errorf("could not replace job %s/%s", job.Namespace, job.Name)
			}
			changed = true
		}
	}

	req, err := jobFromTemplate(cj, *scheduled)
	if err != nil {
		return nil, changed, err
	}
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, req, metav1.CreateOptions{})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, changed, err
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync whose status write was lost.
		existing, err := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if err != nil {
			return nil, changed, fmt.Errorf("get job %s/%s: %w", cj.Namespace, req.Name, err)
		}
		if !metav1.IsControlledBy(existing, cj) || inActive(cj, existing.UID) {
			return nil, changed, nil
		}
		logger.Info("Job already exists", "cronjob", klog.KObj(cj), "job", klog.KObj(existing))
		created = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, changed, fmt.Errorf("create job %s/%s: %w", cj.Namespace, req.Name, err)
	default:
		logger.V(4).Info("Created Job", "job", klog.KObj(created), "cronjob", klog.KObj(cj))
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}

	ref, err := reference.GetReference(scheme.Scheme, created)
	if err != nil {
		return nil, changed, fmt.Errorf("reference to job %s/%s: %w", created.Namespace, created.Name, err)
	}
	cj.Status.Active = append(cj.Status.Active, *ref)
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	return nextScheduleDelay(cj, now, sched), true, nil
}

// cleanupFinishedJobs deletes the oldest finished Jobs beyond the history
// limits, reporting whether the status changed.
func (c *Controller) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return false
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch cond, _ := finishedCondition(j); cond {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	changed := false
	if l := cj.Spec.SuccessfulJobsHistoryLimit; l != nil && c.removeOldest(ctx, cj, succeeded, int(*l)) {
		changed = true
	}
	if l := cj.Spec.FailedJobsHistoryLimit; l != nil && c.removeOldest(ctx, cj, failed, int(*l)) {
		changed = true
	}
	return changed
}

// removeOldest deletes all but the keep newest of jobs, by start time (Jobs
// that never started count as newest).
func (c *Controller) removeOldest(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, keep int) bool {
	n := len(jobs) - keep
	if n <= 0 {
		return false
	}
	sort.Slice(jobs, func(i, k int) bool {
		a, b := jobs[i].Status.StartTime, jobs[k].Status.StartTime
		switch {
		case a == nil && b != nil:
			return false
		case a != nil && b == nil:
			return true
		case a.Equal(b):
			return jobs[i].Name < jobs[k].Name
		}
		return a.Before(b)
	})
	changed := false
	for _, j := range jobs[:n] {
		if c.deleteJobOf(ctx, cj, j) {
			changed = true
		}
	}
	return changed
}

// deleteJobOf deletes one of the CronJob's Jobs with its pods and drops it
// from status.active, recording the outcome as an event.
func (c *Controller) deleteJobOf(ctx context.Context, cj *batchv1.CronJob, job *batchv1.Job) bool {
	policy := metav1.DeletePropagationBackground
	if err := c.client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		klog.FromContext(ctx).Error(err, "Error deleting job from cronjob", "job", klog.KObj(job), "cronjob", klog.KObj(cj))
		return false
	}
	removeActive(cj, job.UID)
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", job.Name)
	return true
}
