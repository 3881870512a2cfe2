// Package replication owns the ReplicationController controller
// (kube-controller-manager's replicationcontroller-controller): it keeps
// spec.replicas pods for every core/v1 ReplicationController by running
// controllers/replicaset's controller over ReplicationControllers seen as
// ReplicaSets, as upstream's ReplicationManager does. Its Owners adapter
// converts a ReplicationController (a map selector, a template pointer,
// conditions of their own type) into a ReplicaSet on the way in and back
// on the way out, so pods are owned by, events recorded on and status
// written to the ReplicationController; everything else (expectations,
// slow-start creation, deletion ranking, adoption and release, status with
// the ReplicaFailure condition) is the ReplicaSet controller's.
package replication
