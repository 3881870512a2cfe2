package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// filterCase runs every filter for pod against node "target" among nodes.
type filterCase struct {
	name  string
	nodes []*nodeInfo // the first is the target unless target is set
	pod   *corev1.Pod
	ns    namespaceLister
	want  string
}

func runFilterCases(t *testing.T, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, st := newCycleState(newPodInfo(tc.pod), newSnapshotFrom(tc.nodes...), tc.ns)
			if st != nil {
				if got := verdict(st); got != tc.want {
					t.Fatalf("pre-filter: got %q, want %q", got, tc.want)
				}
				return
			}
			if got := verdict(runFilters(cs, tc.nodes[0])); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func one(n *corev1.Node, pods ...*corev1.Pod) []*nodeInfo {
	return []*nodeInfo{newNodeInfoWith(n, pods...)}
}

func TestFilterNodeNameAndUnschedulable(t *testing.T) {
	runFilterCases(t, []filterCase{
		{name: "no node name", nodes: one(makeNode("n1", "1", "1Gi")), pod: makePod("p")},
		{name: "other node name", nodes: one(makeNode("n1", "1", "1Gi")), pod: makePod("p", onNode("n2")),
			want: "Unresolvable NodeName: [node(s) didn't match the requested node name]"},
		{name: "unschedulable node", nodes: one(makeNode("n1", "1", "1Gi", unschedulableNode)), pod: makePod("p"),
			want: "Unresolvable NodeUnschedulable: [node(s) were unschedulable]"},
		{name: "unschedulable node, tolerated", nodes: one(makeNode("n1", "1", "1Gi", unschedulableNode)),
			pod: makePod("p", tolerations(corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}))},
		{name: "unschedulable node, toleration of everything", nodes: one(makeNode("n1", "1", "1Gi", unschedulableNode)),
			pod: makePod("p", tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}))},
		{name: "unschedulable node, NoExecute toleration does not help", nodes: one(makeNode("n1", "1", "1Gi", unschedulableNode)),
			pod:  makePod("p", tolerations(corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})),
			want: "Unresolvable NodeUnschedulable: [node(s) were unschedulable]"},
	})
}

func TestFilterTaintToleration(t *testing.T) {
	cp := corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	gpu := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoExecute}
	soft := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	const untolerated = "Unresolvable TaintToleration: [node(s) had untolerated taint(s)]"
	runFilterCases(t, []filterCase{
		{name: "NoSchedule untolerated", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(cp))), pod: makePod("p"), want: untolerated},
		{name: "NoExecute untolerated", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(gpu))), pod: makePod("p"), want: untolerated},
		{name: "PreferNoSchedule does not filter", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(soft))), pod: makePod("p")},
		{name: "Exists on the key", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(cp))),
			pod: makePod("p", tolerations(corev1.Toleration{Key: cp.Key, Operator: corev1.TolerationOpExists}))},
		{name: "Equal with the value", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(gpu))),
			pod: makePod("p", tolerations(corev1.Toleration{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoExecute}))},
		{name: "Equal with another value", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(gpu))),
			pod: makePod("p", tolerations(corev1.Toleration{Key: "gpu", Value: "false"})), want: untolerated},
		{name: "other effect", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(gpu))),
			pod: makePod("p", tolerations(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})), want: untolerated},
		{name: "one of two taints tolerated", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(cp, gpu))),
			pod: makePod("p", tolerations(corev1.Toleration{Key: cp.Key, Operator: corev1.TolerationOpExists})), want: untolerated},
		{name: "comparison operators are not enabled", nodes: one(makeNode("n1", "1", "1Gi", nodeTaints(corev1.Taint{Key: "level", Value: "5", Effect: corev1.TaintEffectNoSchedule}))),
			pod: makePod("p", tolerations(corev1.Toleration{Key: "level", Operator: corev1.TolerationOpGt, Value: "3"})), want: untolerated},
	})
}

func nodeAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

