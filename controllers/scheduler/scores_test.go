package scheduler

import (
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scoreOf runs the named plugin for pod over nodes (all feasible) and
// returns its normalized scores; nil when the plugin does not apply.
func scoreOf(t *testing.T, plugin string, pod *corev1.Pod, owners *ownerSelector, nodes ...*nodeInfo) []int64 {
	t.Helper()
	snap := newSnapshotFrom(nodes...)
	cs := mustCycle(t, pod, nil, nodes...)
	plugins, err := scorePlugins(cs, snap.list, snap, nil, owners)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		if p.name != plugin {
			continue
		}
		out := make([]int64, len(snap.list))
		for i, n := range snap.list {
			out[i] = p.score(n)
		}
		if p.normalize != nil {
			p.normalize(out, snap.list)
		}
		return out
	}
	return nil
}

func TestLeastAllocatedScore(t *testing.T) {
	cases := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*nodeInfo
		want  []int64
	}{
		{
			// n1: cpu (4-1)/4 = 75, memory (4-1)/4 = 75 → 75.
			// n2: cpu (4-3)/4 = 25; memory: pod a asks for none, so it
			// counts 200Mi: (4096-1024-200)/4096 = 70 → (25+70)/2 = 47.
			name: "free share after placing the pod",
			pod:  makePod("p", requests("cpu", "1", "memory", "1Gi")),
			nodes: []*nodeInfo{newNodeInfoWith(makeNode("n1", "4", "4Gi")),
				newNodeInfoWith(makeNode("n2", "4", "4Gi"), makePod("a", requests("cpu", "2")))},
			want: []int64{75, 47},
		},
		{
			// Containers without requests count as 100m and 200Mi.
			// cpu (1000-100)/1000 = 90, memory (1000Mi-200Mi)/1000Mi = 80 → 85.
			name:  "best effort pod at the defaults",
			pod:   makePod("p"),
			nodes: []*nodeInfo{newNodeInfoWith(makeNode("n1", "1", "1000Mi"))},
			want:  []int64{85},
		},
		{
			name:  "more than the node has scores 0",
			pod:   makePod("p", requests("cpu", "8", "memory", "8Gi")),
			nodes: []*nodeInfo{newNodeInfoWith(makeNode("n1", "4", "4Gi"))},
			want:  []int64{0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreOf(t, "NodeResourcesFit", tc.pod, nil, tc.nodes...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBalancedAllocationScore(t *testing.T) {
	cases := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*nodeInfo
		want  []int64 // nil: the plugin does not apply
	}{
		{
			// n1 empty: with the pod cpu 1/4, memory 1/4 → std 0 → 100;
			// without → 100; score 50 + (50+100-100)/2 = 75.
			// n2 with a 2-cpu pod: with cpu 3/4, mem 1/4 → std .25 → 75;
			// without cpu 2/4, mem 0 → std .25 → 75; score 75.
			name: "improving the balance",
			pod:  makePod("p", requests("cpu", "1", "memory", "1Gi")),
			nodes: []*nodeInfo{
				newNodeInfoWith(makeNode("n1", "4", "4Gi")),
				newNodeInfoWith(makeNode("n2", "4", "4Gi"), makePod("a", requests("cpu", "2"))),
			},
			want: []int64{75, 75},
		},
		{
			// n1 with 2 cpu used: cpu-only pod → with 3/4, 0 → std .375 →
			// 62; without 2/4, 0 → 75; 50 + (50+62-75)/2 = 68.
			// n2 with 2Gi used: with 1/4, 2/4 → 87; without 0, 2/4 → 75;
			// 50 + (50+87-75)/2 = 81.
			name: "a cpu-only pod prefers the memory-heavy node",
			pod:  makePod("p", requests("cpu", "1")),
			nodes: []*nodeInfo{
				newNodeInfoWith(makeNode("n1", "4", "4Gi"), makePod("a", requests("cpu", "2"))),
				newNodeInfoWith(makeNode("n2", "4", "4Gi"), makePod("b", requests("memory", "2Gi"))),
			},
			want: []int64{68, 81},
		},
		{name: "best effort pods are not scored", pod: makePod("p"), nodes: []*nodeInfo{newNodeInfoWith(makeNode("n1", "4", "4Gi"))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreOf(t, "NodeResourcesBalancedAllocation", tc.pod, nil, tc.nodes...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	soft := func(k string) corev1.Taint { return corev1.Taint{Key: k, Effect: corev1.TaintEffectPreferNoSchedule} }
	nodes := []*nodeInfo{
		newNodeInfoWith(makeNode("n0", "1", "1Gi")),
		newNodeInfoWith(makeNode("n1", "1", "1Gi", nodeTaints(soft("a")))),
		newNodeInfoWith(makeNode("n2", "1", "1Gi", nodeTaints(soft("a"), soft("b")))),
		newNodeInfoWith(makeNode("n3", "1", "1Gi", nodeTaints(corev1.Taint{Key: "hard", Effect: corev1.TaintEffectNoSchedule}))),
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []int64
	}{
		{"fewer untolerated PreferNoSchedule taints is better", makePod("p"), []int64{100, 50, 0, 100}},
		{"tolerated taints do not count", makePod("p", tolerations(corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule})), []int64{100, 100, 0, 100}},
		{"tolerations of another effect do not count", makePod("p", tolerations(corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})), []int64{100, 50, 0, 100}},
		{"everything tolerated", makePod("p", tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists})), []int64{100, 100, 100, 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreOf(t, "TaintToleration", tc.pod, nil, nodes...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeAffinityScore(t *testing.T) {
	nodes := []*nodeInfo{
		newNodeInfoWith(makeNode("n0", "1", "1Gi")),
		newNodeInfoWith(makeNode("n1", "1", "1Gi", nodeLabels("disk", "ssd"))),
		newNodeInfoWith(makeNode("n2", "1", "1Gi", nodeLabels("disk", "ssd", "zone", "a"))),
	}
	pref := func(w int32, k, v string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}}
	}
	pod := makePod("p", affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{pref(3, "disk", "ssd"), pref(1, "zone", "a")}}}))
	// Raw 0, 3, 4; normalized to the highest.
	if got, want := scoreOf(t, "NodeAffinity", pod, nil, nodes...), []int64{0, 75, 100}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := scoreOf(t, "NodeAffinity", makePod("q"), nil, nodes...); got != nil {
		t.Fatalf("a pod without preferences is scored: %v", got)
	}
}

func TestPodTopologySpreadScore(t *testing.T) {
	app := podLabels("app", "web")
	web := func(n string) *corev1.Pod { return makePod(n, app) }
	zone := func(name, z string, pods ...*corev1.Pod) *nodeInfo {
		return newNodeInfoWith(makeNode(name, "8", "8Gi", nodeLabels("zone", z)), pods...)
	}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		owners *ownerSelector
		nodes  []*nodeInfo
		want   []int64
	}{
		{
			// Hostname, maxSkew 1, 3 nodes: weight log(5); raw = count×1.609
			// rounded: 0, 2 (1.6), 3 (3.2) → 100×(3+0−s)/3: 100, 33, 0.
			name:  "hostname: fewer matching pods scores higher",
			pod:   makePod("p", app, spread(tsc(corev1.LabelHostname, 1, corev1.ScheduleAnyway, "app", "web"))),
			nodes: []*nodeInfo{zone("n0", "a"), zone("n1", "a", web("w1")), zone("n2", "b", web("w2"), web("w3"))},
			want:  []int64{100, 33, 0},
		},
		{
			// Zone, 2 zones: weight log(4)=1.386; zone a holds 1, zone b 2:
			// raw 1 (1.39), 1, 3 (2.77) → 100×(3+1−s)/3 = 100, 100, 33.
			name:  "zone counts the whole domain",
			pod:   makePod("p", app, spread(tsc("zone", 1, corev1.ScheduleAnyway, "app", "web"))),
			nodes: []*nodeInfo{zone("n0", "a"), zone("n1", "a", web("w1")), zone("n2", "b", web("w2"), web("w3"))},
			want:  []int64{100, 100, 33},
		},
		{
			name: "nodes without the key score 0",
			pod:  makePod("p", app, spread(tsc("zone", 1, corev1.ScheduleAnyway, "app", "web"))),
			nodes: []*nodeInfo{zone("n0", "a", web("w1")), zone("n1", "b"),
				newNodeInfoWith(makeNode("n2", "8", "8Gi"))},
			want: []int64{0, 100, 0},
		},
		{name: "DoNotSchedule constraints are not scored", pod: makePod("p", app, spread(tsc("zone", 1, corev1.DoNotSchedule, "app", "web"))),
			nodes: []*nodeInfo{zone("n0", "a")}},
		{name: "no owner: no default constraints", pod: makePod("p", app), owners: &ownerSelector{}, nodes: []*nodeInfo{zone("n0", "a")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreOf(t, "PodTopologySpread", tc.pod, tc.owners, tc.nodes...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInterPodAffinityScore(t *testing.T) {
	za := func(name string, pods ...*corev1.Pod) *nodeInfo {
		return newNodeInfoWith(makeNode(name, "8", "8Gi", nodeLabels("zone", "a")), pods...)
	}
	zb := func(name string, pods ...*corev1.Pod) *nodeInfo {
		return newNodeInfoWith(makeNode(name, "8", "8Gi", nodeLabels("zone", "b")), pods...)
	}
	weighted := func(w int32, t corev1.PodAffinityTerm) []corev1.WeightedPodAffinityTerm {
		return []corev1.WeightedPodAffinityTerm{{Weight: w, PodAffinityTerm: t}}
	}
	cache := makePod("cache", podLabels("app", "cache"))
	cases := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*nodeInfo
		want  []int64
	}{
		{
			name:  "preferred affinity to the zone with the pod",
			pod:   makePod("p", affinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: weighted(5, term("zone", "app", "cache"))}})),
			nodes: []*nodeInfo{za("a1"), za("a2", cache), zb("b1")},
			want:  []int64{100, 100, 0},
		},
		{
			name:  "preferred anti-affinity away from it",
			pod:   makePod("p", affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: weighted(5, term(corev1.LabelHostname, "app", "cache"))}})),
			nodes: []*nodeInfo{za("a1"), za("a2", cache), zb("b1")},
			want:  []int64{100, 0, 100},
		},
		{
			// The existing pod's preferred anti-affinity (weight 10) and
			// another's required affinity (hard weight 1) apply to the
			// incoming pod: zone a −10, zone b +1.
			name: "existing pods' terms that select the pod",
			pod:  makePod("p", podLabels("app", "web")),
			nodes: []*nodeInfo{
				za("a1", makePod("x", affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: weighted(10, term("zone", "app", "web"))}}))),
				zb("b1", makePod("y", affinity(podAffinity(term("zone", "app", "web"))))),
			},
			want: []int64{0, 100},
		},
		{name: "nothing applies", pod: makePod("p"), nodes: []*nodeInfo{za("a1", cache)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreOf(t, "InterPodAffinity", tc.pod, nil, tc.nodes...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDefaultSpreadingSelector(t *testing.T) {
	// A ReplicaSet's pods get the system default constraints (hostname
	// maxSkew 3, zone maxSkew 5, ScheduleAnyway) with its selector.
	rs := makeReplicaSetLister(t, "web", "app", "web")
	pod := makePod("p", podLabels("app", "web"), func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: ptrTrue()}}
	})
	owners := &ownerSelector{replicaSets: rs}
	web := func(n string) *corev1.Pod { return makePod(n, podLabels("app", "web")) }
	nodes := []*nodeInfo{
		newNodeInfoWith(makeNode("n0", "8", "8Gi")),
		newNodeInfoWith(makeNode("n1", "8", "8Gi"), web("w1"), web("w2")),
	}
	// Hostname: 2 nodes → weight log(4) = 1.386; raw n0 = 0 + 2 = 2,
	// n1 = 2×1.386 + 2 = 4.77 → 5. Zone: no node has the zone label, so it
	// does not apply. 100×(5+2−s)/5: 100, 40.
	if got, want := scoreOf(t, "PodTopologySpread", pod, owners, nodes...), []int64{100, 40}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestDefaultNormalize(t *testing.T) {
	cases := []struct {
		in      []int64
		reverse bool
		want    []int64
	}{
		{[]int64{0, 5, 10}, false, []int64{0, 50, 100}},
		{[]int64{0, 5, 10}, true, []int64{100, 50, 0}},
		{[]int64{0, 0}, false, []int64{0, 0}},
		{[]int64{0, 0}, true, []int64{100, 100}},
	}
	for _, tc := range cases {
		got := append([]int64(nil), tc.in...)
		defaultNormalize(got, tc.reverse)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("defaultNormalize(%v, %v) = %v, want %v", tc.in, tc.reverse, got, tc.want)
		}
	}
}

