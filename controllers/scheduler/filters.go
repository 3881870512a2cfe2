package scheduler

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// newCycleState computes the pod's pre-filter state over the snapshot's
// nodes. A non-nil status means the pod cannot be placed on any node
// (upstream's PreFilter rejections).
func newCycleState(pi *podInfo, snap *snapshot, ns namespaceLister) (*cycleState, *status) {
	pod := pi.pod
	cs := &cycleState{pi: pi, pod: pod, nodeAffinity: nodeaffinity.GetRequiredNodeAffinity(pod)}
	var terms []corev1.NodeSelectorTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		cs.hasNodeAffinity = true
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	cs.hasNodeAffinity = cs.hasNodeAffinity || pod.Spec.NodeSelector != nil
	if names, conflict := nodeNamesFromTerms(terms); conflict {
		return nil, newStatus(codeUnresolvable, plNodeAffinity, reasonAffinityConflict)
	} else {
		cs.nodeNames = names
	}
	if ns != nil {
		cs.nsLabels = ns.labelsOf(pod.Namespace)
	}
	var st *status
	if cs.spread, st = newSpreadFilterState(cs, snap.list); st != nil {
		return nil, st
	}
	if cs.affinity, st = newAffinityFilterState(cs, snap, ns); st != nil {
		return nil, st
	}
	return cs, nil
}

// nodeNamesFromTerms returns the node names that required node affinity
// limits the pod to through metadata.name In requirements: the union over
// terms of each term's intersection, nil when some term does not name
// nodes. conflict is set when no name can satisfy every term that names.
func nodeNamesFromTerms(terms []corev1.NodeSelectorTerm) (names sets.Set[string], conflict bool) {
	if len(terms) == 0 {
		return nil, false
	}
	var out sets.Set[string]
	for _, t := range terms {
		var termNames sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn {
				s := sets.New(r.Values...)
				if termNames == nil {
					termNames = s
				} else {
					termNames = termNames.Intersection(s)
				}
			}
		}
		if termNames == nil {
			return nil, false
		}
		out = out.Union(termNames)
	}
	return out, len(out) == 0
}

func filterNodeName(cs *cycleState, n *nodeInfo) *status {
	if cs.pod.Spec.NodeName != "" && cs.pod.Spec.NodeName != n.name {
		return stNodeName
	}
	return nil
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

func filterNodeUnschedulable(cs *cycleState, n *nodeInfo) *status {
	if n.node.Spec.Unschedulable && !tolerated(cs.pod.Spec.Tolerations, &unschedulableTaint) {
		return stUnschedulable
	}
	return nil
}

// tolerated reports whether a toleration tolerates the taint: same effect
// (or none), same key (or none, with Exists), and Exists or an equal value.
func tolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		t := &tolerations[i]
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key != "" && t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
			if t.Value == taint.Value {
				return true
			}
		case corev1.TolerationOpExists:
			return true
		}
	}
	return false
}

// untoleratedNoSchedule reports whether a NoSchedule or NoExecute taint
// of node is not tolerated.
func untoleratedNoSchedule(tolerations []corev1.Toleration, node *corev1.Node) bool {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !tolerated(tolerations, t) {
			return true
		}
	}
	return false
}

func filterTaintToleration(cs *cycleState, n *nodeInfo) *status {
	if untoleratedNoSchedule(cs.pod.Spec.Tolerations, n.node) {
		return stTaint
	}
	return nil
}

func filterNodeAffinity(cs *cycleState, n *nodeInfo) *status {
	if !cs.hasNodeAffinity {
		return nil
	}
	if ok, _ := cs.nodeAffinity.Match(n.node); !ok {
		return stNodeAffinity
	}
	return nil
}

func filterNodePorts(cs *cycleState, n *nodeInfo) *status {
	for _, want := range cs.pi.ports {
		w := newUsedPort(want)
		for _, used := range n.ports {
			if w.conflicts(used) {
				return stPorts
			}
		}
	}
	return nil
}

// insufficient is one resource the node lacks for the pod.
type insufficient struct {
	reason string
	// unresolvable: the pod asks for more than the node has at all, so no
	// preemption can help.
	unresolvable bool
}

// fits lists what node n lacks for pod info pi (nil: it fits).
func fits(pi *podInfo, n *nodeInfo) []insufficient {
	var out []insufficient
	alloc, used, req := &n.allocatable, &n.requested, &pi.req
	if int64(len(n.pods))+1 > alloc.pods {
		out = append(out, insufficient{reason: reasonTooManyPods})
	}
	if req.milliCPU == 0 && req.memory == 0 && req.ephemeral == 0 && len(req.scalar) == 0 {
		return out
	}
	check := func(name string, want, have, inUse int64) {
		if want > 0 && want > have-inUse {
			out = append(out, insufficient{reason: "Insufficient " + name, unresolvable: want > have})
		}
	}
	check(string(corev1.ResourceCPU), req.milliCPU, alloc.milliCPU, used.milliCPU)
	check(string(corev1.ResourceMemory), req.memory, alloc.memory, used.memory)
	check(string(corev1.ResourceEphemeralStorage), req.ephemeral, alloc.ephemeral, used.ephemeral)
	if len(req.scalar) > 0 {
		names := make([]string, 0, len(req.scalar))
		for name := range req.scalar {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			rn := corev1.ResourceName(name)
			check(name, req.scalar[rn], alloc.scalar[rn], used.scalar[rn])
		}
	}
	return out
}

func filterNodeResources(cs *cycleState, n *nodeInfo) *status {
	lacking := fits(cs.pi, n)
	if len(lacking) == 0 {
		return nil
	}
	st := &status{code: codeUnschedulable, plugin: plNodeResourcesFit, reasons: make([]string, 0, len(lacking))}
	for _, l := range lacking {
		st.reasons = append(st.reasons, l.reason)
		if l.unresolvable {
			st.code = codeUnresolvable
		}
	}
	return st
}

// parseStatus rejects a pod whose affinity terms do not parse.
func parseStatus(err error) *status {
	return newStatus(codeUnresolvable, plInterPodAffinity, fmt.Sprintf("parsing pod: %v", err))
}
