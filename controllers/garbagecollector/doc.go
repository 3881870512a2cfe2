// Package garbagecollector owns the garbage collector: it deletes objects
// whose owners (metadata.ownerReferences) are gone, and carries out the
// foreground and orphan deletion policies the apiserver records as
// finalizers.
//
// It watches the metadata of every resource that discovery reports as
// deletable (supporting delete, list and watch; events excepted), and
// rediscovers periodically so that custom resources are covered as they
// appear and dropped as they go. From the watches it keeps a graph of
// owner → dependent edges keyed by UID; an owner referenced before it is
// seen is a virtual node, checked against the apiserver.
//
// Policies, as upstream:
//   - background: once an owner is gone (or replaced by an object of
//     another UID), each dependent whose other owners are gone too is
//     deleted (with the policy its own finalizers ask for, else
//     background); a dependent with a remaining owner only loses the
//     references to the missing ones.
//   - foreground: an owner being deleted with the foregroundDeletion
//     finalizer has its dependents deleted (dependents that have
//     dependents of their own in the foreground); the finalizer is removed,
//     letting the owner go, once no dependent with blockOwnerDeletion is
//     left.
//   - orphan: an owner being deleted with the orphan finalizer has its
//     reference removed from every dependent, then the finalizer.
//
// Owner references are resolved in the dependent's namespace (namespaced
// owners) or cluster-wide (cluster-scoped owners); a cluster-scoped object
// naming a namespaced owner is invalid and ignored, and a reference to an
// owner in another namespace counts as absent (with an
// OwnerRefInvalidNamespace warning event).
package garbagecollector
