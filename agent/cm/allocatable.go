package cm

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/k1s/k1s/internal/thresholds"
)

func parseQuantity(s string) (resource.Quantity, error) { return resource.ParseQuantity(s) }

// Allocatable is upstream's node allocatable: for each resource of
// capacity, capacity − kube-reserved − system-reserved − what the hard
// eviction thresholds hold back (memory.available from memory,
// nodefs.available from ephemeral-storage), never below zero.
func Allocatable(capacity, kubeReserved, systemReserved corev1.ResourceList, hard []thresholds.Threshold) corev1.ResourceList {
	eviction := thresholds.HardEvictionReservation(hard, capacity)
	out := corev1.ResourceList{}
	for name, c := range capacity {
		v := c.DeepCopy()
		for _, r := range []corev1.ResourceList{kubeReserved, systemReserved, eviction} {
			if q, ok := r[name]; ok {
				v.Sub(q)
			}
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[name] = v
	}
	return out
}

// allocatableAbsolute is capacity less the reservations, without the
// eviction thresholds: the kubepods cgroup's limit (upstream's
// GetNodeAllocatableAbsolute).
func allocatableAbsolute(capacity, kubeReserved, systemReserved corev1.ResourceList) corev1.ResourceList {
	return Allocatable(capacity, kubeReserved, systemReserved, nil)
}
