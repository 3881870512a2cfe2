package scheduler

import (
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// spreadConstraint is a parsed topology spread constraint.
type spreadConstraint struct {
	maxSkew     int32
	topologyKey string
	selector    labels.Selector
	minDomains  int32
	// honorAffinity and honorTaints are the node inclusion policies
	// (defaults: Honor and Ignore).
	honorAffinity, honorTaints bool
}

// systemDefaultConstraints apply to pods without constraints of their own
// that belong to a service or a controller, as upstream's defaults.
var systemDefaultConstraints = []corev1.TopologySpreadConstraint{
	{TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 5},
}

// parseConstraints keeps the constraints with the given action.
func parseConstraints(pod *corev1.Pod, cs []corev1.TopologySpreadConstraint, action corev1.UnsatisfiableConstraintAction) ([]spreadConstraint, error) {
	var out []spreadConstraint
	for _, c := range cs {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("topology spread constraint %q: %w", c.TopologyKey, err)
		}
		if len(c.MatchLabelKeys) > 0 {
			set := labels.Set{}
			for _, k := range c.MatchLabelKeys {
				if v, ok := pod.Labels[k]; ok {
					set[k] = v
				}
			}
			if len(set) > 0 {
				if reqs, ok := sel.Requirements(); ok {
					sel = labels.SelectorFromSet(set).Add(reqs...)
				}
			}
		}
		sc := spreadConstraint{maxSkew: c.MaxSkew, topologyKey: c.TopologyKey, selector: sel, minDomains: 1, honorAffinity: true}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			sc.honorAffinity = *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		}
		if c.NodeTaintsPolicy != nil {
			sc.honorTaints = *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		}
		out = append(out, sc)
	}
	return out, nil
}

// includes applies the constraint's node inclusion policies.
func (c *spreadConstraint) includes(cs *cycleState, node *corev1.Node) bool {
	if c.honorAffinity {
		if ok, _ := cs.nodeAffinity.Match(node); !ok {
			return false
		}
	}
	return !c.honorTaints || !untoleratedNoSchedule(cs.pod.Spec.Tolerations, node)
}

