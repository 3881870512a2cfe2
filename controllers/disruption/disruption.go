package disruption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// DeletionTimeout is how long a pod recorded in disruptedPods is
	// expected to take to be deleted; until then it does not count as
	// healthy, afterwards the record is dropped.
	DeletionTimeout = 2 * time.Minute
	// StalePodDisruptionTimeout is how long a DisruptionTarget condition
	// may stay True on a pod that is not being deleted.
	StalePodDisruptionTimeout = 2 * time.Minute
	// DefaultWorkers is upstream's --concurrent-disruption-syncs.
	DefaultWorkers = 1
)

// ScaleFunc finds the scale of a pod's controller that is not a
// ReplicationController, ReplicaSet, Deployment or StatefulSet: it returns
// the controller's UID and spec.replicas through its scale subresource,
// found false if the controller does not exist, and an error if it cannot
// tell (including when the resource has no scale subresource).
type ScaleFunc func(ctx context.Context, namespace string, ref metav1.OwnerReference) (uid types.UID, replicas int32, found bool, err error)

// Informers are the informers the controller reads; the caller starts them.
type Informers struct {
	Pods                   coreinformers.PodInformer
	PodDisruptionBudgets   policyinformers.PodDisruptionBudgetInformer
	ReplicationControllers coreinformers.ReplicationControllerInformer
	ReplicaSets            appsinformers.ReplicaSetInformer
	Deployments            appsinformers.DeploymentInformer
	StatefulSets           appsinformers.StatefulSetInformer
}

// Controller keeps PodDisruptionBudget status. Create it with New; Run
// may be called once.
type Controller struct {
	client   kubernetes.Interface
	scale    ScaleFunc
	recorder record.EventRecorder
	clock    clock.WithTicker

	pdbLister policylisters.PodDisruptionBudgetLister
	podLister corelisters.PodLister
	rcLister  corelisters.ReplicationControllerLister
	rsLister  appslisters.ReplicaSetLister
	dLister   appslisters.DeploymentLister
	ssLister  appslisters.StatefulSetLister
	synced    []cache.InformerSynced

	queue      workqueue.TypedRateLimitingInterface[string]
	stalePods  workqueue.TypedRateLimitingInterface[string]
	staleAfter time.Duration
}

// New returns a controller that writes budget status and pod conditions
// with client, reads through inf, finds the scale of other controllers
// with scale (nil: pods of other controllers make the budget fail safe),
// and records events with recorder.
func New(client kubernetes.Interface, inf Informers, scale ScaleFunc, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:     client,
		scale:      scale,
		recorder:   recorder,
		clock:      clk,
		pdbLister:  inf.PodDisruptionBudgets.Lister(),
		podLister:  inf.Pods.Lister(),
		rcLister:   inf.ReplicationControllers.Lister(),
		rsLister:   inf.ReplicaSets.Lister(),
		dLister:    inf.Deployments.Lister(),
		ssLister:   inf.StatefulSets.Lister(),
		staleAfter: StalePodDisruptionTimeout,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "disruption", Clock: clk}),
		stalePods: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "disruption_recheck", Clock: clk}),
	}
	type handled struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}
	for _, x := range []handled{
		{inf.PodDisruptionBudgets.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, obj any) { c.enqueue(obj) },
			DeleteFunc: c.enqueue,
		}},
		{inf.Pods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.podChanged,
			UpdateFunc: func(_, obj any) { c.podChanged(obj) },
			DeleteFunc: c.podDeleted,
		}},
		// The controllers only need to be in the caches; their scale is
		// read when a budget is synced.
		{inf.ReplicationControllers.Informer(), cache.ResourceEventHandlerFuncs{}},
		{inf.ReplicaSets.Informer(), cache.ResourceEventHandlerFuncs{}},
		{inf.Deployments.Informer(), cache.ResourceEventHandlerFuncs{}},
		{inf.StatefulSets.Informer(), cache.ResourceEventHandlerFuncs{}},
	} {
		reg, err := x.inf.AddEventHandler(x.h)
		if err != nil {
			return nil, fmt.Errorf("disruption controller: add event handler: %w", err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueBudgetsOf(pod *corev1.Pod) {
	pdbs, err := c.pdbLister.GetPodPodDisruptionBudgets(pod)
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		c.enqueue(pdb)
	}
}

func (c *Controller) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.enqueueBudgetsOf(pod)
	if stale, after := c.staleDisruptionTarget(pod); stale {
		if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			c.stalePods.AddAfter(key, after)
		}
	}
}

