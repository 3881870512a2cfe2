// Package discovery owns defaulting and validation for the
// discovery.k8s.io/v1 kind the k1s apiserver serves: EndpointSlice.
//
// It works directly on the versioned k8s.io/api/discovery/v1 types.
// Behaviour follows upstream Kubernetes v1.37 (the discovery v1 defaulters and
// the discovery validation package): addressType is immutable, addresses must
// match the slice's address type, and a slice holds at most 1000 endpoints and
// 20000 ports. Field paths and error types match upstream. The code is written
// for k1s.
package discovery