func hasTopologyKeys(node *corev1.Node, cs []spreadConstraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// countMatching counts the pods in ns that sel selects, leaving out
// terminating pods.
func countMatching(pods []*podInfo, sel labels.Selector, ns string) int {
	if sel.Empty() {
		return 0
	}
	n := 0
	for _, p := range pods {
		if p.pod.DeletionTimestamp == nil && p.pod.Namespace == ns && sel.Matches(labels.Set(p.pod.Labels)) {
			n++
		}
	}
	return n
}

// spreadFilterState counts, per DoNotSchedule constraint, the matching
// pods in each topology domain.
type spreadFilterState struct {
	constraints []spreadConstraint
	counts      []map[string]int
	// minMatch is the smallest count over the domains (0 while fewer
	// domains than minDomains exist).
	minMatch []int
}

func newSpreadFilterState(cs *cycleState, nodes []*nodeInfo) (*spreadFilterState, *status) {
	if len(cs.pod.Spec.TopologySpreadConstraints) == 0 {
		return nil, nil
	}
	constraints, err := parseConstraints(cs.pod, cs.pod.Spec.TopologySpreadConstraints, corev1.DoNotSchedule)
	if err != nil {
		return nil, newStatus(codeUnresolvable, plPodTopologySpread, err.Error())
	}
	if len(constraints) == 0 {
		return nil, nil
	}
	s := &spreadFilterState{constraints: constraints, counts: make([]map[string]int, len(constraints)), minMatch: make([]int, len(constraints))}
	for i := range s.counts {
		s.counts[i] = map[string]int{}
	}
	for _, n := range nodes {
		if !hasTopologyKeys(n.node, constraints) {
			continue
		}
		for i := range constraints {
			c := &constraints[i]
			if !c.includes(cs, n.node) {
				continue
			}
			s.counts[i][n.node.Labels[c.topologyKey]] += countMatching(n.pods, c.selector, cs.pod.Namespace)
		}
	}
	s.recomputeMin()
	return s, nil
}

func (s *spreadFilterState) recomputeMin() {
	for i := range s.constraints {
		m := math.MaxInt32
		for _, v := range s.counts[i] {
			m = min(m, v)
		}
		if len(s.counts[i]) < int(s.constraints[i].minDomains) {
			m = 0
		}
		s.minMatch[i] = m
	}
}

func (s *spreadFilterState) clone() *spreadFilterState {
	if s == nil {
		return nil
	}
	c := &spreadFilterState{constraints: s.constraints, counts: make([]map[string]int, len(s.counts)), minMatch: append([]int(nil), s.minMatch...)}
	for i, m := range s.counts {
		c.counts[i] = make(map[string]int, len(m))
		for k, v := range m {
			c.counts[i][k] = v
		}
	}
	return c
}

// update counts pi added to (delta 1) or removed from (-1) node.
func (s *spreadFilterState) update(cs *cycleState, pi *podInfo, node *corev1.Node, delta int) {
	if pi.pod.Namespace != cs.pod.Namespace || node == nil || !hasTopologyKeys(node, s.constraints) {
		return
	}
	set := labels.Set(pi.pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		if !c.selector.Matches(set) || !c.includes(cs, node) {
			continue
		}
		s.counts[i][node.Labels[c.topologyKey]] += delta
	}
	s.recomputeMin()
}

func filterPodTopologySpread(cs *cycleState, n *nodeInfo) *status {
	s := cs.spread
	if s == nil {
		return nil
	}
	set := labels.Set(cs.pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := n.node.Labels[c.topologyKey]
		if !ok {
			return stSpreadLabel
		}
		self := 0
		if c.selector.Matches(set) {
			self = 1
		}
		if s.counts[i][v]+self-s.minMatch[i] > int(c.maxSkew) {
			return stSpread
		}
	}
	return nil
}

// ownerSelector gives the default spreading selector of a pod: the union
// of its services' selectors and its controller's (ReplicationController,
// ReplicaSet or StatefulSet) selector, as upstream's DefaultSelector.
type ownerSelector struct {
	services     corelisters.ServiceLister
	rcs          corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
}

func (o *ownerSelector) selectorFor(pod *corev1.Pod) labels.Selector {
	set := labels.Set{}
	if o.services != nil {
		if svcs, err := o.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
			for _, svc := range svcs {
				if svc.Spec.Selector != nil && labels.Set(svc.Spec.Selector).AsSelectorPreValidated().Matches(labels.Set(pod.Labels)) {
					set = labels.Merge(set, svc.Spec.Selector)
				}
			}
		}
	}
	sel := set.AsSelector()
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return sel
	}
	var ls *metav1.LabelSelector
	switch {
	case ref.APIVersion == "v1" && ref.Kind == "ReplicationController" && o.rcs != nil:
		if rc, err := o.rcs.ReplicationControllers(pod.Namespace).Get(ref.Name); err == nil {
			return labels.Merge(set, rc.Spec.Selector).AsSelector()
		}
	case ref.APIVersion == appsv1.SchemeGroupVersion.String() && ref.Kind == "ReplicaSet" && o.replicaSets != nil:
		if rs, err := o.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name); err == nil {
			ls = rs.Spec.Selector
		}
	case ref.APIVersion == appsv1.SchemeGroupVersion.String() && ref.Kind == "StatefulSet" && o.statefulSets != nil:
		if ss, err := o.statefulSets.StatefulSets(pod.Namespace).Get(ref.Name); err == nil {
			ls = ss.Spec.Selector
		}
	}
	if ls != nil {
		if other, err := metav1.LabelSelectorAsSelector(ls); err == nil {
			if reqs, ok := other.Requirements(); ok {
				sel = sel.Add(reqs...)
			}
		}
	}
	return sel
}

