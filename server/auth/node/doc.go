// Package node owns the node authorizer of the k1s apiserver: it limits what
// a node agent (a user system:node:<name> in group system:nodes) may read to
// the objects used by pods bound to that node, and what it may write to its
// own Node, Lease and pods, leaving the content checks of those writes to
// the NodeRestriction admission plugin (server/admission/noderestriction).
//
// Its index of which node uses which secret, configmap, claim, volume and
// service account is kept from pod and PersistentVolume informers in plain
// maps.
package node
