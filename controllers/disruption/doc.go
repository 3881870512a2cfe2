// Package disruption owns the PodDisruptionBudget controller. For every
// budget it counts the pods its selector matches in its namespace and
// writes status through the status subresource:
//
//   - expectedPods: with maxUnavailable, or a percentage minAvailable, the
//     sum of the scales of the pods' controllers (ReplicationController,
//     Deployment through its ReplicaSet, ReplicaSet, StatefulSet, or any
//     resource with a scale subresource); with an integer minAvailable, the
//     number of matched pods;
//   - desiredHealthy: minAvailable, or expectedPods minus maxUnavailable
//     (percentages rounded up), never negative;
//   - currentHealthy: matched pods that are Ready, not being deleted and
//     not recorded in disruptedPods less than two minutes ago;
//   - disruptionsAllowed: currentHealthy - desiredHealthy, zero when
//     negative or when no pods are expected;
//   - disruptedPods: the eviction subresource's records, dropped once the
//     pod is gone or is being deleted, or after two minutes (with a
//     NotDeleted warning event);
//   - observedGeneration and the DisruptionAllowed condition
//     (SufficientPods / InsufficientPods, SyncFailed when the status cannot
//     be computed, in which case no disruption is allowed).
//
// It also resets a pod's DisruptionTarget condition to False when the
// condition has been True for two minutes without the pod being deleted
// or finishing (a disruption that did not happen).
package disruption
