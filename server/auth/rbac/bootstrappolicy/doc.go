// Package bootstrappolicy owns the default RBAC policy of a k1s cluster: the
// ClusterRoles, ClusterRoleBindings, Roles and RoleBindings the apiserver
// creates at start, matching upstream Kubernetes' defaults (with the feature
// gates at their defaults), and Reconcile, which creates the missing ones and
// adds missing rules and subjects to existing ones without removing what
// users added.
//
// Every object carries the label kubernetes.io/bootstrapping=rbac-defaults
// and the annotation rbac.authorization.kubernetes.io/autoupdate=true. An
// object whose autoupdate annotation a user set to "false" is left alone.
package bootstrappolicy
