package resourcequota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

// StatusFromSpec returns the status rq should have for its spec when usage
// is not measured: status.hard equal to spec.hard, and status.used with an
// entry for every hard resource, taken from used, else from rq's current
// status.used, else zero. The ResourceQuota registry can set it on create
// and on spec update while no controller maintains the status.
func StatusFromSpec(rq *corev1.ResourceQuota, used corev1.ResourceList) corev1.ResourceQuotaStatus {
	status := corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{},
		Used: corev1.ResourceList{},
	}
	for name, q := range rq.Spec.Hard {
		status.Hard[name] = q.DeepCopy()
		switch {
		case hasQuantity(used, name):
			status.Used[name] = used[name].DeepCopy()
		case hasQuantity(rq.Status.Used, name):
			status.Used[name] = rq.Status.Used[name].DeepCopy()
		default:
			status.Used[name] = resource.Quantity{Format: q.Format}
		}
	}
	return status
}

func hasQuantity(l corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := l[name]
	return ok
}

// CalculateStatus measures the usage of rq's hard resources in its
// namespace with the registry's evaluators (whose listers must have
// synced) and returns StatusFromSpec with that usage. On error the status
// still holds what could be measured, the rest carried over from rq's
// status or zero.
func CalculateStatus(rq *corev1.ResourceQuota, registry quota.Registry) (corev1.ResourceQuotaStatus, error) {
	used, err := quota.CalculateUsage(rq.Namespace, rq.Spec.Scopes, rq.Spec.Hard, registry, rq.Spec.ScopeSelector)
	status := StatusFromSpec(rq, used)
	if err != nil {
		return status, fmt.Errorf("calculate usage of resource quota %s/%s: %w", rq.Namespace, rq.Name, err)
	}
	return status, nil
}