func (c *Controller) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		c.enqueueBudgetsOf(pod)
	}
}

// Run waits for the caches, then syncs budgets with workers goroutines
// (and one for stale pod conditions) until ctx is cancelled, and returns
// nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	defer c.stalePods.ShutDown()
	logger.Info("Starting disruption controller")
	defer logger.Info("Shut down disruption controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("disruption controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx, c.queue, c.sync, "podDisruptionBudget") {
			}
		})
	}
	wg.Go(func() {
		for c.processNext(ctx, c.stalePods, c.syncStalePod, "pod") {
		}
	})
	<-ctx.Done()
	c.queue.ShutDown()
	c.stalePods.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error, kind string) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Sync failed, will retry", kind, key)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// sync computes one budget's status. When the status cannot be computed
// the budget fails safe: no disruptions allowed, condition SyncFailed.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pdb, err := c.pdbLister.PodDisruptionBudgets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = c.trySync(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	klog.FromContext(ctx).Error(err, "Failed to compute disruption budget status", "podDisruptionBudget", klog.KObj(pdb))
	return c.failSafe(ctx, pdb, err)
}

func (c *Controller) trySync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return fmt.Errorf("selector: %w", err)
	}
	pods, err := c.podLister.Pods(pdb.Namespace).List(sel)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		c.recorder.Event(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := c.expectedPods(ctx, pdb, pods)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return err
	}
	if len(unmanaged) > 0 {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	now := c.clock.Now()
	disrupted, recheck := c.disruptedPods(pdb, pods, now)
	healthy := countHealthy(pods, disrupted, now)
	if err := c.writeStatus(ctx, pdb, healthy, desired, expected, disrupted); err != nil {
		return err
	}
	if recheck != nil {
		c.queue.AddAfter(pdb.Namespace+"/"+pdb.Name, recheck.Sub(now))
	}
	return nil
}

// expectedPods returns expectedPods and desiredHealthy for the budget, and
// the names of matched pods without a controller (which a scale-based
// budget cannot account for).
func (c *Controller) expectedPods(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected, unmanaged, err = c.expectedScale(ctx, pods)
		if err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		return expected, max(expected-int32(maxUnavailable), 0), unmanaged, nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, nil, nil
	case pdb.Spec.MinAvailable != nil:
		expected, unmanaged, err = c.expectedScale(ctx, pods)
		if err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		return expected, int32(minAvailable), unmanaged, nil
	}
	return 0, 0, nil, nil
}

// expectedScale sums the scales of the controllers of pods, each
// controller once; pods without a controller are returned by name.
func (c *Controller) expectedScale(ctx context.Context, pods []*corev1.Pod) (int32, []string, error) {
	scales := map[types.UID]int32{}
	seen := map[types.UID]bool{}
	var unmanaged []string
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if seen[ref.UID] {
			continue
		}
		seen[ref.UID] = true
		uid, replicas, found, err := c.controllerScale(ctx, pod.Namespace, *ref)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		scales[uid] = replicas
	}
	var sum int32
	for _, n := range scales {
		sum += n
	}
	return sum, unmanaged, nil
}

