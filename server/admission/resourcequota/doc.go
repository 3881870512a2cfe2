// Package resourcequota assembles k8s.io/apiserver's ResourceQuota
// admission plugin with k1s's evaluators (internal/quota, which the
// resourcequota controller shares).
//
// The admission plugin enforces status.hard, not spec.hard, and rejects a
// request that a quota matches while its status.used lacks an entry for a
// hard resource ("status unknown for quota"); the resourcequota controller
// copies spec.hard to status.hard and recomputes status.used, which also
// releases the usage of deleted objects; admission only adds the usage of
// the objects it admits.
package resourcequota
