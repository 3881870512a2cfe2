// Package nodelifecycle is the node lifecycle controller, reproducing
// upstream's (kube-controller-manager's node-lifecycle-controller with the
// taint eviction controller folded in):
//
//   - every NodeMonitorPeriod it checks each node's last heartbeat, the
//     newer of its Lease renewal in kube-node-lease and its Ready
//     condition's heartbeat, both timed by the controller's own clock when
//     it sees them change; after the grace period without one, the node's
//     Ready, MemoryPressure, DiskPressure and PIDPressure conditions become
//     Unknown ("Kubelet stopped posting node status.") and the pods on it
//     lose their Ready condition, so they leave Service endpoints;
//   - a node whose Ready condition is False or Unknown gets the
//     node.kubernetes.io/not-ready or node.kubernetes.io/unreachable
//     NoExecute taint (the two swap as the condition changes), at a rate
//     limited per zone (topology.kubernetes.io/zone); both go when the node
//     is Ready again;
//   - each zone is Normal, PartialDisruption or FullDisruption by the share
//     of its nodes that are not Ready (ComputeZoneState); a partially
//     disrupted zone taints at the secondary rate when it is large and not
//     at all when small, and when every zone is fully disrupted the
//     controller assumes the fault is its own: it removes the NoExecute
//     taints of every node and taints none until some node is Ready again;
//   - NoSchedule taints mirror the node's conditions and spec.unschedulable
//     (TaintNodesByCondition);
//   - the taint manager (package taintmanager) deletes the pods that do not
//     tolerate their node's NoExecute taints, at once or when their
//     tolerationSeconds run out;
//   - k1s's edge autonomy (not upstream; OpenYurt's behaviour): a node
//     annotated node.k1s.io/autonomy="true" (internal/nodeautonomy; k1s
//     agent --edge-autonomy sets it) goes Unknown, is tainted and has its
//     pods marked not ready like any other, but the taint manager ignores
//     its not-ready and unreachable NoExecute taints, so its pods are not
//     deleted however long it stays away. Other NoExecute taints on it
//     still evict.
//
// Events: RegisteredNode, RemovingNode and NodeNotReady on nodes,
// NodeNotReady and TaintManagerEviction on pods.
package nodelifecycle