// controllerScale resolves a pod's controller reference to the object
// whose scale counts: a ReplicaSet owned by a Deployment counts as the
// Deployment.
func (c *Controller) controllerScale(ctx context.Context, namespace string, ref metav1.OwnerReference) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, fmt.Errorf("controller reference %s: %w", ref.Name, err)
	}
	isApps := gv.Group == appsv1.GroupName || gv.Group == "extensions"
	switch {
	case gv.Group == "" && ref.Kind == "ReplicationController":
		rc, err := c.rcLister.ReplicationControllers(namespace).Get(ref.Name)
		if err != nil || rc.UID != ref.UID {
			return "", 0, false, nil
		}
		return rc.UID, replicas(rc.Spec.Replicas), true, nil
	case isApps && ref.Kind == "ReplicaSet":
		rs, err := c.rsLister.ReplicaSets(namespace).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, false, nil
		}
		owner := metav1.GetControllerOf(rs)
		if owner == nil || owner.Kind != "Deployment" {
			return rs.UID, replicas(rs.Spec.Replicas), true, nil
		}
		ogv, err := schema.ParseGroupVersion(owner.APIVersion)
		if err != nil || (ogv.Group != appsv1.GroupName && ogv.Group != "extensions") {
			return rs.UID, replicas(rs.Spec.Replicas), true, nil
		}
		d, err := c.dLister.Deployments(namespace).Get(owner.Name)
		if err != nil || d.UID != owner.UID {
			return "", 0, false, nil
		}
		return d.UID, replicas(d.Spec.Replicas), true, nil
	case gv.Group == appsv1.GroupName && ref.Kind == "StatefulSet":
		ss, err := c.ssLister.StatefulSets(namespace).Get(ref.Name)
		if err != nil || ss.UID != ref.UID {
			return "", 0, false, nil
		}
		return ss.UID, replicas(ss.Spec.Replicas), true, nil
	}
	if c.scale == nil {
		return "", 0, false, fmt.Errorf("no scale lookup for %s %s", ref.Kind, ref.Name)
	}
	return c.scale(ctx, namespace, ref)
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// disruptedPods keeps the budget's disruptedPods records that still hold
// back a pod, and returns when the earliest of them expires.
func (c *Controller) disruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, *time.Time) {
	out := map[string]metav1.Time{}
	if pdb.Status.DisruptedPods == nil {
		return out, nil
	}
	var recheck *time.Time
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
			continue
		}
		if recheck == nil || expires.Before(*recheck) {
			recheck = &expires
		}
		out[pod.Name] = at
	}
	return out, recheck
}

func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if podReady(pod) {
			n++
		}
	}
	return n
}

func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) error {
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	st := pdb.Status
	if st.CurrentHealthy == healthy && st.DesiredHealthy == desired && st.ExpectedPods == expected &&
		st.DisruptionsAllowed == allowed && equality.Semantic.DeepEqual(st.DisruptedPods, disrupted) &&
		st.ObservedGeneration == pdb.Generation && pdbhelper.ConditionsAreUpToDate(pdb) {
		return nil
	}
	updated := pdb.DeepCopy()
	updated.Status = policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		DisruptionsAllowed: allowed,
		DisruptedPods:      disrupted,
		ObservedGeneration: pdb.Generation,
		Conditions:         updated.Status.Conditions,
	}
	pdbhelper.UpdateDisruptionAllowedCondition(updated)
	return c.updateStatus(ctx, updated)
}

// failSafe allows no disruption and says why in the condition.
func (c *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	updated := pdb.DeepCopy()
	updated.Status.DisruptionsAllowed = 0
	if updated.Status.Conditions == nil {
		updated.Status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: updated.Status.ObservedGeneration,
	})
	return c.updateStatus(ctx, updated)
}

func (c *Controller) updateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of pod disruption budget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated pod disruption budget status", "podDisruptionBudget", klog.KObj(pdb),
		"currentHealthy", pdb.Status.CurrentHealthy, "desiredHealthy", pdb.Status.DesiredHealthy,
		"expectedPods", pdb.Status.ExpectedPods, "disruptionsAllowed", pdb.Status.DisruptionsAllowed)
	return nil
}

// staleDisruptionTarget reports whether pod carries a DisruptionTarget
// condition that did not lead to its deletion, and how long until it is
// stale.
func (c *Controller) staleDisruptionTarget(pod *corev1.Pod) (bool, time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type != corev1.DisruptionTarget {
			continue
		}
		if cond.Status != corev1.ConditionTrue || cond.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(c.staleAfter-c.clock.Since(cond.LastTransitionTime.Time), 0)
	}
	return false, 0
}

// syncStalePod sets a stale DisruptionTarget condition of the pod to False.
func (c *Controller) syncStalePod(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	stale, after := c.staleDisruptionTarget(pod)
	if !stale {
		return nil
	}
	if after > 0 {
		c.stalePods.AddAfter(key, after)
		return nil
	}
	updated := pod.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	for i := range updated.Status.Conditions {
		cond := &updated.Status.Conditions[i]
		if cond.Type == corev1.DisruptionTarget {
			cond.Status = corev1.ConditionFalse
			cond.LastTransitionTime = now
			if cond.ObservedGeneration != 0 {
				cond.ObservedGeneration = updated.Generation
			}
		}
	}
	if _, err := c.client.CoreV1().Pods(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("reset the DisruptionTarget condition of pod %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Reset stale DisruptionTarget condition to False", "pod", klog.KObj(pod))
	return nil
}
