// Package quota holds k1s's ResourceQuota evaluators, shared by the
// apiserver's ResourceQuota admission plugin (server/admission/resourcequota)
// and the resourcequota controller that keeps status.used: each is a
// quota.Evaluator of k8s.io/apiserver/pkg/quota/v1.
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
// CalculateStatus measures a quota's status.used from a registry with
// synced listers (NewRegistry with ListerFuncForFactory); StatusFromSpec
// copies spec.hard with zero usage.
package quota
