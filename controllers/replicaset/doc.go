// Package replicaset owns the ReplicaSet controller: it keeps
// spec.replicas active pods for every ReplicaSet, as upstream's does. It
// claims pods by the selector (adopting orphans, releasing pods whose
// labels no longer match), creates missing pods in slow-start batches (1,
// 2, 4, ... stopping at the first failed batch), deletes surplus pods in
// the order of controllerutil.ActivePodsWithRanks (ranked by how many pods
// of the same owner share their node), waits on expectations between
// syncs, and writes status (replicas, fullyLabeledReplicas, readyReplicas,
// availableReplicas after minReadySeconds, terminatingReplicas,
// observedGeneration and the ReplicaFailure condition) through the status
// subresource when it changes. The objects it syncs are Owners: apps/v1
// ReplicaSets, or another kind seen as ReplicaSets through an adapter
// (controllers/replication runs it over core/v1 ReplicationControllers,
// as upstream's ReplicationManager runs upstream's ReplicaSet controller).
package replicaset
