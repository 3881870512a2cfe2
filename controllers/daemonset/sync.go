package daemonset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// sync brings the DaemonSet key to its desired state: history first, then
// pods (unless creations or deletions of an earlier sync are still to be
// observed), the rolling update, history cleanup, and status.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing daemon set", "daemonset", key, "duration", c.clock.Since(start))
	}()
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	ds, err := c.dsLister.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(3).Info("Daemon set has been deleted", "daemonset", key)
		c.expectations.DeleteExpectations(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get daemon set %s: %w", key, err)
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	if ds.Spec.Selector == nil || reflect.DeepEqual(*ds.Spec.Selector, metav1.LabelSelector{}) {
		c.recorder.Event(ds, corev1.EventTypeWarning, SelectingAllReason, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	// Once deleted, the revisions may already be gone or orphaned, so
	// status can no longer be computed reliably: leave it.
	if ds.DeletionTimestamp != nil {
		return nil
	}
	cur, old, err := c.constructHistory(ctx, ds)
	if err != nil {
		return fmt.Errorf("construct revisions of daemon set %s: %w", key, err)
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]

	if !c.expectations.SatisfiedExpectations(key) {
		// Status only; this generation was not acted on.
		return c.updateStatus(ctx, ds, nodes, hash, false)
	}
	err = c.update(ctx, ds, nodes, hash, key, old)
	statusErr := c.updateStatus(ctx, ds, nodes, hash, true)
	switch {
	case err != nil && statusErr != nil:
		logger.Error(statusErr, "Failed to update daemon set status", "daemonset", klog.KObj(ds))
		return err
	case err != nil:
		return err
	}
	return statusErr
}

// update creates and deletes pods, advances the rolling update when all
// earlier requests have been observed, and drops unused old revisions.
func (c *Controller) update(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash, key string, old []*appsv1.ControllerRevision) error {
	if err := c.manage(ctx, ds, nodes, hash); err != nil {
		return err
	}
	if c.expectations.SatisfiedExpectations(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if err := c.rollingUpdate(ctx, ds, nodes, hash); err != nil {
			return err
		}
	}
	if err := c.cleanupHistory(ctx, ds, old); err != nil {
		return fmt.Errorf("clean up revisions of daemon set %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}

// daemonPods returns the pods ds controls, adopting matching orphans and
// releasing owned pods that no longer match. They are cached objects.
func (c *Controller) daemonPods(ctx context.Context, ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("daemon set %s/%s selector: %w", ds.Namespace, ds.Name, err)
	}
	pods, err := controllerutil.FilterPodsByOwner(c.podIndexer, ds, controllerKind.Kind, true)
	if err != nil {
		return nil, err
	}
	m := controllerutil.NewPodRefManager(c.podControl, ds, sel, controllerKind, c.canAdopt(ds))
	return m.ClaimPods(ctx, pods)
}

// canAdopt rereads ds from the apiserver before the first adoption: a
// DaemonSet being deleted, or replaced by another of the same name, adopts
// nothing.
func (c *Controller) canAdopt(ds *appsv1.DaemonSet) func(context.Context) error {
	return controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != ds.UID {
			return nil, fmt.Errorf("original DaemonSet %s/%s is gone: got uid %s, wanted %s", ds.Namespace, ds.Name, fresh.UID, ds.UID)
		}
		return fresh, nil
	})
}

// podsByNode groups ds's pods by the node they are for. Terminal pods
// already being deleted are left out unless includeDeletedTerminal.
func (c *Controller) podsByNode(ctx context.Context, ds *appsv1.DaemonSet, includeDeletedTerminal bool) (map[string][]*corev1.Pod, error) {
	pods, err := c.daemonPods(ctx, ds)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	out := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if !includeDeletedTerminal && controllerutil.IsPodTerminal(pod) && pod.DeletionTimestamp != nil {
			continue
		}
		node, err := targetNode(pod)
		if err != nil {
			logger.V(4).Info("Daemon pod has no target node", "pod", klog.KObj(pod), "daemonset", klog.KObj(ds), "err", err)
			continue
		}
		out[node] = append(out[node], pod)
	}
	return out, nil
}

// byScheduledThenAge orders daemon pods: bound before unbound, then
// oldest first, then by name.
func byScheduledThenAge(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

func sortedNodeNames(m map[string][]*corev1.Pod) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func allowsSurge(ds *appsv1.DaemonSet) bool {
	n, err := surgeCount(ds, 1)
	return err == nil && n > 0
}

// nodeActions decides for one node which daemon pods to create (the node
// name, when one is needed) and which to delete.
func (c *Controller) nodeActions(logger klog.Logger, ds *appsv1.DaemonSet, p placement, node *corev1.Node, pods []*corev1.Pod, hash string) (create bool, del []string) {
	shouldRun, shouldContinue := p.check(logger, node)
	switch {
	case shouldRun && len(pods) == 0:
		return true, nil
	case shouldContinue:
		var running []*corev1.Pod
		for _, pod := range pods {
			if pod.DeletionTimestamp != nil {
				continue
			}
			switch pod.Status.Phase {
			case corev1.PodFailed:
				// The kubelet may keep rejecting the pod; replace it with a
				// back-off per node so the two do not fight in a hot loop.
				bkey := fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, node.Name)
				now := c.clock.Now()
				if c.failedBackoff.IsInBackOffSinceUpdate(bkey, now) {
					delay := c.failedBackoff.Get(bkey)
					logger.V(4).Info("Deleting failed daemon pod is backing off", "pod", klog.KObj(pod), "node", klog.KObj(node), "delay", delay)
					c.enqueueAfter(ds, delay)
					continue
				}
				c.failedBackoff.Next(bkey, now)
				logger.V(2).Info("Found failed daemon pod on node, will try to kill it", "pod", klog.KObj(pod), "node", klog.KObj(node))
				c.recorder.Eventf(ds, corev1.EventTypeWarning, FailedDaemonPodReason,
					"Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, node.Name)
				del = append(del, pod.Name)
			case corev1.PodSucceeded:
				logger.V(2).Info("Found succeeded daemon pod on node, will try to delete it", "pod", klog.KObj(pod), "node", klog.KObj(node))
				c.recorder.Eventf(ds, corev1.EventTypeNormal, SucceededDaemonPodReason,
					"Found succeeded daemon pod %s/%s on node %s, will try to delete it", pod.Namespace, pod.Name, node.Name)
				del = append(del, pod.Name)
			default:
				running = append(running, pod)
			}
		}
		if !allowsSurge(ds) {
			// One pod per node: keep the oldest.
			if len(running) > 1 {
				byScheduledThenAge(running)
				for _, pod := range running[1:] {
					del = append(del, pod.Name)
				}
			}
			return false, del
		}
		if len(running) <= 1 {
			return len(running) == 0 && shouldRun, del
		}
		// Surging: keep at most the oldest new and the oldest old pod, and
		// the old one only while it is ready and the new one not yet
		// available.
		byScheduledThenAge(running)
		var oldestNew, oldestOld *corev1.Pod
		for _, pod := range running {
			isNew := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
			switch {
			case isNew && oldestNew == nil:
				oldestNew = pod
			case !isNew && oldestOld == nil:
				oldestOld = pod
			default:
				del = append(del, pod.Name)
			}
		}
		if oldestNew != nil && oldestOld != nil {
			if !controllerutil.IsPodReady(oldestOld) ||
				controllerutil.IsPodAvailable(oldestNew, ds.Spec.MinReadySeconds, metav1.NewTime(c.clock.Now())) {
				del = append(del, oldestOld.Name)
			}
		}
		return false, del
	case len(pods) > 0:
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil {
				del = append(del, pod.Name)
			}
		}
	}
	return false, del
}

// manage creates the daemon pods missing on eligible nodes and deletes
// those that must go.
func (c *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := c.podsByNode(ctx, ds, false)
	if err != nil {
		return fmt.Errorf("map daemon set %s/%s pods to nodes: %w", ds.Namespace, ds.Name, err)
	}
	logger := klog.FromContext(ctx)
	p := newPlacement(ds)
	var create, del []string
	exists := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		exists[node.Name] = true
		mk, d := c.nodeActions(logger, ds, p, node, byNode[node.Name], hash)
		if mk {
			create = append(create, node.Name)
		}
		del = append(del, d...)
	}
	// Unbound pods for nodes that no longer exist would never be
	// scheduled, and pod GC only collects bound ones.
	for _, n := range sortedNodeNames(byNode) {
		if exists[n] {
			continue
		}
		for _, pod := range byNode[n] {
			if pod.Spec.NodeName == "" {
				del = append(del, pod.Name)
			}
		}
	}
	return c.syncNodes(ctx, ds, del, create, hash)
}

