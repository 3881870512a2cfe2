// Package rbac owns defaulting and validation for the
// rbac.authorization.k8s.io/v1 kinds the k1s apiserver serves: Role,
// ClusterRole, RoleBinding and ClusterRoleBinding.
//
// It works directly on the versioned k8s.io/api/rbac/v1 types. Behaviour
// follows upstream Kubernetes v1.37 (the rbac v1 defaulters and the rbac
// validation package): field paths and error types match upstream so clients
// see familiar errors. The code is written for k1s.
//
// RegisterDefaults installs one defaulter per kind and per List into a
// runtime.Scheme; the Default<Kind> functions may also be called directly.
// Every defaulter is idempotent.
//
// Validate<Kind> checks an object on create and Validate<Kind>Update checks an
// update against the stored object. Neither performs the privilege-escalation
// checks of the RBAC registry; those belong to the authorizer-aware storage
// layer.
package rbac
