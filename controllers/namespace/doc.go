// Package namespace owns namespace deletion: once a namespace is deleted
// (deletionTimestamp set, phase Terminating) the controller deletes every
// namespaced object in it, whatever its resource (discovered, so custom
// resources included), pods first; it reports progress in the namespace's
// deletion conditions and retries while content remains; when the
// namespace is empty it removes the "kubernetes" spec finalizer through
// namespaces/finalize and deletes the namespace again so that the apiserver
// removes it.
//
// Metadata finalizers on the namespace itself (orphan, foregroundDeletion)
// belong to the garbage collector and are left in place; a namespace that
// carries them stays until they are removed.
package namespace
