// Package deployment owns the Deployment controller, with upstream's
// behaviour: every Deployment owns ReplicaSets named
// "<deployment>-<pod-template-hash>" whose template carries the
// pod-template-hash label; a template change creates a new ReplicaSet and
// rolls pods over to it (RollingUpdate within maxSurge and maxUnavailable,
// or Recreate: all old pods gone first); revisions are numbered in the
// deployment.kubernetes.io/revision annotation of the ReplicaSets and the
// Deployment, and an old ReplicaSet whose template comes back (kubectl
// rollout undo patches the template) becomes the new one again with the
// next revision; old ReplicaSets beyond revisionHistoryLimit are deleted;
// paused Deployments do not roll out but still scale, proportionally
// across ReplicaSets during a rollout; the Progressing condition
// (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
// NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused,
// DeploymentResumed) and the Available condition (MinimumReplicasAvailable,
// MinimumReplicasUnavailable) and the status counts are what kubectl
// rollout status, history, undo, pause, resume and restart read.
package deployment
