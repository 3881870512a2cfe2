// Package policy owns defaulting and validation for the policy/v1 kinds the
// k1s apiserver serves: PodDisruptionBudget and Eviction (the body of the
// pods/eviction subresource).
//
// It works directly on the versioned k8s.io/api/policy/v1 types. Behaviour
// follows upstream Kubernetes v1.37: policy/v1 defaults nothing, a budget sets
// at most one of minAvailable and maxUnavailable (each a non-negative integer
// or a percentage up to 100%), and status counters are non-negative. Field
// paths and error types match upstream. The code is written for k1s.
package policy