func TestFilterNodeAffinity(t *testing.T) {
	zoneA := makeNode("n1", "1", "1Gi", nodeLabels("zone", "a", "disk", "ssd"))
	const mismatch = "Unresolvable NodeAffinity: [node(s) didn't match Pod's node affinity/selector]"
	in := func(key string, op corev1.NodeSelectorOperator, v ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: v}}}
	}
	byName := func(names ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: names}}}
	}
	runFilterCases(t, []filterCase{
		{name: "selector matches", nodes: one(zoneA), pod: makePod("p", nodeSelector("zone", "a"))},
		{name: "selector mismatch", nodes: one(zoneA), pod: makePod("p", nodeSelector("zone", "b")), want: mismatch},
		{name: "selector and affinity both needed", nodes: one(zoneA), pod: makePod("p", nodeSelector("zone", "a"), affinity(nodeAffinity(in("disk", corev1.NodeSelectorOpIn, "hdd")))), want: mismatch},
		{name: "terms are ORed", nodes: one(zoneA), pod: makePod("p", affinity(nodeAffinity(in("disk", corev1.NodeSelectorOpIn, "hdd"), in("zone", corev1.NodeSelectorOpIn, "a"))))},
		{name: "NotIn", nodes: one(zoneA), pod: makePod("p", affinity(nodeAffinity(in("zone", corev1.NodeSelectorOpNotIn, "a")))), want: mismatch},
		{name: "DoesNotExist", nodes: one(zoneA), pod: makePod("p", affinity(nodeAffinity(in("gpu", corev1.NodeSelectorOpDoesNotExist))))},
		{name: "metadata.name", nodes: one(zoneA), pod: makePod("p", affinity(nodeAffinity(byName("n1"))))},
		{name: "metadata.name of another node", nodes: one(zoneA), pod: makePod("p", affinity(nodeAffinity(byName("n2")))), want: mismatch},
		{name: "conflicting names", nodes: one(zoneA),
			pod:  makePod("p", affinity(nodeAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}, {Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}}))),
			want: "Unresolvable NodeAffinity: [pod affinity terms conflict]"},
	})
}

func TestNodeNamesFromTerms(t *testing.T) {
	name := func(v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: v}
	}
	cases := []struct {
		name     string
		terms    []corev1.NodeSelectorTerm
		want     []string // nil: all nodes
		conflict bool
	}{
		{"no terms", nil, nil, false},
		{"one term", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{name("a", "b")}}}, []string{"a", "b"}, false},
		{"intersection within a term", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{name("a", "b"), name("b", "c")}}}, []string{"b"}, false},
		{"union over terms", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{name("a")}}, {MatchFields: []corev1.NodeSelectorRequirement{name("c")}}}, []string{"a", "c"}, false},
		{"a term without names allows all", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{name("a")}}, {MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpExists}}}}, nil, false},
		{"empty intersection", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{name("a"), name("b")}}}, []string{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, conflict := nodeNamesFromTerms(tc.terms)
			if conflict != tc.conflict {
				t.Fatalf("conflict %v, want %v", conflict, tc.conflict)
			}
			if (got == nil) != (tc.want == nil) || got.Len() != len(tc.want) || !got.HasAll(tc.want...) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterNodePorts(t *testing.T) {
	const taken = "Unschedulable NodePorts: [node(s) didn't have free ports for the requested pod ports]"
	n := makeNode("n1", "4", "4Gi")
	on := func(opts ...podOpt) []*nodeInfo { return one(n, makePod("existing", opts...)) }
	sidecarPort := func(p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}}}
	}
	initPort := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}}}
	}
	runFilterCases(t, []filterCase{
		{name: "free", nodes: on(hostPort(80, corev1.ProtocolTCP, "")), pod: makePod("p", hostPort(81, corev1.ProtocolTCP, ""))},
		{name: "same port and protocol", nodes: on(hostPort(80, corev1.ProtocolTCP, "")), pod: makePod("p", hostPort(80, corev1.ProtocolTCP, "")), want: taken},
		{name: "empty protocol is TCP", nodes: on(hostPort(80, "", "")), pod: makePod("p", hostPort(80, corev1.ProtocolTCP, "")), want: taken},
		{name: "other protocol", nodes: on(hostPort(53, corev1.ProtocolUDP, "")), pod: makePod("p", hostPort(53, corev1.ProtocolTCP, ""))},
		{name: "different host IPs", nodes: on(hostPort(80, corev1.ProtocolTCP, "10.0.0.1")), pod: makePod("p", hostPort(80, corev1.ProtocolTCP, "10.0.0.2"))},
		{name: "wildcard against a host IP", nodes: on(hostPort(80, corev1.ProtocolTCP, "10.0.0.1")), pod: makePod("p", hostPort(80, corev1.ProtocolTCP, "0.0.0.0")), want: taken},
		{name: "host IP against the wildcard", nodes: on(hostPort(80, corev1.ProtocolTCP, "")), pod: makePod("p", hostPort(80, corev1.ProtocolTCP, "10.0.0.1")), want: taken},
		{name: "sidecar ports count", nodes: on(sidecarPort), pod: makePod("p", hostPort(8080, corev1.ProtocolTCP, "")), want: taken},
		{name: "init container ports do not", nodes: on(initPort), pod: makePod("p", hostPort(8080, corev1.ProtocolTCP, ""))},
	})
}

