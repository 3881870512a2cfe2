// Package controllerutil holds what the workload controllers share, with
// upstream kube-controller-manager's semantics:
//
//   - ControllerExpectations and UIDTrackingExpectations: per-owner counts of
//     creations and deletions a controller has asked for but not yet seen in
//     its informers, so that a sync does not act twice on a stale cache;
//   - PodControl: creating pods from a PodTemplateSpec with the owner's
//     controller reference, and deleting them, with the SuccessfulCreate,
//     FailedCreate, SuccessfulDelete and FailedDelete events;
//   - RefManager, PodRefManager and ObjectRefManager: claiming children by
//     label selector (adopting matching orphans, releasing owned children
//     that no longer match) with the fresh "is the owner being deleted"
//     recheck before the first adoption;
//   - pod predicates (active, terminating, ready, available) and the
//     deletion ranking of ActivePodsWithRanks, including
//     controller.kubernetes.io/pod-deletion-cost;
//   - ComputeHash, the pod-template-hash of a template;
//   - owner-reference helpers and the pod controller index.
package controllerutil
