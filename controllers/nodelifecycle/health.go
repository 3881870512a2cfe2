package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	nodetopology "k8s.io/component-helpers/node/topology"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/nodelifecycle/taintmanager"
)

// Condition reasons and messages the controller writes, as upstream.
const (
	ReasonNodeStatusUnknown       = "NodeStatusUnknown"
	MessageNodeStatusUnknown      = "Kubelet stopped posting node status."
	ReasonNodeStatusNeverUpdated  = "NodeStatusNeverUpdated"
	MessageNodeStatusNeverUpdated = "Kubelet never posted node status."
)

// LabelExcludeDisruption on a node leaves it out of its zone's state.
const LabelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

const (
	// updateAttempts is how often a node's health update is tried in one
	// pass; retryWait is the pause between attempts.
	updateAttempts = 5
	retryWait      = 20 * time.Millisecond
)

// unknownConditions are the conditions set to Unknown when the heartbeat
// stops. NetworkUnavailable belongs to the network plugin, not the kubelet.
var unknownConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// nodeHealth is what the controller last saw of a node, with the times (on
// its own clock) it saw it change.
type nodeHealth struct {
	// probe is when a heartbeat was last seen.
	probe time.Time
	// readyTransition is when the Ready condition was last seen to change.
	readyTransition time.Time
	status          *corev1.NodeStatus
	lease           *coordv1.Lease
}

func (h *nodeHealth) deepCopy() *nodeHealth {
	if h == nil {
		return nil
	}
	return &nodeHealth{probe: h.probe, readyTransition: h.readyTransition, status: h.status.DeepCopy(), lease: h.lease.DeepCopy()}
}

type healthMap struct {
	mu sync.RWMutex
	m  map[string]*nodeHealth
}

func (h *healthMap) get(name string) *nodeHealth {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.m[name].deepCopy()
}

func (h *healthMap) set(name string, v *nodeHealth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[name] = v
}

