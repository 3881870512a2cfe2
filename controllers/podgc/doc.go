// Package podgc is the pod garbage collector, reproducing upstream's: every
// check period it force-deletes (grace period 0)
//
//   - the oldest terminated (Succeeded or Failed) pods beyond
//     --terminated-pod-gc-threshold, evicted pods first;
//   - pods bound to a node that no longer exists, once the node has been
//     missing for the quarantine time and the apiserver confirms it is gone,
//     after giving them a DisruptionTarget condition (DeletionByPodGC);
//   - terminating pods that were never scheduled;
//   - terminating pods on a NotReady node tainted
//     node.kubernetes.io/out-of-service.
//
// A pod that has not reached a terminal phase is set Failed (through the
// status subresource) before it is deleted.
package podgc