func TestFilterNodeResources(t *testing.T) {
	n := makeNode("n1", "2", "2Gi", nodeAllocatable("example.com/gpu", "2"), nodeAllocatable(corev1.ResourcePods, "3"))
	busy := func(pods ...*corev1.Pod) []*nodeInfo { return one(n, pods...) }
	const cpu = "Unschedulable NodeResourcesFit: [Insufficient cpu]"
	runFilterCases(t, []filterCase{
		{name: "fits", nodes: busy(makePod("a", requests("cpu", "1"))), pod: makePod("p", requests("cpu", "1", "memory", "1Gi"))},
		{name: "insufficient cpu", nodes: busy(makePod("a", requests("cpu", "1500m"))), pod: makePod("p", requests("cpu", "1")), want: cpu},
		{name: "more cpu than the node has is unresolvable", nodes: busy(), pod: makePod("p", requests("cpu", "3")), want: "Unresolvable NodeResourcesFit: [Insufficient cpu]"},
		{name: "cpu and memory", nodes: busy(makePod("a", requests("cpu", "2", "memory", "2Gi"))), pod: makePod("p", requests("cpu", "1", "memory", "1Gi")),
			want: "Unschedulable NodeResourcesFit: [Insufficient cpu Insufficient memory]"},
		{name: "ephemeral storage", nodes: busy(), pod: makePod("p", requests("ephemeral-storage", "200Gi")), want: "Unresolvable NodeResourcesFit: [Insufficient ephemeral-storage]"},
		{name: "extended resource", nodes: busy(makePod("a", requests("example.com/gpu", "2"))), pod: makePod("p", requests("example.com/gpu", "1")),
			want: "Unschedulable NodeResourcesFit: [Insufficient example.com/gpu]"},
		{name: "extended resource the node lacks", nodes: busy(), pod: makePod("p", requests("example.com/fpga", "1")),
			want: "Unresolvable NodeResourcesFit: [Insufficient example.com/fpga]"},
		{name: "too many pods", nodes: busy(makePod("a"), makePod("b"), makePod("c")), pod: makePod("p"), want: "Unschedulable NodeResourcesFit: [Too many pods]"},
		{name: "best effort pod on a full node", nodes: busy(makePod("a", requests("cpu", "2"))), pod: makePod("p")},
		{name: "containers add up", nodes: busy(makePod("a", requests("cpu", "1"))), pod: makePod("p", requests("cpu", "600m"), container("cpu", "600m")), want: cpu},
		// max(sum of containers, largest init container): 500m vs 1500m.
		{name: "init container larger than the containers", nodes: busy(makePod("a", requests("cpu", "1"))),
			pod: makePod("p", requests("cpu", "500m"), initContainer(false, "cpu", "1500m")), want: cpu},
		{name: "init containers run one at a time", nodes: busy(makePod("a", requests("cpu", "1"))),
			pod: makePod("p", requests("cpu", "500m"), initContainer(false, "cpu", "1"), initContainer(false, "cpu", "1"))},
		// A sidecar keeps running: it adds to the containers (600m+600m)
		// and to the init containers after it.
		{name: "sidecar adds to the containers", nodes: busy(makePod("a", requests("cpu", "1"))),
			pod: makePod("p", requests("cpu", "600m"), initContainer(true, "cpu", "600m")), want: cpu},
		{name: "sidecar adds to later init containers", nodes: busy(makePod("a", requests("cpu", "1"))),
			pod: makePod("p", requests("cpu", "100m"), initContainer(true, "cpu", "300m"), initContainer(false, "cpu", "800m")), want: cpu},
		{name: "sidecar then a small init container", nodes: busy(makePod("a", requests("cpu", "1"))),
			pod: makePod("p", requests("cpu", "100m"), initContainer(true, "cpu", "300m"), initContainer(false, "cpu", "600m"))},
		{name: "overhead counts", nodes: busy(makePod("a", requests("cpu", "1"))),
			pod: makePod("p", requests("cpu", "900m"), func(p *corev1.Pod) { p.Spec.Overhead = reqs("cpu", "200m") }), want: cpu},
	})
}

