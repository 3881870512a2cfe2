// Package noderestriction owns the NodeRestriction admission plugin of the
// k1s apiserver. The node authorizer (server/auth/node) lets a node write
// Nodes, pods, pod status, evictions, Leases and token requests without
// seeing the objects; this plugin checks their content so that a node can
// only modify its own Node (not its taints, owner references or restricted
// labels), create mirror pods bound to itself that reference no other API
// object, update the status of, delete and evict only pods bound to it, hold
// only its own Lease and CSINode, request tokens only for pods it runs,
// request pod certificates only for pods it runs (their, their service
// account's and its own UIDs as they are now, and a signer the pod mounts),
// create and delete only its own ResourceSlices, and request kubelet
// certificates only for its own name.
package noderestriction
