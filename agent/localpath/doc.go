// Package localpath is the node's local-path provisioner: k3s's
// rancher.io/local-path, built into every node agent.
//
// Each node watches the cluster's PersistentVolumeClaims and
// PersistentVolumes and acts only on its own: a claim whose
// volume.kubernetes.io/storage-provisioner annotation names
// rancher.io/local-path and whose volume.kubernetes.io/selected-node is
// this node (the scheduler sets it for a WaitForFirstConsumer class) gets a
// directory <storage-path>/pvc-<uid>_<namespace>_<name> and a hostPath
// PersistentVolume pinned to the node by node affinity; the
// persistentvolume-binder controller then binds the two. A Released volume
// it provisioned with reclaim policy Delete loses its directory, data
// included, and then its PersistentVolume object. A bound claim whose
// request grows (its class allowing expansion) gets the new size on its
// volume and in its status, the external-resizer's job: a hostPath volume
// has no quota, so the size is bookkeeping, not a limit.
package localpath
