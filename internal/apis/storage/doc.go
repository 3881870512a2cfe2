// Package storage owns defaulting and validation for the storage.k8s.io/v1
// kinds the k1s apiserver serves: StorageClass, CSIDriver, CSINode,
// CSIStorageCapacity, VolumeAttachment and VolumeAttributesClass.
//
// It works directly on the versioned k8s.io/api/storage/v1 types. Behaviour
// follows upstream Kubernetes v1.37 (the storage v1 defaulters and the storage
// validation package): field paths and error types match upstream. The code is
// written for k1s.
//
// RegisterDefaults installs the StorageClass and CSIDriver defaulters (and
// their Lists) into a runtime.Scheme; DefaultStorageClass and
// DefaultCSIDriver may also be called directly. They are idempotent.
package storage