func TestPodRequestsAccounting(t *testing.T) {
	pi := newPodInfo(makePod("p", requests("memory", "1Gi"), container(), initContainer(false, "cpu", "2")))
	if pi.req.milliCPU != 2000 || pi.req.memory != 1<<30 || pi.req.pods != 1 {
		t.Errorf("requests = %+v, want 2000m cpu (init), 1Gi memory, 1 pod", pi.req)
	}
	// Scoring counts containers without a request at 100m and 200Mi: the
	// two containers have 0 and 0 cpu → 200m; the init container's 2 cores
	// still dominate.
	if pi.nonZeroCPU != 2000 || pi.nonZeroMem != 1<<30+defaultMemoryRequest {
		t.Errorf("non-zero requests = %d, %d", pi.nonZeroCPU, pi.nonZeroMem)
	}
	be := newPodInfo(makePod("be"))
	if be.nonZeroCPU != defaultMilliCPURequest || be.nonZeroMem != defaultMemoryRequest || be.req.milliCPU != 0 {
		t.Errorf("best effort: %+v %d %d", be.req, be.nonZeroCPU, be.nonZeroMem)
	}
}

func tsc(key string, skew int32, action corev1.UnsatisfiableConstraintAction, kv ...string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: action, LabelSelector: selector(kv...)}
}

