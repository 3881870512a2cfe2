package nodelifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodetopology "k8s.io/component-helpers/node/topology"
	"k8s.io/klog/v2"
)

// ZoneState is the health of a zone.
type ZoneState string

// Zone states, as upstream names them.
const (
	// StateInitial is a zone seen for the first time.
	StateInitial ZoneState = "Initial"
	// StateNormal: few enough nodes are not Ready.
	StateNormal ZoneState = "Normal"
	// StatePartialDisruption: at least three nodes and the threshold's
	// share of them are not Ready.
	StatePartialDisruption ZoneState = "PartialDisruption"
	// StateFullDisruption: no node is Ready.
	StateFullDisruption ZoneState = "FullDisruption"
)

// ComputeZoneState returns how many of a zone's nodes are not Ready (a nil
// condition counts as not Ready) and the zone's state: FullDisruption when
// none is Ready, PartialDisruption when more than two are not Ready and
// they are at least unhealthyThreshold of the zone, Normal otherwise.
func ComputeZoneState(readyConditions []*corev1.NodeCondition, unhealthyThreshold float32) (int, ZoneState) {
	ready, notReady := 0, 0
	for _, c := range readyConditions {
		if c != nil && c.Status == corev1.ConditionTrue {
			ready++
		} else {
			notReady++
		}
	}
	switch {
	case ready == 0 && notReady > 0:
		return notReady, StateFullDisruption
	case notReady > 2 && float32(notReady)/float32(notReady+ready) >= unhealthyThreshold:
		return notReady, StatePartialDisruption
	default:
		return notReady, StateNormal
	}
}

// zoneRate is the NoExecute tainting rate of a zone of size nodes in state.
func (c *Controller) zoneRate(state ZoneState, size int) float32 {
	switch state {
	case StatePartialDisruption:
		if int32(size) > c.cfg.LargeClusterSizeThreshold {
			return c.cfg.SecondaryNodeEvictionRate
		}
		return 0
	default:
		// Normal, and FullDisruption of a zone while others are up:
		// the zone is gone, evict from it at the normal rate.
		return c.cfg.NodeEvictionRate
	}
}

// ensureZone gives the node's zone a state and a taint queue if it has none.
func (c *Controller) ensureZone(logger klog.Logger, node *corev1.Node) {
	zone := nodetopology.GetZoneKey(node)
	if _, ok := c.zoneStates[zone]; ok {
		return
	}
	c.zoneStates[zone] = StateInitial
	c.zoneMu.Lock()
	defer c.zoneMu.Unlock()
	if _, ok := c.tainters[zone]; !ok {
		logger.Info("Initializing eviction for zone", "zone", zone)
		c.tainters[zone] = newTainter(c.clock, c.cfg.NodeEvictionRate)
	}
}

// tainter returns the zone's taint queue, creating it if needed.
func (c *Controller) tainter(zone string) *tainter {
	c.zoneMu.Lock()
	defer c.zoneMu.Unlock()
	t, ok := c.tainters[zone]
	if !ok {
		t = newTainter(c.clock, c.cfg.NodeEvictionRate)
		c.tainters[zone] = t
	}
	return t
}

// handleDisruption sets each zone's state and tainting rate from its nodes'
// Ready conditions. When every zone is fully disrupted the controller stops
// tainting altogether and lifts the NoExecute taints of every node; when
// that ends, every node's heartbeat clock starts afresh.
func (c *Controller) handleDisruption(ctx context.Context, zoneConditions map[string][]*corev1.NodeCondition, nodes []*corev1.Node) {
	logger := klog.FromContext(ctx)
	newStates := map[string]ZoneState{}
	allFull := true
	for zone, conds := range zoneConditions {
		_, state := ComputeZoneState(conds, c.cfg.UnhealthyZoneThreshold)
		if state != StateFullDisruption {
			allFull = false
		}
		newStates[zone] = state
		if _, ok := c.zoneStates[zone]; !ok {
			logger.Info("Setting initial state for unseen zone", "zone", zone)
			c.zoneStates[zone] = StateInitial
		}
	}
	allWereFull := true
	for zone, state := range c.zoneStates {
		if _, ok := zoneConditions[zone]; !ok {
			delete(c.zoneStates, zone)
			continue
		}
		if state != StateFullDisruption {
			allWereFull = false
		}
	}
	if allFull && allWereFull {
		// Still in (or, with no zones, never out of) the outage.
		return
	}
	switch {
	case allFull:
		logger.Info("Controller detected that all Nodes are not-Ready. Entering master disruption mode")
		// Stop tainting first (setRate waits for a tainting pass in
		// progress), then lift the taints as the apiserver has them: the
		// cache may not show the latest ones yet.
		for zone := range c.zoneStates {
			c.tainter(zone).setRate(0)
			c.zoneStates[zone] = StateFullDisruption
		}
		for _, n := range nodes {
			fresh, err := c.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err == nil {
				_, err = c.markReachable(ctx, fresh)
			}
			if err != nil {
				logger.Error(err, "Removing NoExecute taints from node failed", "node", klog.KObj(n))
			}
		}
	case allWereFull:
		logger.Info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
		now := c.clock.Now()
		for _, n := range nodes {
			if h := c.health.get(n.Name); h != nil {
				h.probe, h.readyTransition = now, now
				c.health.set(n.Name, h)
			}
		}
		for zone := range c.zoneStates {
			c.tainter(zone).setRate(c.zoneRate(newStates[zone], len(zoneConditions[zone])))
			c.zoneStates[zone] = newStates[zone]
		}
	default:
		for zone, state := range c.zoneStates {
			next := newStates[zone]
			if state == next {
				continue
			}
			logger.Info("Controller detected that zone is now in new state", "zone", zone, "newState", next)
			c.tainter(zone).setRate(c.zoneRate(next, len(zoneConditions[zone])))
			c.zoneStates[zone] = next
		}
	}
}

