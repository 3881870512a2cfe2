// Package statefulset owns the StatefulSet controller: pods with stable
// identities and storage, created, updated and removed in ordinal order,
// as upstream's controller does it.
//
// The pods of StatefulSet "web" are web-<ordinal> for the ordinals from
// spec.ordinals.start (0 by default) on, with hostname = pod name and
// subdomain = spec.serviceName, and the labels
// statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
// controller-revision-hash. Every volume claim template "data" gives each
// pod a PersistentVolumeClaim data-web-<ordinal>, created before the pod
// and never changed afterwards; spec.persistentVolumeClaimRetentionPolicy
// decides, through owner references, whether the garbage collector
// deletes claims with the set (whenDeleted) or with a scaled-away pod
// (whenScaled).
//
// With OrderedReady management a pod is created only once all lower
// ordinals are Running, Ready and available, and scale-down removes the
// highest ordinal first, one at a time, only while all pods are healthy.
// Parallel management creates and deletes without waiting. Failed or
// succeeded pods are deleted and recreated.
//
// Each template is recorded as a ControllerRevision "<set>-<hash>"; the
// status carries currentRevision and updateRevision. RollingUpdate deletes
// pods of older revisions from the highest ordinal down to
// rollingUpdate.partition, at most maxUnavailable unavailable at a time,
// and they come back at the update revision; pods below the partition keep
// (and are recreated at) the current revision. OnDelete replaces pods
// only when they are deleted. The Recreate strategy is not supported (its
// upstream feature gate is off). Status also reports replicas,
// readyReplicas, availableReplicas, currentReplicas, updatedReplicas,
// observedGeneration and collisionCount.
package statefulset
