// Package resourcequota owns the quota evaluators of the k1s apiserver and
// assembles k8s.io/apiserver's ResourceQuota admission plugin with them.
//
// Evaluators (each a quota.Evaluator of k8s.io/apiserver/pkg/quota/v1):
//
//   - pods: count/pods and, for pods that are not terminal (Succeeded,
//     Failed, or deleting past their grace period), pods, requests.cpu,
//     requests.memory, requests.ephemeral-storage, their cpu/memory/
//     ephemeral-storage shorthands, limits.*, hugepages-* and
//     requests.hugepages-*, and requests.<name> for extended resources;
//     scopes Terminating, NotTerminating, BestEffort, NotBestEffort,
//     PriorityClass (scopeSelector In/NotIn/Exists/DoesNotExist) and
//     CrossNamespacePodAffinity;
//   - services: count/services, services, services.nodeports,
//     services.loadbalancers;
//   - persistentvolumeclaims: count/persistentvolumeclaims,
//     persistentvolumeclaims, requests.storage, and
//     <class>.storageclass.storage.k8s.io/persistentvolumeclaims and
//     .../requests.storage; scope VolumeAttributesClass;
//   - object counts (count/<resource>.<group>) for DefaultCountedResources,
//     with the legacy names configmaps, secrets, replicationcontrollers and
//     resourcequotas. Admission adds a count evaluator for any other
//     resource on first use.
//
// The usage functions (PodUsage, ServiceUsage, PVCUsage) and
// CalculateStatus are exported so that a ResourceQuota controller keeping
// status.used can share the evaluators with admission.
//
// Integration note: the admission plugin enforces status.hard, not
// spec.hard, and rejects a request that a quota matches while its
// status.used lacks an entry for a hard resource ("status unknown for
// quota"). Upstream a controller copies spec.hard to status.hard and
// recomputes status.used, which also releases the usage of deleted
// objects; admission only adds the usage of the objects it admits. Until
// k1s has that controller, the ResourceQuota registry must set the status
// itself on create and on spec update: CalculateStatus(quota, registry)
// when it has a registry with synced listers (NewRegistry with
// ListerFuncForFactory), else StatusFromSpec(quota, nil), which counts
// objects that already exist as zero. Either way usage then only grows
// (deletes are not released) until the controller exists.
package resourcequota