func TestFilterPodTopologySpread(t *testing.T) {
	const skewed = "Unschedulable PodTopologySpread: [node(s) didn't match pod topology spread constraints]"
	app := podLabels("app", "web")
	za := makeNode("a1", "8", "8Gi", nodeLabels("zone", "a"))
	zb := makeNode("b1", "8", "8Gi", nodeLabels("zone", "b"))
	zoneSpread := spread(tsc("zone", 1, corev1.DoNotSchedule, "app", "web"))
	web := func(name string) *corev1.Pod { return makePod(name, app) }
	twoZones := func(inA, inB int) []*nodeInfo {
		var a, b []*corev1.Pod
		for i := 0; i < inA; i++ {
			a = append(a, web("a"+string(rune('0'+i))))
		}
		for i := 0; i < inB; i++ {
			b = append(b, web("b"+string(rune('0'+i))))
		}
		return []*nodeInfo{newNodeInfoWith(za, a...), newNodeInfoWith(zb, b...)}
	}
	runFilterCases(t, []filterCase{
		{name: "balanced: either zone", nodes: twoZones(1, 1), pod: makePod("p", app, zoneSpread)},
		{name: "zone a ahead", nodes: twoZones(2, 1), pod: makePod("p", app, zoneSpread), want: skewed},
		{name: "maxSkew 2 allows it", nodes: twoZones(2, 1), pod: makePod("p", app, spread(tsc("zone", 2, corev1.DoNotSchedule, "app", "web")))},
		{name: "a pod not matching its own selector does not count itself", nodes: twoZones(2, 1), pod: makePod("p", zoneSpread)},
		{name: "other namespaces do not count", nodes: []*nodeInfo{newNodeInfoWith(za, makePod("x", app, inNamespace("other")), makePod("y", app, inNamespace("other"))), newNodeInfoWith(zb)},
			pod: makePod("p", app, zoneSpread)},
		{name: "node without the key", nodes: []*nodeInfo{newNodeInfoWith(makeNode("n", "1", "1Gi")), newNodeInfoWith(zb)}, pod: makePod("p", app, zoneSpread),
			want: "Unresolvable PodTopologySpread: [node(s) didn't match pod topology spread constraints (missing required label)]"},
		{name: "ScheduleAnyway does not filter", nodes: twoZones(3, 0), pod: makePod("p", app, spread(tsc("zone", 1, corev1.ScheduleAnyway, "app", "web")))},
		// minDomains 3 with two zones: the global minimum is 0, so a zone
		// with one pod is already at the limit.
		{name: "minDomains above the domain count", nodes: twoZones(1, 1), pod: makePod("p", app, spread(func() corev1.TopologySpreadConstraint {
			c := tsc("zone", 1, corev1.DoNotSchedule, "app", "web")
			c.MinDomains = ptr.To[int32](3)
			return c
		}())), want: skewed},
		// Zone b's only node does not match the node selector: with the
		// default Honor policy it is not a domain, so zone a alone has min 2.
		{name: "node affinity policy Honor drops domains", nodes: func() []*nodeInfo {
			za2 := makeNode("a1", "8", "8Gi", nodeLabels("zone", "a", "pool", "x"))
			return []*nodeInfo{newNodeInfoWith(za2, web("w1"), web("w2")), newNodeInfoWith(zb)}
		}(), pod: makePod("p", app, zoneSpread, nodeSelector("pool", "x"))},
		{name: "node affinity policy Ignore keeps them", nodes: func() []*nodeInfo {
			za2 := makeNode("a1", "8", "8Gi", nodeLabels("zone", "a", "pool", "x"))
			return []*nodeInfo{newNodeInfoWith(za2, web("w1"), web("w2")), newNodeInfoWith(zb)}
		}(), pod: makePod("p", app, nodeSelector("pool", "x"), spread(func() corev1.TopologySpreadConstraint {
			c := tsc("zone", 1, corev1.DoNotSchedule, "app", "web")
			c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
			return c
		}())), want: skewed},
		{name: "node taints policy Honor drops tainted domains", nodes: []*nodeInfo{
			newNodeInfoWith(za, web("w1"), web("w2")),
			newNodeInfoWith(makeNode("b1", "8", "8Gi", nodeLabels("zone", "b"), nodeTaints(corev1.Taint{Key: "t", Effect: corev1.TaintEffectNoSchedule})))},
			pod: makePod("p", app, spread(func() corev1.TopologySpreadConstraint {
				c := tsc("zone", 1, corev1.DoNotSchedule, "app", "web")
				c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
				return c
			}()))},
		{name: "node taints policy Ignore (default) counts them", nodes: []*nodeInfo{
			newNodeInfoWith(za, web("w1"), web("w2")),
			newNodeInfoWith(makeNode("b1", "8", "8Gi", nodeLabels("zone", "b"), nodeTaints(corev1.Taint{Key: "t", Effect: corev1.TaintEffectNoSchedule})))},
			pod: makePod("p", app, zoneSpread), want: skewed},
		{name: "terminating pods do not count", nodes: []*nodeInfo{newNodeInfoWith(za, web("w1"), func() *corev1.Pod {
			p := web("w2")
			now := metav1.Now()
			p.DeletionTimestamp = &now
			return p
		}()), newNodeInfoWith(zb, web("w3"))}, pod: makePod("p", app, zoneSpread)},
	})
}

func podAffinity(required ...corev1.PodAffinityTerm) *corev1.Affinity {
	return &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
}

func podAntiAffinity(required ...corev1.PodAffinityTerm) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
}

