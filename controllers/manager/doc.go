// Package manager owns the controller manager of `k1s server`: which
// controllers run (--controllers, with kube-controller-manager's syntax and
// names), leader election on a coordination.k8s.io Lease so that one of
// several servers sharing a datastore runs them, the per-controller
// credentials (each controller acts as its own kube-system service account,
// bound by the default RBAC policy), and the informer factories the
// controllers share.
//
// The controllers themselves live in sibling packages; each exports a
// Descriptor returning the Controller the manager is given. The manager
// imports none of them.
package manager