func nodeCondition(status *corev1.NodeStatus, t corev1.NodeConditionType) *corev1.NodeCondition {
	if status == nil {
		return nil
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// errLeaseCacheStale: the lease cache is behind the server, so a missing
// heartbeat cannot be trusted in this pass.
var errLeaseCacheStale = errors.New("lease cache is older than the server's lease")

// monitorNodeHealth is one pass over every node: it marks nodes without a
// heartbeat Unknown, queues unhealthy nodes for NoExecute taints, marks
// their pods not ready, and updates the zones' states and rates.
func (c *Controller) monitorNodeHealth(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	added, deleted, newZones := c.classifyNodes(nodes)
	for _, n := range newZones {
		c.ensureZone(logger, n)
	}
	for _, n := range added {
		logger.V(1).Info("Controller observed a new Node", "node", klog.KObj(n))
		c.nodeEvent(n, "RegisteredNode", fmt.Sprintf("Registered Node %s in Controller", n.Name))
		c.known[n.Name] = n
		c.ensureZone(logger, n)
		if _, err := c.markReachable(ctx, n); err != nil {
			logger.Error(err, "Removing NoExecute taints from a new node failed", "node", klog.KObj(n))
		}
	}
	for _, n := range deleted {
		logger.V(1).Info("Controller observed a Node deletion", "node", klog.KObj(n))
		c.nodeEvent(n, "RemovingNode", fmt.Sprintf("Removing Node %s from Controller", n.Name))
		delete(c.known, n.Name)
	}

	var mu sync.Mutex
	zoneConditions := map[string][]*corev1.NodeCondition{}
	workqueue.ParallelizeUntil(ctx, healthWorkers, len(nodes), func(i int) {
		zone, ready, counted := c.checkNode(ctx, nodes[i])
		if !counted {
			return
		}
		mu.Lock()
		zoneConditions[zone] = append(zoneConditions[zone], ready)
		mu.Unlock()
	})
	c.handleDisruption(ctx, zoneConditions, nodes)
	return nil
}

// checkNode updates one node's health and acts on it. It returns the
// node's zone and Ready condition, and whether they count for the zone.
func (c *Controller) checkNode(ctx context.Context, cached *corev1.Node) (string, *corev1.NodeCondition, bool) {
	logger := klog.FromContext(ctx)
	node := cached.DeepCopy()
	var observed corev1.NodeCondition
	var current *corev1.NodeCondition
	var err error
	for attempt := 0; ; attempt++ {
		if observed, current, err = c.tryUpdateNodeHealth(ctx, node); err == nil {
			break
		}
		if errors.Is(err, errLeaseCacheStale) || attempt == updateAttempts-1 {
			logger.Error(err, "Updating node health failed, skipping the node in this pass: no pods will be evicted", "node", klog.KObj(node))
			return "", nil, false
		}
		select {
		case <-ctx.Done():
			return "", nil, false
		case <-time.After(retryWait):
		}
		if node, err = c.client.CoreV1().Nodes().Get(ctx, cached.Name, metav1.GetOptions{}); err != nil {
			logger.Error(err, "Getting a node to retry its health update failed; it may have been deleted", "node", klog.KObj(cached))
			return "", nil, false
		}
	}

	zone := nodetopology.GetZoneKey(node)
	_, excluded := node.Labels[LabelExcludeDisruption]

	if current != nil {
		pods, err := taintmanager.PodsOnNode(c.podIndex, node.Name)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Listing the pods of a node failed", "node", node.Name)
			if current.Status != corev1.ConditionTrue && observed.Status == corev1.ConditionTrue {
				// The transition must still mark the pods not ready.
				c.retry.Store(node.Name, struct{}{})
			}
			return zone, current, !excluded
		}
		c.processTaintBasedEviction(ctx, node, current)

		_, needsRetry := c.retry.Load(node.Name)
		mark := false
		if current.Status != corev1.ConditionTrue && observed.Status == corev1.ConditionTrue {
			c.nodeStatusEvent(node, "NodeNotReady")
			mark = true
		} else if needsRetry && observed.Status != corev1.ConditionTrue {
			mark = true
		}
		if mark {
			if err := c.markPodsNotReady(ctx, pods, node.Name); err != nil {
				utilruntime.HandleErrorWithContext(ctx, err, "Marking the pods of a node not ready failed, will retry", "node", node.Name)
				c.retry.Store(node.Name, struct{}{})
				return zone, current, !excluded
			}
		}
	}
	c.retry.Delete(node.Name)
	return zone, current, !excluded
}

// tryUpdateNodeHealth records what the node shows, and when its heartbeat
// is older than the grace period sets its conditions Unknown through the
// status subresource. It returns the Ready condition as observed and as it
// is now (nil if the node never had one and still has none).
func (c *Controller) tryUpdateNodeHealth(ctx context.Context, node *corev1.Node) (corev1.NodeCondition, *corev1.NodeCondition, error) {
	logger := klog.FromContext(ctx)
	health := c.health.get(node.Name)
	defer func() { c.health.set(node.Name, health) }()

	var observed corev1.NodeCondition
	var grace time.Duration
	current := nodeCondition(&node.Status, corev1.NodeReady)
	if current == nil {
		// Never reported: pretend a Ready condition set at creation.
		observed = corev1.NodeCondition{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionUnknown,
			LastHeartbeatTime:  node.CreationTimestamp,
			LastTransitionTime: node.CreationTimestamp,
		}
		grace = c.cfg.NodeStartupGracePeriod
		if health != nil {
			health.status = &node.Status
		} else {
			health = &nodeHealth{status: &node.Status, probe: node.CreationTimestamp.Time, readyTransition: node.CreationTimestamp.Time}
		}
	} else {
		observed = *current
		grace = c.cfg.NodeMonitorGracePeriod
	}

	var saved *corev1.NodeCondition
	var savedLease *coordv1.Lease
	if health != nil {
		saved = nodeCondition(health.status, corev1.NodeReady)
		savedLease = health.lease
	}
	now := c.clock.Now()
	switch {
	case health == nil:
		logger.Info("Missing timestamp for Node, assuming now", "node", klog.KObj(node))
		health = &nodeHealth{status: &node.Status, probe: now, readyTransition: now}
	case saved == nil && current != nil:
		logger.V(1).Info("Creating timestamp entry for newly observed Node", "node", klog.KObj(node))
		health = &nodeHealth{status: &node.Status, probe: now, readyTransition: now, lease: savedLease}
	case saved != nil && current == nil:
		logger.Error(nil, "Ready condition was removed from the status of a node", "node", klog.KObj(node))
		health = &nodeHealth{status: &node.Status, probe: now, readyTransition: now, lease: savedLease}
	case saved != nil && current != nil && !saved.LastHeartbeatTime.Equal(&current.LastHeartbeatTime):
		transition := health.readyTransition
		if !saved.LastTransitionTime.Equal(&current.LastTransitionTime) {
			logger.V(3).Info("Ready condition of node transitioned", "node", klog.KObj(node), "from", saved.Status, "to", current.Status)
			transition = now
		}
		health = &nodeHealth{status: &node.Status, probe: now, readyTransition: transition, lease: savedLease}
	}
	// A renewed lease is a heartbeat too. A node that renews its lease but
	// never posted a status is taken as healthy.
	lease, _ := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name)
	if lease != nil && (health.lease == nil || health.lease.Spec.RenewTime.Before(lease.Spec.RenewTime)) {
		health.lease = lease
		health.probe = now
	}

	if !now.After(health.probe.Add(grace)) {
		return observed, current, nil
	}
	if err := c.checkLeaseFresh(ctx, node.Name, lease); err != nil {
		return observed, current, err
	}

	stamp := metav1.NewTime(now)
	for _, t := range unknownConditions {
		cond := nodeCondition(&node.Status, t)
		if cond == nil {
			logger.V(2).Info("Condition of node was never updated by the kubelet", "node", klog.KObj(node), "condition", t)
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type:               t,
				Status:             corev1.ConditionUnknown,
				Reason:             ReasonNodeStatusNeverUpdated,
				Message:            MessageNodeStatusNeverUpdated,
				LastHeartbeatTime:  node.CreationTimestamp,
				LastTransitionTime: stamp,
			})
			continue
		}
		logger.V(2).Info("Node has not been heard from", "node", klog.KObj(node), "for", now.Sub(health.probe), "condition", t)
		if cond.Status != corev1.ConditionUnknown {
			cond.Status = corev1.ConditionUnknown
			cond.Reason = ReasonNodeStatusUnknown
			cond.Message = MessageNodeStatusUnknown
			cond.LastTransitionTime = stamp
		}
	}
	current = nodeCondition(&node.Status, corev1.NodeReady)
	if apiequality.Semantic.DeepEqual(current, &observed) {
		return observed, current, nil
	}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return observed, current, fmt.Errorf("set conditions of node %s Unknown: %w", node.Name, err)
	}
	health = &nodeHealth{status: &node.Status, probe: health.probe, readyTransition: now, lease: lease}
	return observed, current, nil
}