// processTaintBasedEviction queues an unhealthy node for its NoExecute
// taint (swapping not-ready and unreachable at once when the node has the
// other one) and lifts the taints of a healthy node.
func (c *Controller) processTaintBasedEviction(ctx context.Context, node *corev1.Node, ready *corev1.NodeCondition) {
	logger := klog.FromContext(ctx)
	switch ready.Status {
	case corev1.ConditionFalse:
		if hasTaint(node.Spec.Taints, UnreachableTaint) {
			if err := c.swapTaints(ctx, node, []corev1.Taint{NotReadyTaint}, []corev1.Taint{UnreachableTaint}); err != nil {
				logger.Error(err, "Swapping the unreachable taint for not-ready failed, will retry", "node", klog.KObj(node))
			}
		} else if c.markForTainting(node, corev1.ConditionFalse) {
			logger.V(2).Info("Node is NotReady, queued for tainting", "node", klog.KObj(node))
		}
	case corev1.ConditionUnknown:
		if hasTaint(node.Spec.Taints, NotReadyTaint) {
			if err := c.swapTaints(ctx, node, []corev1.Taint{UnreachableTaint}, []corev1.Taint{NotReadyTaint}); err != nil {
				logger.Error(err, "Swapping the not-ready taint for unreachable failed, will retry", "node", klog.KObj(node))
			}
		} else if c.markForTainting(node, corev1.ConditionUnknown) {
			logger.V(2).Info("Node is unresponsive, queued for tainting", "node", klog.KObj(node))
		}
	case corev1.ConditionTrue:
		removed, err := c.markReachable(ctx, node)
		if err != nil {
			logger.Error(err, "Removing NoExecute taints from node failed, will retry", "node", klog.KObj(node))
		}
		if removed {
			logger.V(2).Info("Node is healthy again, removed it from the taint queue", "node", klog.KObj(node))
		}
	}
}

// markForTainting queues the node in its zone unless it is queued or
// already carries the taint for status; it reports whether it queued it.
func (c *Controller) markForTainting(node *corev1.Node, status corev1.ConditionStatus) bool {
	t := c.tainter(nodetopology.GetZoneKey(node))
	switch status {
	case corev1.ConditionFalse:
		if !hasTaint(node.Spec.Taints, NotReadyTaint) {
			t.remove(node.Name)
		}
	case corev1.ConditionUnknown:
		if !hasTaint(node.Spec.Taints, UnreachableTaint) {
			t.remove(node.Name)
		}
	}
	return t.add(node.Name, string(node.UID))
}

// markReachable removes the node's NoExecute taints and takes it out of its
// zone's queue; it reports whether it was queued or handled there.
func (c *Controller) markReachable(ctx context.Context, node *corev1.Node) (bool, error) {
	if err := c.swapTaints(ctx, node, nil, []corev1.Taint{UnreachableTaint, NotReadyTaint}); err != nil {
		return false, err
	}
	return c.tainter(nodetopology.GetZoneKey(node)).remove(node.Name), nil
}

// noExecuteTaintingPass taints the due nodes of every zone, as fast as the
// zone's rate allows.
func (c *Controller) noExecuteTaintingPass(ctx context.Context) {
	logger := klog.FromContext(ctx)
	c.zoneMu.Lock()
	tainters := make([]*tainter, 0, len(c.tainters))
	for _, t := range c.tainters {
		tainters = append(tainters, t)
	}
	c.zoneMu.Unlock()
	for _, t := range tainters {
		t.try(func(name, _ string) (bool, time.Duration) {
			node, err := c.nodes.Get(name)
			if apierrors.IsNotFound(err) {
				logger.Info("Node is gone, not tainting it", "node", klog.KRef("", name))
				return true, 0
			}
			if err != nil {
				logger.Info("Getting node to taint failed", "node", klog.KRef("", name), "err", err)
				return false, 50 * time.Millisecond
			}
			ready := nodeCondition(&node.Status, corev1.NodeReady)
			if ready == nil {
				logger.Info("Node to taint has no Ready condition", "node", klog.KObj(node))
				return false, 50 * time.Millisecond
			}
			var add, opposite corev1.Taint
			switch ready.Status {
			case corev1.ConditionFalse:
				add, opposite = NotReadyTaint, UnreachableTaint
			case corev1.ConditionUnknown:
				add, opposite = UnreachableTaint, NotReadyTaint
			default:
				logger.V(4).Info("Node queued for tainting is Ready again", "node", klog.KObj(node))
				return true, 0
			}
			if err := c.swapTaints(ctx, node, []corev1.Taint{add}, []corev1.Taint{opposite}); err != nil {
				logger.Error(err, "Tainting node failed, will retry", "node", klog.KObj(node))
				return false, 0
			}
			return true, 0
		})
	}
}
