// Package apps owns defaulting and validation for the apps/v1 kinds the k1s
// apiserver serves: Deployment, ReplicaSet, StatefulSet, DaemonSet and
// ControllerRevision.
//
// It works directly on the versioned k8s.io/api/apps/v1 types. Behaviour
// follows upstream Kubernetes v1.37 (the apps v1 defaulters and the apps
// validation package) with feature gates at their v1.37 defaults
// (MaxUnavailableStatefulSet on, StatefulSetRecreateStrategy off). Pod
// templates are defaulted and validated by package core; this package adds
// the workload rules on top: a non-empty selector that matches the template
// labels, restartPolicy Always, no activeDeadlineSeconds, and the
// update-strategy, history and immutability rules of each kind. Field paths
// and error types match upstream. The code is written for k1s.
//
// RegisterDefaults installs one defaulter per kind and per List into a
// runtime.Scheme; the Default<Kind> functions may also be called directly.
// Every defaulter is idempotent.
//
// Not covered here (registry strategy work): clearing status on create,
// bumping metadata.generation, and the DaemonSet template-generation
// annotation.
package apps
