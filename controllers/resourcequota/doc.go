// Package resourcequota owns the ResourceQuota controller: it keeps each
// quota's status.hard equal to spec.hard and status.used equal to the
// measured usage of the quota's hard resources in its namespace, using the
// evaluators the apiserver's ResourceQuota admission uses
// (internal/quota).
//
// Admission only adds the usage of objects it admits; this controller is
// what releases usage when objects are deleted or pods finish. A quota is
// recomputed when its spec changes, when an object of a resource that one
// of its hard resources measures is added, deleted or changes usage in its
// namespace, and every resync period (upstream's
// --resource-quota-sync-period, 5 minutes).
package resourcequota
