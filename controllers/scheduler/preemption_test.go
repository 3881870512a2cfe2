package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFitErrorMessage(t *testing.T) {
	taint := newStatus(codeUnresolvable, plTaintToleration, reasonTaint)
	cases := []struct {
		name string
		fe   *fitError
		want string
	}{
		{
			name: "one reason",
			fe:   &fitError{numAllNodes: 1, statuses: map[string]*status{"n1": newStatus(codeUnschedulable, plNodeResourcesFit, "Insufficient cpu")}},
			want: "0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name: "mixed reasons, counted and sorted, with the preemption part",
			fe: &fitError{numAllNodes: 4, statuses: map[string]*status{
				"n1": newStatus(codeUnschedulable, plNodeResourcesFit, "Insufficient cpu", "Insufficient memory"),
				"n2": taint, "n3": taint,
				"n4": newStatus(codeUnschedulable, plNodeResourcesFit, "Insufficient memory"),
			}, postFilterMsg: "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."},
			want: "0/4 nodes are available: 1 Insufficient cpu, 2 Insufficient memory, 2 node(s) had untolerated taint(s). preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
		},
		{
			name: "nodes left out by node names",
			fe: &fitError{numAllNodes: 3, statuses: map[string]*status{"n1": newStatus(codeUnschedulable, plNodeResourcesFit, "Insufficient cpu")},
				absent: newStatus(codeUnresolvable, plNodeAffinity, "node(s) didn't satisfy plugin(s) [NodeAffinity]")},
			want: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
		},
		{
			name: "pre-filter rejection",
			fe: &fitError{numAllNodes: 2, statuses: map[string]*status{}, absent: newStatus(codeUnresolvable, plNodeAffinity, reasonAffinityConflict),
				preFilterMsg: reasonAffinityConflict, postFilterMsg: "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."},
			want: "0/2 nodes are available: pod affinity terms conflict. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fe.Error(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func pdb(name string, allowed int32, kv ...string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector(kv...)}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

func names(pis []*podInfo) []string {
	var out []string
	for _, p := range pis {
		out = append(out, p.pod.Name)
	}
	return out
}

func TestSelectVictims(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	low := func(name string, prio int32, cpu string, opts ...podOpt) *corev1.Pod {
		return makePod(name, append([]podOpt{priority(prio), requests("cpu", cpu)}, opts...)...)
	}
	cases := []struct {
		name       string
		node       *nodeInfo
		pod        *corev1.Pod
		pdbs       []*policyv1.PodDisruptionBudget
		want       []string
		violations int
		status     string
	}{
		{
			name: "the least important pod that makes room",
			node: newNodeInfoWith(makeNode("n", "4", "4Gi"), low("a", 10, "1"), low("b", 20, "1"), low("c", 5, "1"), low("d", 5, "1", startedAt(t0))),
			pod:  makePod("p", priority(100), requests("cpu", "2")),
			// The node is full and two cores must go: the two least
			// important pods, c and d (priority 5); d started earlier, so it
			// is the more important and listed first.
			want: []string{"d", "c"},
		},
		{
			name: "two victims when one is not enough",
			node: newNodeInfoWith(makeNode("n", "4", "4Gi"), low("a", 10, "2"), low("b", 20, "1"), low("c", 5, "1")),
			pod:  makePod("p", priority(100), requests("cpu", "3")),
			// Reprieved in order b (20): 3 free, stays; a (10): 1 free,
			// victim; c (5): 2 free, victim.
			want: []string{"a", "c"},
		},
		{
			name:   "pods of equal or higher priority are never victims",
			node:   newNodeInfoWith(makeNode("n", "2", "4Gi"), low("a", 100, "1"), low("b", 200, "1")),
			pod:    makePod("p", priority(100), requests("cpu", "1")),
			status: "Unresolvable : [No preemption victims found for incoming pod]",
		},
		{
			name:   "no room even without the victims",
			node:   newNodeInfoWith(makeNode("n", "2", "4Gi"), low("a", 100, "1"), low("b", 1, "1")),
			pod:    makePod("p", priority(100), requests("cpu", "2")),
			status: "Unschedulable NodeResourcesFit: [Insufficient cpu]",
		},
		{
			name: "prefer keeping pods a budget protects",
			node: newNodeInfoWith(makeNode("n", "2", "4Gi"), low("guarded", 5, "1", podLabels("app", "db")), low("free", 10, "1")),
			pod:  makePod("p", priority(100), requests("cpu", "1")),
			pdbs: []*policyv1.PodDisruptionBudget{pdb("db", 0, "app", "db")},
			// Without the budget "guarded" (priority 5) would go; with it,
			// it is reprieved first and "free" goes instead.
			want: []string{"free"},
		},
		{
			name: "a budget with room is no violation",
			node: newNodeInfoWith(makeNode("n", "2", "4Gi"), low("guarded", 5, "1", podLabels("app", "db")), low("free", 10, "1")),
			pod:  makePod("p", priority(100), requests("cpu", "1")),
			pdbs: []*policyv1.PodDisruptionBudget{pdb("db", 1, "app", "db")},
			want: []string{"guarded"},
		},
		{
			name:       "violating when nothing else helps",
			node:       newNodeInfoWith(makeNode("n", "1", "4Gi"), low("guarded", 5, "1", podLabels("app", "db"))),
			pod:        makePod("p", priority(100), requests("cpu", "1")),
			pdbs:       []*policyv1.PodDisruptionBudget{pdb("db", 0, "app", "db")},
			want:       []string{"guarded"},
			violations: 1,
		},
		{
			name: "anti-affinity victim",
			node: newNodeInfoWith(makeNode("n", "4", "4Gi"), low("other", 5, "100m", podLabels("app", "x")), low("keep", 5, "100m")),
			pod:  makePod("p", priority(100), affinity(podAntiAffinity(term(corev1.LabelHostname, "app", "x")))),
			want: []string{"other"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := mustCycle(t, tc.pod, nil, tc.node)
			victims, violations, st := selectVictims(cs, tc.node, tc.pdbs, nil)
			if got := verdict(st); got != tc.status {
				t.Fatalf("status %q, want %q", got, tc.status)
			}
			got := names(victims)
			if len(got) != len(tc.want) || violations != tc.violations {
				t.Fatalf("victims %v (%d violations), want %v (%d)", got, violations, tc.want, tc.violations)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("victims %v, want %v", got, tc.want)
				}
			}
			if len(tc.node.pods) == 0 {
				t.Fatal("selectVictims changed the node")
			}
		})
	}
}

func TestPickCandidate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := func(name string, prio int32, start time.Time) *podInfo {
		return newPodInfo(makePod(name, priority(prio), startedAt(start)))
	}
	cases := []struct {
		name  string
		cands []candidate
		want  string
	}{
		{"fewest PDB violations", []candidate{{node: "a", victims: []*podInfo{v("x", 1, t0)}, violations: 1}, {node: "b", victims: []*podInfo{v("y", 50, t0), v("z", 50, t0)}}}, "b"},
		{"lowest highest priority", []candidate{{node: "a", victims: []*podInfo{v("x", 50, t0)}}, {node: "b", victims: []*podInfo{v("y", 10, t0), v("z", 10, t0)}}}, "b"},
		{"lowest priority sum", []candidate{{node: "a", victims: []*podInfo{v("x", 10, t0), v("w", 10, t0)}}, {node: "b", victims: []*podInfo{v("y", 10, t0), v("z", 1, t0)}}}, "b"},
		// Priorities are shifted by 2^31 before summing, so negative
		// priorities do not make more victims look cheaper.
		{"fewer victims of negative priority", []candidate{{node: "a", victims: []*podInfo{v("x", -5, t0), v("w", -5, t0)}}, {node: "b", victims: []*podInfo{v("y", -5, t0)}}}, "b"},
		{"latest start", []candidate{{node: "a", victims: []*podInfo{v("x", 1, t0)}}, {node: "b", victims: []*podInfo{v("y", 1, t0.Add(time.Hour))}}}, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickCandidate(tc.cands); got.node != tc.want {
				t.Fatalf("picked %s, want %s", got.node, tc.want)
			}
		})
	}
}

func TestSplitByPDB(t *testing.T) {
	pods := []*podInfo{
		newPodInfo(makePod("a1", podLabels("app", "a"))),
		newPodInfo(makePod("a2", podLabels("app", "a"))),
		newPodInfo(makePod("a3", podLabels("app", "a"))),
		newPodInfo(makePod("b", podLabels("app", "b"))),
		newPodInfo(makePod("nolabels")),
		newPodInfo(makePod("other-ns", podLabels("app", "a"), inNamespace("x"))),
	}
	budget := pdb("a", 1, "app", "a")
	budget.Status.DisruptedPods = map[string]metav1.Time{"a2": metav1.Now()}
	violating, ok := splitByPDB(pods, []*policyv1.PodDisruptionBudget{budget, pdb("empty", 0)})
	// a1 takes the one allowed disruption, a2 is already being disrupted,
	// a3 exceeds the budget; an empty selector selects nothing.
	if got := names(violating); len(got) != 1 || got[0] != "a3" {
		t.Fatalf("violating %v, want [a3]", got)
	}
	if len(ok) != 5 {
		t.Fatalf("non-violating %v", names(ok))
	}
}
