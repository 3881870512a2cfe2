// Package defaulttolerationseconds owns the DefaultTolerationSeconds
// admission plugin of the k1s apiserver.
//
// On pod create and update it gives every pod a bounded toleration for the
// node.kubernetes.io/not-ready and node.kubernetes.io/unreachable NoExecute
// taints, unless the pod already tolerates them, so that pods are evicted
// from a lost node after a grace period instead of never (no toleration
// would evict at once; an unbounded one would never evict). The grace
// periods come from Config and are bound to the server flags
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
package defaulttolerationseconds
