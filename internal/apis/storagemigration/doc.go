// Package storagemigration owns validation for the storagemigration.k8s.io/v1
// kind the k1s apiserver serves: StorageVersionMigration.
//
// It works directly on the versioned k8s.io/api/storagemigration/v1 types.
// Behaviour follows upstream Kubernetes v1.37: the spec names a resource (a
// DNS-1035 label) and optionally its group (a DNS subdomain) and is
// immutable; status.resourceVersion is well formed and set once; the
// Succeeded and Failed conditions exclude each other and stay once true.
// StorageVersionMigration has no defaulted fields. Field paths and error
// types match upstream. The code is written for k1s.
package storagemigration