// spreadScoreState holds what ScheduleAnyway scoring counts once.
type spreadScoreState struct {
	constraints []spreadConstraint
	ignored     map[string]bool
	// counts per constraint per domain, for non-hostname keys.
	counts  []map[string]int64
	weights []float64
}

// newSpreadScoreState prepares scoring over the feasible nodes; nil when
// the pod has no ScheduleAnyway constraints (its own or the defaults).
func newSpreadScoreState(cs *cycleState, feasible, all []*nodeInfo, owners *ownerSelector) (*spreadScoreState, error) {
	pod := cs.pod
	var constraints []spreadConstraint
	var err error
	explicit := len(pod.Spec.TopologySpreadConstraints) > 0
	if explicit {
		constraints, err = parseConstraints(pod, pod.Spec.TopologySpreadConstraints, corev1.ScheduleAnyway)
		if err != nil {
			return nil, err
		}
	} else if owners != nil {
		sel := owners.selectorFor(pod)
		if sel.Empty() {
			return nil, nil
		}
		constraints, _ = parseConstraints(pod, systemDefaultConstraints, corev1.ScheduleAnyway)
		for i := range constraints {
			constraints[i].selector = sel
		}
	}
	if len(constraints) == 0 {
		return nil, nil
	}
	// Explicit constraints need every topology key on a node; the system
	// defaults do not.
	requireAll := explicit
	s := &spreadScoreState{constraints: constraints, ignored: map[string]bool{}, counts: make([]map[string]int64, len(constraints)), weights: make([]float64, len(constraints))}
	sizes := make([]int, len(constraints))
	for i := range s.counts {
		s.counts[i] = map[string]int64{}
	}
	for _, n := range feasible {
		if requireAll && !hasTopologyKeys(n.node, constraints) {
			s.ignored[n.name] = true
			continue
		}
		for i := range constraints {
			if constraints[i].topologyKey == corev1.LabelHostname {
				continue
			}
			v := n.node.Labels[constraints[i].topologyKey]
			if _, ok := s.counts[i][v]; !ok {
				s.counts[i][v] = 0
				sizes[i]++
			}
		}
	}
	for i := range constraints {
		size := sizes[i]
		if constraints[i].topologyKey == corev1.LabelHostname {
			size = len(feasible) - len(s.ignored)
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	for _, n := range all {
		if requireAll && !hasTopologyKeys(n.node, constraints) {
			continue
		}
		for i := range constraints {
			c := &constraints[i]
			if c.topologyKey == corev1.LabelHostname || !c.includes(cs, n.node) {
				continue
			}
			v := n.node.Labels[c.topologyKey]
			if _, ok := s.counts[i][v]; ok {
				s.counts[i][v] += int64(countMatching(n.pods, c.selector, pod.Namespace))
			}
		}
	}
	return s, nil
}

func (s *spreadScoreState) score(cs *cycleState, n *nodeInfo) int64 {
	if s.ignored[n.name] {
		return 0
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := n.node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var cnt int64
		if c.topologyKey == corev1.LabelHostname {
			cnt = int64(countMatching(n.pods, c.selector, cs.pod.Namespace))
		} else {
			cnt = s.counts[i][v]
		}
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score))
}

// normalize maps fewer matching pods to a higher score; ignored nodes get 0.
func (s *spreadScoreState) normalize(scores []int64, nodes []*nodeInfo) {
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for i, n := range nodes {
		if s.ignored[n.name] {
			continue
		}
		minScore = min(minScore, scores[i])
		maxScore = max(maxScore, scores[i])
	}
	for i, n := range nodes {
		switch {
		case s.ignored[n.name]:
			scores[i] = 0
		case maxScore == 0:
			scores[i] = maxNodeScore
		default:
			scores[i] = maxNodeScore * (maxScore + minScore - scores[i]) / maxScore
		}
	}
}
