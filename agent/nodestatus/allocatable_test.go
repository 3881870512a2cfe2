package nodestatus

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAllocatableFromContainerManager(t *testing.T) {
	cfg := testConfig(t)
	cfg.Allocatable = func(capacity corev1.ResourceList) corev1.ResourceList {
		out := capacity.DeepCopy()
		mem := out[corev1.ResourceMemory]
		mem.Sub(resource.MustParse("256Mi"))
		out[corev1.ResourceMemory] = mem
		return out
	}
	m, client, _, _ := newTest(t, cfg)
	if err := m.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capMem, allocMem := node.Status.Capacity[corev1.ResourceMemory], node.Status.Allocatable[corev1.ResourceMemory]
	if capMem.Value()-allocMem.Value() != 256<<20 {
		t.Errorf("allocatable memory %s, want capacity %s − 256Mi", allocMem.String(), capMem.String())
	}
	capCPU, allocCPU := node.Status.Capacity[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceCPU]
	if capCPU.Cmp(allocCPU) != 0 {
		t.Errorf("allocatable cpu %s, want capacity %s", allocCPU.String(), capCPU.String())
	}
}
