// Package coordination owns defaulting and validation for the
// coordination.k8s.io/v1 kind the k1s apiserver serves: Lease.
//
// It works directly on the versioned k8s.io/api/coordination/v1 types.
// Behaviour follows upstream Kubernetes v1.37: leaseDurationSeconds must be
// positive, leaseTransitions non-negative, and the coordinated-election
// fields (strategy, preferredHolder) are checked for shape. Field paths and
// error types match upstream. The code is written for k1s.
package coordination
