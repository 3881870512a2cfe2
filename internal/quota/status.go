package quota

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
	return statusFor(rq, used, true)
}

// statusFor builds the status; zeroFill gives hard resources without a
// measured or previous usage a zero usage instead of none.
func statusFor(rq *corev1.ResourceQuota, used corev1.ResourceList, zeroFill bool) corev1.ResourceQuotaStatus {
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
		case zeroFill:
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
// synced) and returns status.hard equal to spec.hard with that usage. A
// hard resource that no evaluator tracks, or whose measurement failed,
// keeps its previous usage or has none, so that admission reports the
// quota's status as unknown rather than charging against a made-up zero.
// On error the status still holds what could be measured.
func CalculateStatus(rq *corev1.ResourceQuota, registry quota.Registry) (corev1.ResourceQuotaStatus, error) {
	used, err := quota.CalculateUsage(rq.Namespace, rq.Spec.Scopes, rq.Spec.Hard, registry, rq.Spec.ScopeSelector)
	status := statusFor(rq, used, false)
	if err != nil {
		return status, fmt.Errorf("calculate usage of resource quota %s/%s: %w", rq.Namespace, rq.Name, err)
	}
	return status, nil
}
