// Package scheduling owns defaulting and validation for the
// scheduling.k8s.io/v1 kind the k1s apiserver serves: PriorityClass.
//
// It works directly on the versioned k8s.io/api/scheduling/v1 types.
// Behaviour follows upstream Kubernetes v1.37: user-defined classes may not
// exceed HighestUserDefinablePriority, names starting with "system-" are
// reserved for the built-in classes returned by SystemPriorityClasses, and
// value and preemptionPolicy are immutable. Field paths and error types match
// upstream. The code is written for k1s.
package scheduling
