package daemonset

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/controllerutil"
	"github.com/k1s/k1s/controllers/history"
)

// surgeCount is how many pods beyond one per node a rolling update may
// run, out of desired (0 unless RollingUpdate sets maxSurge; percentages
// round up).
func surgeCount(ds *appsv1.DaemonSet, desired int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || r == nil || r.MaxSurge == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(r.MaxSurge, desired, true)
}

// unavailableCount is how many of desired nodes a rolling update may leave
// without an available pod (percentages round up).
func unavailableCount(ds *appsv1.DaemonSet, desired int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || r == nil || r.MaxUnavailable == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(r.MaxUnavailable, desired, true)
}

// rolloutLimits returns maxSurge, maxUnavailable and the number of nodes
// that should run a pod, and adds an empty entry to byNode for each such
// node without pods. A DaemonSet allowing neither surge nor unavailability
// is rolled one node at a time.
func (c *Controller) rolloutLimits(logger klog.Logger, ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod) (maxSurge, maxUnavailable, desired int, err error) {
	p := newPlacement(ds)
	for _, node := range nodes {
		if run, _ := p.check(logger, node); !run {
			continue
		}
		desired++
		if _, ok := byNode[node.Name]; !ok {
			byNode[node.Name] = nil
		}
	}
	if maxUnavailable, err = unavailableCount(ds, desired); err != nil {
		return 0, 0, 0, fmt.Errorf("invalid maxUnavailable: %w", err)
	}
	if maxSurge, err = surgeCount(ds, desired); err != nil {
		return 0, 0, 0, fmt.Errorf("invalid maxSurge: %w", err)
	}
	if desired > 0 && maxSurge == 0 && maxUnavailable == 0 {
		logger.Info("DaemonSet allows neither surge nor unavailability, accepting one unavailable pod", "daemonset", klog.KObj(ds))
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, desired, nil
}

// podsOnNode splits the live pods of one node into the one of revision
// hash and the older one; ok is false when there is more than one of
// either, which manage cleans up first.
func podsOnNode(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	gen := templateGeneration(ds)
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if isPodUpdated(pod, hash, gen) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// rollingUpdate replaces pods of older revisions within the strategy's
// limits. Without surge it deletes old pods while fewer than
// maxUnavailable nodes lack an available pod (manage then creates the new
// ones); unavailable old pods are always replaced. With surge it creates
// new pods beside up to maxSurge available old ones and deletes each old
// pod once its replacement is available.
func (c *Controller) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	logger := klog.FromContext(ctx)
	byNode, err := c.podsByNode(ctx, ds, false)
	if err != nil {
		return fmt.Errorf("map daemon set %s/%s pods to nodes: %w", ds.Namespace, ds.Name, err)
	}
	maxSurge, maxUnavailable, desired, err := c.rolloutLimits(logger, ds, nodes, byNode)
	if err != nil {
		return err
	}
	now := metav1.NewTime(c.clock.Now())
	available := func(pod *corev1.Pod) bool {
		return controllerutil.IsPodAvailable(pod, ds.Spec.MinReadySeconds, now)
	}
	names := sortedNodeNames(byNode)

	if maxSurge == 0 {
		var unavailable int
		var replace, candidates []string
		for _, name := range names {
			newPod, oldPod, ok := podsOnNode(ds, byNode[name], hash)
			switch {
			case !ok:
				logger.V(3).Info("Daemon set has excess pods on node, leaving it to manage", "daemonset", klog.KObj(ds), "node", name)
				unavailable++
			case (oldPod == nil) == (newPod == nil):
				// Nothing yet, or both: manage creates or prunes.
				unavailable++
			case newPod != nil:
				if !available(newPod) {
					unavailable++
				}
			case !available(oldPod):
				// Out of date and not serving anyway: replace it now.
				replace = append(replace, oldPod.Name)
				unavailable++
			case unavailable < maxUnavailable:
				candidates = append(candidates, oldPod.Name)
			}
		}
		budget := max(0, min(maxUnavailable-unavailable, len(candidates)))
		logger.V(5).Info("Daemon set rolling update", "daemonset", klog.KObj(ds), "replacements", len(replace),
			"maxUnavailable", maxUnavailable, "unavailable", unavailable, "candidates", len(candidates))
		return c.syncNodes(ctx, ds, append(replace, candidates[:budget]...), nil, hash)
	}

	var (
		deleteOld      []string // replaced, or unavailable on a node they must leave
		leavingNodes   []string // available old pods on nodes they must leave
		surgeNodes     []string // candidates for a new pod beside an available old one
		replaceNodes   []string // nodes whose old pod is unavailable
		surging, avail int
	)
	p := newPlacement(ds)
	shouldRun := func(name string) bool {
		node, err := c.nodeLister.Get(name)
		if err != nil {
			// A node that is gone runs nothing.
			return false
		}
		run, _ := p.check(logger, node)
		return run
	}
	for _, name := range names {
		newPod, oldPod, ok := podsOnNode(ds, byNode[name], hash)
		if !ok {
			logger.V(3).Info("Daemon set has excess pods on node, leaving it to manage", "daemonset", klog.KObj(ds), "node", name)
			surging++
			continue
		}
		switch {
		case oldPod != nil:
			if available(oldPod) {
				avail++
			}
		case newPod != nil:
			if available(newPod) {
				avail++
			}
		}
		switch {
		case oldPod == nil:
			// Up to date or empty: manage handles it.
		case newPod == nil && !available(oldPod):
			if !shouldRun(name) {
				deleteOld = append(deleteOld, oldPod.Name)
				continue
			}
			replaceNodes = append(replaceNodes, name)
		case newPod == nil:
			if !shouldRun(name) {
				leavingNodes = append(leavingNodes, oldPod.Name)
				continue
			}
			if surging >= maxSurge {
				continue
			}
			surgeNodes = append(surgeNodes, name)
		case !available(newPod):
			surging++
		default:
			deleteOld = append(deleteOld, oldPod.Name)
		}
	}
	// Pods on nodes the DaemonSet no longer wants go only as far as the
	// available pods exceed the desired count, so that moving between
	// nodes never drops availability.
	if extra := min(avail-desired, len(leavingNodes)); extra > 0 {
		for _, name := range leavingNodes[:extra] {
			if _, err := c.podLister.Pods(ds.Namespace).Get(name); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("get daemon pod %s/%s: %w", ds.Namespace, name, err)
			}
			deleteOld = append(deleteOld, name)
		}
	}
	budget := max(0, min(maxSurge-surging, len(surgeNodes)))
	logger.V(5).Info("Daemon set rolling update with surge", "daemonset", klog.KObj(ds), "replacements", len(replaceNodes),
		"maxSurge", maxSurge, "surging", surging, "candidates", len(surgeNodes))
	return c.syncNodes(ctx, ds, deleteOld, append(replaceNodes, surgeNodes[:budget]...), hash)
}

