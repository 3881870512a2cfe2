// Package volume is the node agent's volume manager: it prepares the volumes
// of a pod on the node's disk and turns a container's volumeMounts into CRI
// mounts.
//
// It owns everything under <pods-dir>/<pod-uid>/:
//
//	volumes/kubernetes.io~empty-dir/<name>    emptyDir (a directory, or a tmpfs for medium Memory)
//	volumes/kubernetes.io~configmap/<name>    configMap (a directory)
//	volumes/kubernetes.io~secret/<name>       secret (a tmpfs)
//	volumes/kubernetes.io~downward-api/<name> downwardAPI (a tmpfs)
//	volumes/kubernetes.io~projected/<name>    projected (a tmpfs)
//	volume-subpaths/<volume>/<container>/<i>  bind mounts pinning subPath mounts
//	etc-hosts                                 the pod's /etc/hosts
//	containers/<name>/<random>                each container instance's termination log
//
// hostPath volumes are used in place after their type check, and so are
// persistentVolumeClaim and ephemeral volumes: the claim (for ephemeral,
// <pod>-<volume>, which must be controlled by the pod) must be Bound, and
// its PersistentVolume's hostPath or local path is what the runtime
// bind-mounts, read-only when the pod's volume says so. Other volume types
// of PersistentVolumes (CSI, NFS, ...) are refused.
//
// Files of configMap, secret, downwardAPI and projected volumes are written
// through an atomic writer: each version of the content goes into a fresh
// hidden timestamped directory, the "..data" symlink is swapped to it with a
// rename, and the user-visible names are symlinks through "..data", so a
// reader never sees a mix of two versions.
//
// Projected volumes may also hold ClusterTrustBundles (clustertrustbundle.go:
// by name, or by signer and label selector, deduplicated) and pod
// certificates (podcertificate.go: the node generates the key and creates a
// PodCertificateRequest, writes key and chain once a signer issued it, and
// requests again at beginRefreshAt; a denied or failed request fails the
// volume for the life of the pod).
//
// The agent drives the manager: SetUpPod on every pod sync (it refreshes
// contents, throttled per volume), Mounts when it creates a container,
// TearDownPod when a pod's containers are all gone, CleanupOrphans from
// housekeeping.
package volume
