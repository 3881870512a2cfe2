package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// hardPodAffinityWeight is the score weight of an existing pod's required
// affinity term that the incoming pod matches (upstream's default 1).
const hardPodAffinityWeight = 1

type topoPair struct{ key, value string }

type topoCounts map[topoPair]int64

// inc adds delta under the node's value for key, if it has one.
func (m topoCounts) inc(node *corev1.Node, key string, delta int64) {
	if v, ok := node.Labels[key]; ok {
		p := topoPair{key, v}
		m[p] += delta
		if m[p] == 0 {
			delete(m, p)
		}
	}
}

func (m topoCounts) clone() topoCounts {
	c := make(topoCounts, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// matchesAll reports whether pod matches every term (false for no terms).
func matchesAll(terms []affinityTerm, pod *corev1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].matches(pod, nil) {
			return false
		}
	}
	return true
}

// expandNamespaces returns a copy of terms whose namespace selectors are
// replaced by the names of the namespaces they select now (a selector
// selecting everything is kept as is).
func expandNamespaces(terms []affinityTerm, ns namespaceLister) []affinityTerm {
	if len(terms) == 0 {
		return nil
	}
	out := make([]affinityTerm, len(terms))
	for i, t := range terms {
		if ns != nil && !t.nsSelector.Empty() {
			if _, selectable := t.nsSelector.Requirements(); selectable {
				t.namespaces = t.namespaces.Clone()
				for _, name := range ns.matching(t.nsSelector) {
					t.namespaces.Insert(name)
				}
				t.nsSelector = labels.Nothing()
			}
		}
		out[i] = t
	}
	return out
}

// affinityFilterState is the required inter-pod (anti-)affinity state of
// a scheduling attempt.
type affinityFilterState struct {
	pod      *corev1.Pod
	nsLabels labels.Set
	// reqAffinity and reqAnti are the incoming pod's terms.
	reqAffinity, reqAnti []affinityTerm
	// existingAnti counts, per topology domain, existing pods' required
	// anti-affinity terms that select the incoming pod.
	existingAnti topoCounts
	// affinity counts pods matching all the incoming affinity terms; anti
	// counts pods matching each incoming anti-affinity term.
	affinity, anti topoCounts
}

// newAffinityFilterState returns nil when nothing constrains the pod.
func newAffinityFilterState(cs *cycleState, snap *snapshot, ns namespaceLister) (*affinityFilterState, *status) {
	pi := cs.pi
	if pi.parseErr != nil {
		return nil, parseStatus(pi.parseErr)
	}
	s := &affinityFilterState{
		pod: cs.pod, nsLabels: cs.nsLabels,
		reqAffinity: expandNamespaces(pi.reqAffinity, ns), reqAnti: expandNamespaces(pi.reqAnti, ns),
		existingAnti: topoCounts{}, affinity: topoCounts{}, anti: topoCounts{},
	}
	for _, n := range snap.withReqAnti {
		for _, p := range n.withReqAnti {
			for i := range p.reqAnti {
				if p.reqAnti[i].matches(cs.pod, cs.nsLabels) {
					s.existingAnti.inc(n.node, p.reqAnti[i].topologyKey, 1)
				}
			}
		}
	}
	if len(s.reqAffinity) == 0 && len(s.reqAnti) == 0 {
		if len(s.existingAnti) == 0 {
			return nil, nil
		}
		return s, nil
	}
	for _, n := range snap.list {
		for _, p := range n.pods {
			s.countIncoming(p, n.node, 1)
		}
	}
	return s, nil
}

// countIncoming counts existing pod p against the incoming pod's terms.
func (s *affinityFilterState) countIncoming(p *podInfo, node *corev1.Node, delta int64) {
	if matchesAll(s.reqAffinity, p.pod) {
		for i := range s.reqAffinity {
			s.affinity.inc(node, s.reqAffinity[i].topologyKey, delta)
		}
	}
	for i := range s.reqAnti {
		if s.reqAnti[i].matches(p.pod, nil) {
			s.anti.inc(node, s.reqAnti[i].topologyKey, delta)
		}
	}
}

func (s *affinityFilterState) clone() *affinityFilterState {
	if s == nil {
		return nil
	}
	c := *s
	c.existingAnti, c.affinity, c.anti = s.existingAnti.clone(), s.affinity.clone(), s.anti.clone()
	return &c
}

func (s *affinityFilterState) update(p *podInfo, node *corev1.Node, delta int64) {
	if node == nil {
		return
	}
	for i := range p.reqAnti {
		if p.reqAnti[i].matches(s.pod, s.nsLabels) {
			s.existingAnti.inc(node, p.reqAnti[i].topologyKey, delta)
		}
	}
	s.countIncoming(p, node, delta)
}

