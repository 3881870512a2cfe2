// Package containerd embeds containerd for the node agent.
//
// The daemon runs as a supervised child process of the k1s binary
// (`k1s containerd --config <file>`, see RunDaemon), with a config
// generated on every start from Config: CRI plugin with the runc runtime
// (cgroupfs, restrict_oom_score_adj), the overlayfs snapshotter, the
// sandbox image k1s.local/pause:3.10, no registry configuration at all,
// state under /run/k1s/containerd (on a tmpfs: k1s mounts one there when
// the directory is on disk and nothing in it is in use) and its socket at
// /run/k1s/containerd/containerd.sock. Containers outlive it in their
// shims; a restarted containerd re-adopts them.
//
// The k1s binary carries two assets, built by `make build` into assets/:
// the runc shim (a small executable of its own, since one runs per pod),
// extracted into <data-dir>/data/<hash>/bin at start, and the pause image,
// imported with ImportImages together with the image archives in
// <data-dir>/agent/images.
//
// Sub-package killall stops everything k1s started on the machine.
package containerd