// syncNodes deletes the pods named del and creates a pod on each node of
// create, at most burstReplicas of each, recording expectations first.
// Creations go in batches that double from one while they succeed, so a
// systematic failure (quota, admission) costs few requests.
func (c *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, del, create []string, hash string) error {
	logger := klog.FromContext(ctx)
	key := ds.Namespace + "/" + ds.Name
	createN := min(len(create), c.burstReplicas)
	deleteN := min(len(del), c.burstReplicas)
	c.expectations.SetExpectations(key, createN, deleteN)

	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	failures := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(errs)
	}
	if createN > 0 {
		logger.V(4).Info("Creating daemon pods", "daemonset", klog.KObj(ds), "nodes", create[:createN])
	}
	template := podTemplate(ds, hash)
	ref := metav1.NewControllerRef(ds, controllerKind)
	for pos, batch := 0, min(createN, 1); pos < createN; pos, batch = pos+batch, min(2*batch, createN-(pos+batch)) {
		before := failures()
		var wg sync.WaitGroup
		for _, node := range create[pos : pos+batch] {
			wg.Go(func() {
				t := template.DeepCopy()
				t.Spec.Affinity = bindToNode(t.Spec.Affinity, node)
				err := c.podControl.CreatePods(ctx, ds.Namespace, t, ds, ref)
				if err == nil {
					return
				}
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// The namespace is going away; every create will fail. The
					// expectation stays until the deletion settles it.
					return
				}
				logger.V(2).Info("Failed creation, decrementing expectations", "daemonset", klog.KObj(ds), "node", node)
				c.expectations.CreationObserved(key)
				fail(fmt.Errorf("create daemon pod for node %s: %w", node, err))
			})
		}
		wg.Wait()
		if skipped := createN - (pos + batch); failures() > before && skipped > 0 {
			logger.V(2).Info("Slow-start failure, skipping the remaining creations", "daemonset", klog.KObj(ds), "skipped", skipped)
			c.expectations.LowerExpectations(key, skipped, 0)
			break
		}
	}
	if deleteN > 0 {
		logger.V(4).Info("Deleting daemon pods", "daemonset", klog.KObj(ds), "pods", del[:deleteN])
	}
	var wg sync.WaitGroup
	for _, name := range del[:deleteN] {
		wg.Go(func() {
			err := c.podControl.DeletePod(ctx, ds.Namespace, name, ds)
			if err == nil {
				return
			}
			// The deletion will never be observed.
			c.expectations.DeletionObserved(key)
			if !apierrors.IsNotFound(err) {
				fail(fmt.Errorf("delete daemon pod %s/%s: %w", ds.Namespace, name, err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// updateStatus computes ds's status counts from its pods and writes them
// when they changed, with the generation when updateGeneration.
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string, updateGeneration bool) error {
	logger := klog.FromContext(ctx)
	byNode, err := c.podsByNode(ctx, ds, false)
	if err != nil {
		return fmt.Errorf("map daemon set %s/%s pods to nodes: %w", ds.Namespace, ds.Name, err)
	}
	now := metav1.NewTime(c.clock.Now())
	p := newPlacement(ds)
	gen := templateGeneration(ds)
	var st appsv1.DaemonSetStatus
	for _, node := range nodes {
		shouldRun, _ := p.check(logger, node)
		pods := byNode[node.Name]
		if !shouldRun {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		sorted := slices.Clone(pods)
		byScheduledThenAge(sorted)
		pod := sorted[0]
		if controllerutil.IsPodReady(pod) {
			st.NumberReady++
			if controllerutil.IsPodAvailable(pod, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if isPodUpdated(pod, hash, gen) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if err := c.storeStatus(ctx, ds, st, updateGeneration); err != nil {
		return fmt.Errorf("store status of daemon set %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	// Look again once ready pods should have become available, in case no
	// event arrives then.
	if ds.Spec.MinReadySeconds > 0 && st.NumberReady != st.NumberAvailable {
		c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

func statusCountsEqual(a, b *appsv1.DaemonSetStatus) bool {
	return a.DesiredNumberScheduled == b.DesiredNumberScheduled &&
		a.CurrentNumberScheduled == b.CurrentNumberScheduled &&
		a.NumberMisscheduled == b.NumberMisscheduled &&
		a.NumberReady == b.NumberReady &&
		a.UpdatedNumberScheduled == b.UpdatedNumberScheduled &&
		a.NumberAvailable == b.NumberAvailable &&
		a.NumberUnavailable == b.NumberUnavailable
}

// storeStatus writes the counts of st (and, with updateGeneration, the
// observed generation) through the status subresource, rereading the
// DaemonSet and retrying once on failure.
func (c *Controller) storeStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus, updateGeneration bool) error {
	if statusCountsEqual(&ds.Status, &st) && ds.Status.ObservedGeneration >= ds.Generation {
		return nil
	}
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	toUpdate := ds.DeepCopy()
	var err error
	for i := 0; ; i++ {
		if updateGeneration {
			toUpdate.Status.ObservedGeneration = ds.Generation
		}
		toUpdate.Status.DesiredNumberScheduled = st.DesiredNumberScheduled
		toUpdate.Status.CurrentNumberScheduled = st.CurrentNumberScheduled
		toUpdate.Status.NumberMisscheduled = st.NumberMisscheduled
		toUpdate.Status.NumberReady = st.NumberReady
		toUpdate.Status.UpdatedNumberScheduled = st.UpdatedNumberScheduled
		toUpdate.Status.NumberAvailable = st.NumberAvailable
		toUpdate.Status.NumberUnavailable = st.NumberUnavailable
		if _, err = client.UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{}); err == nil {
			return nil
		}
		if i >= statusUpdateRetries {
			return err
		}
		fresh, getErr := client.Get(ctx, ds.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		toUpdate = fresh
	}
}