func filterInterPodAffinity(cs *cycleState, n *nodeInfo) *status {
	s := cs.affinity
	if s == nil {
		return nil
	}
	node := n.node
	if len(s.reqAffinity) > 0 {
		podsExist := true
		for i := range s.reqAffinity {
			v, ok := node.Labels[s.reqAffinity[i].topologyKey]
			if !ok {
				return stPodAffinity
			}
			if s.affinity[topoPair{s.reqAffinity[i].topologyKey, v}] <= 0 {
				podsExist = false
			}
		}
		// With no matching pod anywhere, a pod matching its own terms may
		// start the group.
		if !podsExist && (len(s.affinity) != 0 || !matchesAll(s.reqAffinity, s.pod)) {
			return stPodAffinity
		}
	}
	if len(s.anti) > 0 {
		for i := range s.reqAnti {
			if v, ok := node.Labels[s.reqAnti[i].topologyKey]; ok && s.anti[topoPair{s.reqAnti[i].topologyKey, v}] > 0 {
				return stPodAnti
			}
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range node.Labels {
			if s.existingAnti[topoPair{k, v}] > 0 {
				return stExistingAnti
			}
		}
	}
	return nil
}

// affinityScoreState sums preferred (anti-)affinity weights per topology
// domain, both of the incoming pod's terms and of existing pods' terms
// that select it.
type affinityScoreState struct {
	scores map[string]map[string]int64
}

func (s *affinityScoreState) add(key string, node *corev1.Node, w int64) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	m := s.scores[key]
	if m == nil {
		m = map[string]int64{}
		s.scores[key] = m
	}
	m[v] += w
}

// newAffinityScoreState returns nil when no term applies anywhere.
func newAffinityScoreState(cs *cycleState, snap *snapshot, ns namespaceLister) *affinityScoreState {
	pi := cs.pi
	prefAff := expandWeighted(pi.prefAffinity, ns)
	prefAnti := expandWeighted(pi.prefAnti, ns)
	hasOwn := len(prefAff) > 0 || len(prefAnti) > 0
	nodes := snap.withAffinity
	if hasOwn {
		nodes = snap.list
	}
	s := &affinityScoreState{scores: map[string]map[string]int64{}}
	for _, n := range nodes {
		if len(n.node.Labels) == 0 {
			continue
		}
		pods := n.withAffinity
		if hasOwn {
			pods = n.pods
		}
		for _, p := range pods {
			for i := range prefAff {
				if prefAff[i].matches(p.pod, nil) {
					s.add(prefAff[i].topologyKey, n.node, int64(prefAff[i].weight))
				}
			}
			for i := range prefAnti {
				if prefAnti[i].matches(p.pod, nil) {
					s.add(prefAnti[i].topologyKey, n.node, -int64(prefAnti[i].weight))
				}
			}
			for i := range p.reqAffinity {
				if p.reqAffinity[i].matches(cs.pod, cs.nsLabels) {
					s.add(p.reqAffinity[i].topologyKey, n.node, hardPodAffinityWeight)
				}
			}
			for i := range p.prefAffinity {
				if p.prefAffinity[i].matches(cs.pod, cs.nsLabels) {
					s.add(p.prefAffinity[i].topologyKey, n.node, int64(p.prefAffinity[i].weight))
				}
			}
			for i := range p.prefAnti {
				if p.prefAnti[i].matches(cs.pod, cs.nsLabels) {
					s.add(p.prefAnti[i].topologyKey, n.node, -int64(p.prefAnti[i].weight))
				}
			}
		}
	}
	if len(s.scores) == 0 {
		return nil
	}
	return s
}

func expandWeighted(terms []weightedTerm, ns namespaceLister) []weightedTerm {
	if len(terms) == 0 {
		return nil
	}
	plain := make([]affinityTerm, len(terms))
	for i := range terms {
		plain[i] = terms[i].affinityTerm
	}
	plain = expandNamespaces(plain, ns)
	out := make([]weightedTerm, len(terms))
	for i := range terms {
		out[i] = weightedTerm{affinityTerm: plain[i], weight: terms[i].weight}
	}
	return out
}

func (s *affinityScoreState) score(n *nodeInfo) int64 {
	var total int64
	for key, values := range s.scores {
		if v, ok := n.node.Labels[key]; ok {
			total += values[v]
		}
	}
	return total
}

// normalize maps the scores linearly onto [0, maxNodeScore].
func (s *affinityScoreState) normalize(scores []int64, _ []*nodeInfo) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, v := range scores {
		lo, hi = min(lo, v), max(hi, v)
	}
	for i := range scores {
		if hi > lo {
			scores[i] = int64(float64(maxNodeScore) * float64(scores[i]-lo) / float64(hi-lo))
		} else {
			scores[i] = 0
		}
	}
}
