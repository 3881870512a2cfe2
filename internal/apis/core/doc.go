// Package core owns defaulting and validation for the core/v1 kinds that the
// k1s apiserver serves (Pod, PodTemplate, Service, Endpoints, Node, Namespace,
// Secret, ConfigMap, ServiceAccount, Event, PersistentVolume,
// PersistentVolumeClaim, ResourceQuota, LimitRange, ReplicationController).
//
// It works directly on the versioned k8s.io/api/core/v1 types. Behaviour
// follows upstream Kubernetes v1.37 (the v1 defaulters and the core
// validation package) with the feature gates at their v1.37 defaults; the
// code is written for k1s and keeps upstream's field paths, error types and
// the meaning of its messages so that clients see familiar errors.
//
// Defaulting: RegisterDefaults installs a defaulter per kind (and its List)
// into a runtime.Scheme; the Default<Kind> helpers can be called directly,
// and DefaultPodTemplateSpec serves the apps and batch groups. Every
// defaulter is idempotent.
//
// Validation: the Validate<Kind>[Update|StatusUpdate] functions return a
// field.ErrorList and are meant to be called from registry strategies after
// defaulting. ValidatePodTemplateSpec and ValidatePodSpec serve workload
// kinds in other groups; those callers add their own restartPolicy and
// selector rules.
//
// Service IP family handling that upstream performs in the service REST
// layer (not in defaulting) is exposed as DefaultServiceIPFamilies and
// NormalizeServiceClusterIPs for the service registry to call.
package core
