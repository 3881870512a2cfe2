package scheduler

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// Builders for nodes and pods in tests.

type nodeOpt func(*corev1.Node)

// makeNode returns a Ready node with the given cpu and memory allocatable
// (and capacity) and room for 110 pods.
func makeNode(name, cpu, mem string, opts ...nodeOpt) *corev1.Node {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(cpu),
		corev1.ResourceMemory:           resource.MustParse(mem),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name), Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Capacity: rl.DeepCopy(), Allocatable: rl,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func nodeLabels(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func nodeTaints(taints ...corev1.Taint) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

func nodeAllocatable(name corev1.ResourceName, q string) nodeOpt {
	return func(n *corev1.Node) { n.Status.Allocatable[name] = resource.MustParse(q) }
}

func unschedulableNode(n *corev1.Node) { n.Spec.Unschedulable = true }

type podOpt func(*corev1.Pod)

// makePod returns a pending pod in namespace "default" for the default
// scheduler with one container and no requests.
func makePod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: corev1.PodSpec{SchedulerName: DefaultSchedulerName, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func reqs(kv ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// requests sets the first container's requests (cpu, memory, ... pairs).
func requests(kv ...string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = reqs(kv...) }
}

func container(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", len(p.Spec.Containers)), Resources: corev1.ResourceRequirements{Requests: reqs(kv...)}})
	}
}

func initContainer(sidecar bool, kv ...string) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: reqs(kv...)}}
		if sidecar {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func podLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func inNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func priority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func tolerations(t ...corev1.Toleration) podOpt {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, t...) }
}

func hostPort(port int32, proto corev1.Protocol, ip string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: proto, HostIP: ip})
	}
}

func nodeSelector(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func affinity(a *corev1.Affinity) podOpt { return func(p *corev1.Pod) { p.Spec.Affinity = a } }

func spread(c ...corev1.TopologySpreadConstraint) podOpt {
	return func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c...) }
}

func startedAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { st := metav1.NewTime(t); p.Status.StartTime = &st }
}

func selector(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

// term is a required pod (anti-)affinity term on key selecting kv.
func term(key string, kv ...string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: selector(kv...)}
}

// newNodeInfoWith builds a nodeInfo for node with the pods on it.
func newNodeInfoWith(node *corev1.Node, pods ...*corev1.Pod) *nodeInfo {
	n := newNodeInfo(node.Name)
	n.setNode(node)
	for _, p := range pods {
		q := *p
		q.Spec.NodeName = node.Name
		n.addPod(newPodInfo(&q))
	}
	return n
}

// fakeNS is a namespaceLister over fixed namespaces.
type fakeNS map[string]labels.Set

func (f fakeNS) labelsOf(name string) labels.Set { return f[name] }
func (f fakeNS) matching(sel labels.Selector) []string {
	var out []string
	for name, l := range f {
		if sel.Matches(l) {
			out = append(out, name)
		}
	}
	return out
}

// mustCycle computes the cycle state of pod over the nodes.
func mustCycle(t *testing.T, pod *corev1.Pod, ns namespaceLister, nodes ...*nodeInfo) *cycleState {
	t.Helper()
	cs, st := newCycleState(newPodInfo(pod), newSnapshotFrom(nodes...), ns)
	if st != nil {
		t.Fatalf("pre-filter rejected %s: %v", pod.Name, st.reasons)
	}
	return cs
}

// verdict renders a status for comparison: "" for success.
func verdict(s *status) string {
	if s.ok() {
		return ""
	}
	c := map[code]string{codeUnschedulable: "Unschedulable", codeUnresolvable: "Unresolvable", codeError: "Error"}[s.code]
	return fmt.Sprintf("%s %s: %v", c, s.plugin, s.reasons)
}

func ptrTrue() *bool { b := true; return &b }

// makeReplicaSetLister lists one ReplicaSet in "default" selecting kv.
func makeReplicaSetLister(t *testing.T, name string, kv ...string) appslisters.ReplicaSetLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{Selector: selector(kv...)}}
	if err := idx.Add(rs); err != nil {
		t.Fatal(err)
	}
	return appslisters.NewReplicaSetLister(idx)
}
