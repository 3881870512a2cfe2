package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
)

// The NoExecute taints of TaintBasedEvictions.
var (
	// UnreachableTaint marks a node whose Ready condition is Unknown.
	UnreachableTaint = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	// NotReadyTaint marks a node whose Ready condition is False.
	NotReadyTaint = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
)

// conditionTaints maps a node condition and status to the key of the
// NoSchedule taint it calls for (TaintNodesByCondition).
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
}

// conditionTaintKeys are the keys of NoSchedule taints the controller owns.
var conditionTaintKeys = map[string]bool{
	corev1.TaintNodeNotReady:           true,
	corev1.TaintNodeUnreachable:        true,
	corev1.TaintNodeMemoryPressure:     true,
	corev1.TaintNodeDiskPressure:       true,
	corev1.TaintNodeNetworkUnavailable: true,
	corev1.TaintNodePIDPressure:        true,
	corev1.TaintNodeUnschedulable:      true,
}

// taintUpdateAttempts bounds the retries of a taint patch on conflicts.
const taintUpdateAttempts = 5

// hasTaint reports whether taints hold one with t's key and effect.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

// applyTaints returns taints without those matching remove (by key and
// effect) and with add (a taint of the same key and effect but another
// value is replaced), and whether anything changed. Added taints get
// TimeAdded now.
func applyTaints(taints, add, remove []corev1.Taint, now metav1.Time) ([]corev1.Taint, bool) {
	out := make([]corev1.Taint, 0, len(taints)+len(add))
	changed := false
	for _, t := range taints {
		if hasTaint(remove, t) {
			changed = true
			continue
		}
		out = append(out, t)
	}
	for _, a := range add {
		replaced := false
		for i := range out {
			if !out[i].MatchTaint(&a) {
				continue
			}
			replaced = true
			if out[i].Value != a.Value {
				out[i] = a
				out[i].TimeAdded = &now
				changed = true
			}
		}
		if !replaced {
			a.TimeAdded = &now
			out = append(out, a)
			changed = true
		}
	}
	return out, changed
}

// swapTaints adds and removes taints on node with a patch that carries the
// node's resourceVersion, reading the node again after a conflict. node is
// the cached object; it is not modified.
func (c *Controller) swapTaints(ctx context.Context, node *corev1.Node, add, remove []corev1.Taint) error {
	cur := node
	for attempt := 1; ; attempt++ {
		taints, changed := applyTaints(cur.Spec.Taints, add, remove, metav1.NewTime(c.clock.Now()))
		if !changed {
			return nil
		}
		meta := map[string]any{}
		if cur.ResourceVersion != "" {
			meta["resourceVersion"] = cur.ResourceVersion
		}
		var list any = taints
		if len(taints) == 0 {
			list = nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": meta, "spec": map[string]any{"taints": list}})
		if err != nil {
			return fmt.Errorf("taint patch for node %s: %w", node.Name, err)
		}
		_, err = c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			klog.FromContext(ctx).V(4).Info("Updated node taints", "node", klog.KObj(node), "added", add, "removed", remove)
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == taintUpdateAttempts {
			return fmt.Errorf("update taints of node %s: %w", node.Name, err)
		}
		if cur, err = c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get node %s to update its taints: %w", node.Name, err)
		}
	}
}

// syncNoScheduleTaints makes the node's condition NoSchedule taints match
// its conditions and spec.unschedulable.
func (c *Controller) syncNoScheduleTaints(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var want []corev1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := conditionTaints[cond.Type][cond.Status]; ok {
			want = append(want, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	var have []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && conditionTaintKeys[t.Key] {
			have = append(have, t)
		}
	}
	var add, remove []corev1.Taint
	for _, t := range want {
		if !hasTaint(have, t) {
			add = append(add, t)
		}
	}
	for _, t := range have {
		if !hasTaint(want, t) {
			remove = append(remove, t)
		}
	}
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	return c.swapTaints(ctx, node, add, remove)
}

// labelPairs are node labels kept in line: the second (beta) label follows
// the first (stable) one and is added when missing.
var labelPairs = [][2]string{
	{corev1.LabelOSStable, "beta.kubernetes.io/os"},
	{corev1.LabelArchStable, "beta.kubernetes.io/arch"},
}

// reconcileNodeLabels copies the stable os and arch labels to their beta
// names.
func (c *Controller) reconcileNodeLabels(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	update := map[string]string{}
	for _, p := range labelPairs {
		v, ok := node.Labels[p[0]]
		if !ok {
			continue
		}
		if beta, ok := node.Labels[p[1]]; !ok || beta != v {
			update[p[1]] = v
		}
	}
	if len(update) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": update}})
	if err != nil {
		return fmt.Errorf("label patch for node %s: %w", name, err)
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("update labels of node %s: %w", name, err)
	}
	return nil
}

// markPodsNotReady sets the Ready condition of the pods bound to nodeName
// to False through the status subresource, with a NodeNotReady event on
// each pod it changes.
func (c *Controller) markPodsNotReady(ctx context.Context, pods []*corev1.Pod, nodeName string) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Marking the pods of node not ready", "node", klog.KRef("", nodeName))
	var errs []error
	for _, p := range pods {
		if p.Spec.NodeName != nodeName {
			continue
		}
		pod := p.DeepCopy()
		changed := false
		for i := range pod.Status.Conditions {
			cond := &pod.Status.Conditions[i]
			if cond.Type != corev1.PodReady {
				continue
			}
			if cond.Status != corev1.ConditionFalse {
				cond.Status = corev1.ConditionFalse
				cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
				changed = true
			}
			break
		}
		if !changed {
			continue
		}
		logger.V(2).Info("Setting the Ready condition of pod to false", "pod", klog.KObj(pod))
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
			continue
		}
		c.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return utilerrors.NewAggregate(errs)
}