// checkLeaseFresh makes sure a heartbeat the cache misses is really
// missing: the server's lease must be the one in the cache (upstream's
// lease circuit breaker).
func (c *Controller) checkLeaseFresh(ctx context.Context, name string, cached *coordv1.Lease) error {
	live, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%w: get lease of node %s: %w", errLeaseCacheStale, name, err)
	case cached == nil || live.ResourceVersion != cached.ResourceVersion:
		cachedRV := ""
		if cached != nil {
			cachedRV = cached.ResourceVersion
		}
		return fmt.Errorf("%w: node %s lease at resourceVersion %s, cache at %q", errLeaseCacheStale, name, live.ResourceVersion, cachedRV)
	}
	return nil
}

// classifyNodes sorts the listed nodes into those new to the controller,
// those gone, and known ones whose zone has no state.
func (c *Controller) classifyNodes(all []*corev1.Node) (added, deleted, newZones []*corev1.Node) {
	seen := make(map[string]bool, len(all))
	for _, n := range all {
		seen[n.Name] = true
		if _, ok := c.known[n.Name]; !ok {
			added = append(added, n)
			continue
		}
		if _, ok := c.zoneStates[nodetopology.GetZoneKey(n)]; !ok {
			newZones = append(newZones, n)
		}
	}
	for name, n := range c.known {
		if !seen[name] {
			deleted = append(deleted, n)
		}
	}
	return added, deleted, newZones
}

// nodeEvent records a Normal event "Node <name> event: <msg>" on node.
func (c *Controller) nodeEvent(node *corev1.Node, reason, msg string) {
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	c.recorder.Eventf(ref, corev1.EventTypeNormal, reason, "Node %s event: %s", node.Name, msg)
}

// nodeStatusEvent records "Node <name> status is now: <status>".
func (c *Controller) nodeStatusEvent(node *corev1.Node, status string) {
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	c.recorder.Eventf(ref, corev1.EventTypeNormal, status, "Node %s status is now: %s", node.Name, status)
}