// templatePatch is the revision data of ds.
func templatePatch(ds *appsv1.DaemonSet) ([]byte, error) {
	return history.TemplatePatch(&ds.Spec.Template)
}

// Match reports whether rev records ds's current template.
func Match(ds *appsv1.DaemonSet, rev *appsv1.ControllerRevision) (bool, error) {
	patch, err := templatePatch(ds)
	if err != nil {
		return false, err
	}
	return bytes.Equal(patch, rev.Data.Raw), nil
}

// controlledRevisions returns the revisions ds controls after adopting
// matching orphans and releasing owned ones its selector no longer
// matches.
func (c *Controller) controlledRevisions(ctx context.Context, ds *appsv1.DaemonSet) ([]*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("daemon set %s/%s selector: %w", ds.Namespace, ds.Name, err)
	}
	// Everything owned or orphaned, so that owned revisions that stopped
	// matching are released.
	revs, err := c.history.List(ds, controllerKind, labels.Everything())
	if err != nil {
		return nil, err
	}
	m := controllerutil.NewControllerRevisionRefManager(controllerutil.ControllerRevisionPatcher(c.client), ds, sel, controllerKind, c.canAdopt(ds))
	return m.Claim(ctx, revs)
}

// constructHistory returns the revision of ds's current template
// (creating it, or renumbering it to be the newest) and the older ones.
// Revisions lacking the hash label get it (their name), and duplicates of
// the current one are merged.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	revs, err := c.controlledRevisions(ctx, ds)
	if err != nil {
		return nil, nil, err
	}
	var current []*appsv1.ControllerRevision
	for _, rev := range revs {
		if _, ok := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			labelled := rev.DeepCopy()
			if labelled.Labels == nil {
				labelled.Labels = map[string]string{}
			}
			labelled.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = labelled.Name
			if rev, err = c.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
				return nil, nil, fmt.Errorf("label controller revision %s/%s: %w", labelled.Namespace, labelled.Name, err)
			}
		}
		ok, err := Match(ds, rev)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			current = append(current, rev)
		} else {
			old = append(old, rev)
		}
	}
	next := history.MaxRevision(old) + 1
	if len(current) == 0 {
		cur, err = c.snapshot(ctx, ds, next)
		if err != nil {
			return nil, nil, err
		}
		return cur, old, nil
	}
	if cur, err = c.dedupCurrent(ctx, ds, current); err != nil {
		return nil, nil, err
	}
	if cur.Revision < next {
		if cur, err = c.history.UpdateRevision(ctx, cur, next); err != nil {
			return nil, nil, err
		}
	}
	return cur, old, nil
}

