// Package checkpoint keeps on the node's disk the last state the agent
// received of everything its pods need, so that a node cut off from its
// apiservers — and one that restarts while cut off — keeps running them
// (edge autonomy; KubeEdge's and OpenYurt's idea, k1s's code).
//
// The checkpoint lives in <data-dir>/agent/checkpoint (0700), one JSON
// file (0600, root only) per object under a directory per kind:
//
//	pods/            the pods bound to the node (the agent's API pod source)
//	configmaps/      ConfigMaps and Secrets the agent read for those pods
//	secrets/         (volumes, env, envFrom), pruned when no checkpointed pod names them
//	tokens/          the last projected service-account token of each pod's volume source
//	services/        every Service and EndpointSlice (the proxy, the DNS and
//	endpointslices/  service environment variables read them all)
//	nodes/           the node's own Node (metadata and spec; conditions and images left out)
//
// Each file is written atomically (a temporary file, fsync, rename, fsync
// of the directory) and only when its content changed; managedFields and
// resourceVersion are left out so that a write the agent would not act on
// writes nothing. The whole checkpoint is bounded (Config.MaxBytes): an
// object that would pass the bound is not kept, and says so in the log.
//
// ListWatch wraps an informer's ListerWatcher: a successful list replaces
// the kind's checkpoint (pruning what went away), watch events update it,
// and while the apiservers cannot be reached the list is answered from the
// checkpoint — the informer then syncs, and lists again (with client-go's
// back-off) until an apiserver answers, which reconciles it.
package checkpoint