func TestPrioritizeAndSelectHost(t *testing.T) {
	nodes := []*nodeInfo{newNodeInfoWith(makeNode("n0", "1", "1Gi")), newNodeInfoWith(makeNode("n1", "1", "1Gi")), newNodeInfoWith(makeNode("n2", "1", "1Gi"))}
	plugins := []scorePlugin{
		{name: "a", weight: 2, score: func(n *nodeInfo) int64 { return map[string]int64{"n0": 10, "n1": 50, "n2": 50}[n.name] }},
		{name: "b", weight: 1, score: func(n *nodeInfo) int64 { return map[string]int64{"n0": 5, "n1": 0, "n2": 10}[n.name] },
			normalize: func(s []int64, _ []*nodeInfo) { defaultNormalize(s, false) }},
	}
	totals := prioritize(plugins, nodes, parallelizer{workers: 4}, new([]int64))
	// a: 20, 100, 100; b normalized: 50, 0, 100.
	if want := []int64{70, 100, 200}; !reflect.DeepEqual(totals, want) {
		t.Fatalf("totals %v, want %v", totals, want)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	if got := selectHost(nodes, totals, rnd); got.name != "n2" {
		t.Fatalf("selected %s, want n2", got.name)
	}
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		seen[selectHost(nodes, []int64{5, 9, 9}, rnd).name] = true
	}
	if !seen["n1"] || !seen["n2"] || seen["n0"] {
		t.Fatalf("ties picked %v, want n1 and n2 only", seen)
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	cases := []struct {
		pct         int32
		nodes, want int
	}{
		{0, 50, 50},
		{0, 100, 100},
		{0, 1000, 420},  // 50 − 8 = 42%
		{0, 5000, 500},  // 50 − 40 = 10%
		{0, 10000, 500}, // floor of 5%
		{0, 150, 100},   // 49% of 150 = 73 → at least 100
		{30, 1000, 300}, // fixed
		{100, 1000, 1000},
	}
	for _, tc := range cases {
		if got := numFeasibleNodesToFind(tc.pct, tc.nodes); got != tc.want {
			t.Errorf("numFeasibleNodesToFind(%d, %d) = %d, want %d", tc.pct, tc.nodes, got, tc.want)
		}
	}
}
