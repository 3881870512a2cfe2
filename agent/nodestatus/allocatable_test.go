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

// TestExtendedResourcesKept: an extended resource patched into the node's
// status (as upstream's e2e framework and device operators do) stays in
// capacity and allocatable when the agent posts its status; a native
// resource it does not report is not carried over.
func TestExtendedResourcesKept(t *testing.T) {
	m, _, _, _ := newTest(t, testConfig(t))
	old := &corev1.NodeStatus{Capacity: corev1.ResourceList{
		"example.com/fakecpu":            resource.MustParse("1k"),
		"hugepages-2Mi":                  resource.MustParse("0"),
		"requests.example.com/x":         resource.MustParse("1"),
		corev1.ResourceCPU:               resource.MustParse("12345"),
		"kubernetes.io/something-native": resource.MustParse("1"),
	}}
	st := m.status(context.Background(), old)
	for name, want := range map[corev1.ResourceName]bool{
		"example.com/fakecpu": true, "hugepages-2Mi": false, "requests.example.com/x": false, "kubernetes.io/something-native": false,
	} {
		_, inCap := st.Capacity[name]
		_, inAlloc := st.Allocatable[name]
		if inCap != want || inAlloc != want {
			t.Errorf("%s: in capacity %v, allocatable %v; want %v", name, inCap, inAlloc, want)
		}
	}
	if q := st.Allocatable["example.com/fakecpu"]; q.Cmp(resource.MustParse("1k")) != 0 {
		t.Errorf("allocatable example.com/fakecpu = %s, want 1k", q.String())
	}
	if q := st.Capacity[corev1.ResourceCPU]; q.Cmp(resource.MustParse("12345")) == 0 {
		t.Errorf("the old cpu capacity was carried over instead of the machine's")
	}
}
