// Package networking owns defaulting and validation for the
// networking.k8s.io/v1 kinds the k1s apiserver serves: NetworkPolicy,
// Ingress and IngressClass.
//
// It works directly on the versioned k8s.io/api/networking/v1 types.
// Behaviour follows upstream Kubernetes v1.37 (the networking v1 defaulters
// and the networking validation package) with feature gates at their v1.37
// defaults: strict IP/CIDR parsing for new values (stored legacy values are
// tolerated on update) and relaxed (RFC 1123 label) Ingress backend service
// names. Field paths and error types match upstream. The code is written for
// k1s.
//
// RegisterDefaults installs one defaulter per kind and per List into a
// runtime.Scheme; the Default<Kind> functions may also be called directly.
// Every defaulter is idempotent.
package networking
