package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func podWith(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func requesting(cpu, mem string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
		}
	}
}

func port(hostIP string, proto corev1.Protocol, n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: n, HostIP: hostIP, Protocol: proto})
	}
}

func TestGeneral(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("1Gi"),
			corev1.ResourcePods:   resource.MustParse("3"),
		}},
	}
	tainted := node.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}
	tests := []struct {
		name       string
		node       *corev1.Node
		pod        *corev1.Pod
		others     []*corev1.Pod
		wantReason string
		wantMsg    string
	}{
		{name: "fits", node: node, pod: podWith("p", requesting("1", "512Mi")), others: []*corev1.Pod{podWith("o", requesting("1", "256Mi"))}},
		{name: "no node yet admits", pod: podWith("p", requesting("100", ""))},
		{name: "cpu short", node: node, pod: podWith("p", requesting("1500m", "")), others: []*corev1.Pod{podWith("o", requesting("1", ""))},
			wantReason: "OutOfcpu", wantMsg: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{name: "memory short", node: node, pod: podWith("p", requesting("", "1Gi")), others: []*corev1.Pod{podWith("o", requesting("", "1Mi"))},
			wantReason: "OutOfmemory"},
		{name: "pod count", node: node, pod: podWith("p", nil), others: []*corev1.Pod{podWith("a", nil), podWith("b", nil), podWith("c", nil)},
			wantReason: "OutOfpods", wantMsg: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "extended resource the node lacks", node: node, pod: podWith("p", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		}), wantReason: "OutOfexample.com/gpu"},
		{name: "host port taken", node: node, pod: podWith("p", port("", "", 21017)), others: []*corev1.Pod{podWith("o", port("", corev1.ProtocolTCP, 21017))},
			wantReason: "NodePorts", wantMsg: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port other protocol", node: node, pod: podWith("p", port("", corev1.ProtocolUDP, 21017)), others: []*corev1.Pod{podWith("o", port("", corev1.ProtocolTCP, 21017))}},
		{name: "host port other IPs", node: node, pod: podWith("p", port("10.0.0.1", "", 21017)), others: []*corev1.Pod{podWith("o", port("10.0.0.2", "", 21017))}},
		{name: "host port wildcard against an IP", node: node, pod: podWith("p", port("0.0.0.0", "", 21017)), others: []*corev1.Pod{podWith("o", port("10.0.0.2", "", 21017))},
			wantReason: "NodePorts"},
		{name: "node selector", node: node, pod: podWith("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			wantReason: "NodeAffinity", wantMsg: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "node selector matches", node: node, pod: podWith("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} })},
		{name: "other node's name", node: node, pod: podWith("p", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }), wantReason: "NodeName"},
		{name: "untolerated NoExecute", node: tainted, pod: podWith("p", nil), wantReason: "TaintToleration"},
		{name: "tolerated NoExecute", node: tainted, pod: podWith("p", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		})},
		{name: "static pod ignores taints", node: tainted, pod: podWith("p", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := General{Node: func() *corev1.Node { return tc.node }}
			r := g.Admit(tc.pod, tc.others)
			if tc.wantReason == "" {
				if !r.Admit {
					t.Fatalf("refused: %+v", r)
				}
				return
			}
			if r.Admit || r.Reason != tc.wantReason {
				t.Fatalf("got %+v, want reason %s", r, tc.wantReason)
			}
			if tc.wantMsg != "" && r.Message != tc.wantMsg {
				t.Errorf("message %q, want %q", r.Message, tc.wantMsg)
			}
		})
	}
}

func TestChainFirstRefusal(t *testing.T) {
	calls := 0
	refuse := func(reason string) Handler {
		return HandlerFunc(func(*corev1.Pod, []*corev1.Pod) Result { calls++; return Result{Reason: reason} })
	}
	r := Chain(podWith("p", nil), nil, nil, HandlerFunc(func(*corev1.Pod, []*corev1.Pod) Result { calls++; return Result{Admit: true} }), refuse("First"), refuse("Second"))
	if r.Admit || r.Reason != "First" || calls != 2 {
		t.Fatalf("got %+v after %d calls", r, calls)
	}
	if r := Chain(podWith("p", nil), nil); !r.Admit {
		t.Fatalf("an empty chain refused: %+v", r)
	}
}