func TestFilterInterPodAffinity(t *testing.T) {
	const (
		affinityMiss = "Unresolvable InterPodAffinity: [node(s) didn't match pod affinity rules]"
		antiHit      = "Unschedulable InterPodAffinity: [node(s) didn't match pod anti-affinity rules]"
		existingHit  = "Unschedulable InterPodAffinity: [node(s) didn't satisfy existing pods anti-affinity rules]"
	)
	za := makeNode("a1", "8", "8Gi", nodeLabels("zone", "a"))
	za2 := makeNode("a2", "8", "8Gi", nodeLabels("zone", "a"))
	zb := makeNode("b1", "8", "8Gi", nodeLabels("zone", "b"))
	db := func(opts ...podOpt) *corev1.Pod {
		return makePod("db", append([]podOpt{podLabels("app", "db")}, opts...)...)
	}
	runFilterCases(t, []filterCase{
		{name: "affinity satisfied in the zone", nodes: []*nodeInfo{newNodeInfoWith(za), newNodeInfoWith(za2, db())},
			pod: makePod("p", affinity(podAffinity(term("zone", "app", "db"))))},
		{name: "affinity: matching pod in another zone", nodes: []*nodeInfo{newNodeInfoWith(za), newNodeInfoWith(zb, db())},
			pod: makePod("p", affinity(podAffinity(term("zone", "app", "db")))), want: affinityMiss},
		{name: "affinity: node lacks the key", nodes: []*nodeInfo{newNodeInfoWith(makeNode("n", "1", "1Gi")), newNodeInfoWith(zb, db())},
			pod: makePod("p", affinity(podAffinity(term("zone", "app", "db")))), want: affinityMiss},
		{name: "affinity: first pod of a self-matching group", nodes: []*nodeInfo{newNodeInfoWith(za)},
			pod: makePod("p", podLabels("app", "db"), affinity(podAffinity(term("zone", "app", "db"))))},
		{name: "affinity: no match anywhere and not self-matching", nodes: []*nodeInfo{newNodeInfoWith(za)},
			pod: makePod("p", affinity(podAffinity(term("zone", "app", "db")))), want: affinityMiss},
		{name: "affinity: pods of another namespace do not count", nodes: []*nodeInfo{newNodeInfoWith(za, db(inNamespace("other")))},
			pod: makePod("p", affinity(podAffinity(term("zone", "app", "db")))), want: affinityMiss},
		{name: "affinity: listed namespaces", nodes: []*nodeInfo{newNodeInfoWith(za, db(inNamespace("other")))},
			pod: makePod("p", affinity(podAffinity(func() corev1.PodAffinityTerm {
				t := term("zone", "app", "db")
				t.Namespaces = []string{"other"}
				return t
			}())))},
		{name: "affinity: namespace selector", nodes: []*nodeInfo{newNodeInfoWith(za, db(inNamespace("prod")))},
			ns: fakeNS{"prod": labels.Set{"env": "prod"}, "default": nil},
			pod: makePod("p", affinity(podAffinity(func() corev1.PodAffinityTerm {
				t := term("zone", "app", "db")
				t.NamespaceSelector = selector("env", "prod")
				return t
			}())))},
		{name: "affinity: empty namespace selector means all", nodes: []*nodeInfo{newNodeInfoWith(za, db(inNamespace("x")))},
			pod: makePod("p", affinity(podAffinity(func() corev1.PodAffinityTerm {
				t := term("zone", "app", "db")
				t.NamespaceSelector = &metav1.LabelSelector{}
				return t
			}())))},
		{name: "anti-affinity: same zone", nodes: []*nodeInfo{newNodeInfoWith(za), newNodeInfoWith(za2, db())},
			pod: makePod("p", affinity(podAntiAffinity(term("zone", "app", "db")))), want: antiHit},
		{name: "anti-affinity: hostname spreads", nodes: []*nodeInfo{newNodeInfoWith(za), newNodeInfoWith(za2, db())},
			pod: makePod("p", affinity(podAntiAffinity(term(corev1.LabelHostname, "app", "db"))))},
		{name: "anti-affinity: on the node", nodes: []*nodeInfo{newNodeInfoWith(za, db())},
			pod: makePod("p", affinity(podAntiAffinity(term(corev1.LabelHostname, "app", "db")))), want: antiHit},
		{name: "existing pod's anti-affinity", nodes: []*nodeInfo{newNodeInfoWith(za), newNodeInfoWith(za2, db(affinity(podAntiAffinity(term("zone", "app", "web")))))},
			pod: makePod("p", podLabels("app", "web")), want: existingHit},
		{name: "existing pod's anti-affinity elsewhere", nodes: []*nodeInfo{newNodeInfoWith(za), newNodeInfoWith(zb, db(affinity(podAntiAffinity(term("zone", "app", "web")))))},
			pod: makePod("p", podLabels("app", "web"))},
		{name: "existing anti-affinity by namespace selector", nodes: []*nodeInfo{newNodeInfoWith(za, db(affinity(podAntiAffinity(func() corev1.PodAffinityTerm {
			t := term(corev1.LabelHostname, "app", "web")
			t.NamespaceSelector = selector("team", "x")
			return t
		}()))))},
			ns:  fakeNS{"default": labels.Set{"team": "x"}},
			pod: makePod("p", podLabels("app", "web")), want: existingHit},
		{name: "unparsable selector", nodes: []*nodeInfo{newNodeInfoWith(za)},
			pod:  makePod("p", affinity(podAffinity(corev1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}))),
			want: `Unresolvable InterPodAffinity: [parsing pod: labelSelector: "Bogus" is not a valid label selector operator]`},
	})
}
