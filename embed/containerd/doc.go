// Package containerd embeds containerd for the node agent: the daemon runs
// as a supervised child process of the k1s binary (`k1s containerd`), with a
// generated config under <data-dir>/agent/containerd, its socket at
// /run/k1s/containerd/containerd.sock, and the runc shim extracted from the
// k1s binary into the data dir.
package containerd
