// Package cm is the node's container manager, after the kubelet's: the
// cgroup hierarchy pods run in (cgroupfs layout, cgroup v1 and v2):
//
//	<cgroup-root>/kubepods                   node allocatable limits; Guaranteed pods' parent
//	<cgroup-root>/kubepods/burstable         shares = the Burstable pods' cpu requests
//	<cgroup-root>/kubepods/besteffort        2 shares
//	<cgroup-root>/kubepods[/<qos>]/pod<uid>  one per pod: its summed requests and limits
//
// the pod cgroup being the sandbox's cgroup parent, so the runtime puts
// the pod's containers under it; and the node's allocatable resources
// (capacity − --kube-reserved − --system-reserved − hard eviction
// thresholds). It also watches the kernel log for OOM kills (OOMWatcher).
// Nothing here imports server/.
package cm