// dedupCurrent keeps the highest-numbered of several revisions of the
// current template, moves pods labelled with the others onto it, and
// deletes the others.
func (c *Controller) dedupCurrent(ctx context.Context, ds *appsv1.DaemonSet, current []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if len(current) == 1 {
		return current[0], nil
	}
	keep := current[0]
	for _, rev := range current[1:] {
		if rev.Revision >= keep.Revision {
			keep = rev
		}
	}
	keepHash := keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	pods, err := c.daemonPods(ctx, ds)
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == keepHash {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: keepHash}}})
		if err != nil {
			return nil, err
		}
		if _, err := c.client.CoreV1().Pods(ds.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("relabel pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	for _, rev := range current {
		if rev.Name == keep.Name {
			continue
		}
		if err := c.history.Delete(ctx, rev); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// snapshot creates the revision of ds's current template with number
// revision, named "<daemonset>-<template hash>". If that name holds another
// template, the DaemonSet's collisionCount is raised so that the next sync
// computes another name, and the AlreadyExists error is returned to retry.
func (c *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, revision int64) (*appsv1.ControllerRevision, error) {
	patch, err := templatePatch(ds)
	if err != nil {
		return nil, err
	}
	hash := controllerutil.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	lbls := maps.Clone(ds.Spec.Template.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ds.Name + "-" + hash,
			Namespace:       ds.Namespace,
			Labels:          lbls,
			Annotations:     maps.Clone(ds.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}
	revs := c.client.AppsV1().ControllerRevisions(ds.Namespace)
	created, err := revs.Create(ctx, rev, metav1.CreateOptions{})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create controller revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	existsErr := err
	existing, err := revs.Get(ctx, rev.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get controller revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	if ok, err := Match(ds, existing); err != nil {
		return nil, err
	} else if ok {
		return existing, nil
	}
	// A real collision. Bump the count only if ours was current.
	fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get daemon set %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	if !reflect.DeepEqual(fresh.Status.CollisionCount, ds.Status.CollisionCount) {
		return nil, fmt.Errorf("daemon set %s/%s: stale collision count, will retry once it is updated", ds.Namespace, ds.Name)
	}
	count := int32(0)
	if fresh.Status.CollisionCount != nil {
		count = *fresh.Status.CollisionCount
	}
	count++
	fresh.Status.CollisionCount = &count
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("raise collision count of daemon set %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Found a hash collision for daemon set, raised collisionCount", "daemonset", klog.KObj(ds), "collisionCount", count)
	return nil, existsErr
}

// cleanupHistory deletes the oldest of old beyond revisionHistoryLimit,
// sparing revisions that some pod (even a finished one) still carries.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toDelete := len(old) - limit
	if toDelete <= 0 {
		return nil
	}
	byNode, err := c.podsByNode(ctx, ds, true)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, pods := range byNode {
		for _, pod := range pods {
			if h := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
				live[h] = true
			}
		}
	}
	sorted := slices.Clone(old)
	slices.SortStableFunc(sorted, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Compare(a.Revision, b.Revision)
	})
	for _, rev := range sorted {
		if toDelete <= 0 {
			break
		}
		if live[rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		if err := c.history.Delete(ctx, rev); err != nil {
			return err
		}
		toDelete--
	}
	return nil
}
