package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// maxNodeScore is the top of every plugin's normalized score.
const maxNodeScore int64 = 100

// Score weights, as upstream's default profile.
const (
	weightTaintToleration = 3
	weightNodeAffinity    = 2
	weightResourcesFit    = 1
	weightBalanced        = 1
	weightSpread          = 2
	weightInterPod        = 2
)

// scorePlugin scores a node in [0, maxNodeScore] once normalized.
type scorePlugin struct {
	name   string
	weight int64
	score  func(n *nodeInfo) int64
	// normalize maps raw scores onto [0, maxNodeScore]; nil when score
	// already does.
	normalize func(scores []int64, nodes []*nodeInfo)
}

// scorePlugins returns the plugins that apply to the pod of cs over the
// feasible nodes; plugins that would score every node alike are left out.
func scorePlugins(cs *cycleState, feasible []*nodeInfo, snap *snapshot, ns namespaceLister, owners *ownerSelector) ([]scorePlugin, error) {
	pi := cs.pi
	out := []scorePlugin{
		{name: "NodeResourcesFit", weight: weightResourcesFit, score: func(n *nodeInfo) int64 { return leastAllocatedScore(pi, n) }},
		{name: "TaintToleration", weight: weightTaintToleration, score: taintScorer(cs.pod.Spec.Tolerations),
			normalize: func(s []int64, _ []*nodeInfo) { defaultNormalize(s, true) }},
	}
	if pi.req.milliCPU != 0 || pi.req.memory != 0 {
		out = append(out, scorePlugin{name: "NodeResourcesBalancedAllocation", weight: weightBalanced, score: func(n *nodeInfo) int64 { return balancedScore(pi, n) }})
	}
	if a := cs.pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			return nil, fmt.Errorf("preferred node affinity: %w", err)
		}
		out = append(out, scorePlugin{name: "NodeAffinity", weight: weightNodeAffinity, score: func(n *nodeInfo) int64 { return terms.Score(n.node) },
			normalize: func(s []int64, _ []*nodeInfo) { defaultNormalize(s, false) }})
	}
	spread, err := newSpreadScoreState(cs, feasible, snap.list, owners)
	if err != nil {
		return nil, err
	}
	if spread != nil {
		out = append(out, scorePlugin{name: "PodTopologySpread", weight: weightSpread, score: func(n *nodeInfo) int64 { return spread.score(cs, n) }, normalize: spread.normalize})
	}
	if aff := newAffinityScoreState(cs, snap, ns); aff != nil {
		out = append(out, scorePlugin{name: "InterPodAffinity", weight: weightInterPod, score: aff.score, normalize: aff.normalize})
	}
	return out, nil
}

// prioritize returns each node's weighted total over the plugins. Its
// slices are made in *buf, which the next call reuses.
func prioritize(plugins []scorePlugin, nodes []*nodeInfo, par parallelizer, buf *[]int64) []int64 {
	n := len(nodes)
	all := reuse(buf, (len(plugins)+1)*n)
	totals := all[:n:n]
	scores := make([][]int64, len(plugins))
	for i := range scores {
		scores[i] = all[(i+1)*n : (i+2)*n : (i+2)*n]
	}
	par.until(len(nodes), func(j int) bool {
		for i := range plugins {
			scores[i][j] = plugins[i].score(nodes[j])
		}
		return true
	})
	for i, p := range plugins {
		if p.normalize != nil {
			p.normalize(scores[i], nodes)
		}
		for j := range nodes {
			totals[j] += scores[i][j] * p.weight
		}
	}
	return totals
}

// selectHost picks a node with the highest total, at random among ties.
func selectHost(nodes []*nodeInfo, totals []int64, rnd *rand.Rand) *nodeInfo {
	best, ties := -1, 0
	for i := range nodes {
		switch {
		case best < 0 || totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rnd.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best]
}

// defaultNormalize scales scores so the highest is maxNodeScore; reverse
// then flips them (fewer is better). All zero stays zero, or all become
// maxNodeScore when reversed.
func defaultNormalize(scores []int64, reverse bool) {
	var top int64
	for _, s := range scores {
		top = max(top, s)
	}
	for i := range scores {
		switch {
		case top == 0 && reverse:
			scores[i] = maxNodeScore
		case top == 0:
		case reverse:
			scores[i] = maxNodeScore - maxNodeScore*scores[i]/top
		default:
			scores[i] = maxNodeScore * scores[i] / top
		}
	}
}

// leastRequested is the free share of capacity after the request, 0..100.
func leastRequested(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * maxNodeScore / capacity
}

// leastAllocatedScore favours nodes with more cpu and memory left after
// placing the pod (weights 1:1), counting containers without requests at
// the default requests.
func leastAllocatedScore(pi *podInfo, n *nodeInfo) int64 {
	var score, weights int64
	if c := n.allocatable.milliCPU; c != 0 {
		score += leastRequested(n.nonZeroCPU+pi.nonZeroCPU, c)
		weights++
	}
	if c := n.allocatable.memory; c != 0 {
		score += leastRequested(n.nonZeroMem+pi.nonZeroMem, c)
		weights++
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// balance is 100 × (1 − the standard deviation of the cpu and memory
// fractions used).
func balance(cpu, mem, allocCPU, allocMem int64) int64 {
	if allocCPU == 0 || allocMem == 0 {
		// One resource or none: no spread between fractions.
		return maxNodeScore
	}
	fc := math.Min(float64(cpu)/float64(allocCPU), 1)
	fm := math.Min(float64(mem)/float64(allocMem), 1)
	std := math.Abs((fc - fm) / 2)
	return int64((1 - std) * float64(maxNodeScore))
}

// balancedScore favours placements that improve (or least worsen) the
// balance between the node's cpu and memory use, as upstream's
// NodeResourcesBalancedAllocation with the pod's actual requests.
func balancedScore(pi *podInfo, n *nodeInfo) int64 {
	a := &n.allocatable
	with := balance(n.requested.milliCPU+pi.req.milliCPU, n.requested.memory+pi.req.memory, a.milliCPU, a.memory)
	without := balance(n.requested.milliCPU, n.requested.memory, a.milliCPU, a.memory)
	return maxNodeScore/2 + (maxNodeScore/2+with-without)/2
}

// taintScorer counts a node's PreferNoSchedule taints the pod does not
// tolerate (normalized in reverse: fewer is better).
func taintScorer(tolerations []corev1.Toleration) func(n *nodeInfo) int64 {
	var prefer []corev1.Toleration
	for _, t := range tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			prefer = append(prefer, t)
		}
	}
	return func(n *nodeInfo) int64 {
		var c int64
		for i := range n.node.Spec.Taints {
			t := &n.node.Spec.Taints[i]
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !tolerated(prefer, t) {
				c++
			}
		}
		return c
	}
}
