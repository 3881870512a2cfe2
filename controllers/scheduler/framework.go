package scheduler

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// code is a filter's verdict on a node.
type code uint8

const (
	codeSuccess code = iota
	// codeUnschedulable: the pod does not fit, but might after preemption.
	codeUnschedulable
	// codeUnresolvable: preemption cannot help on this node.
	codeUnresolvable
	codeError
)

// status is a filter's verdict with upstream's reason strings. nil means
// success. Statuses are shared and never modified once returned.
type status struct {
	code    code
	plugin  pluginSet
	reasons []string
}

func (s *status) ok() bool { return s == nil || s.code == codeSuccess }

func newStatus(c code, p pluginSet, reasons ...string) *status {
	return &status{code: c, plugin: p, reasons: reasons}
}

// Reasons, worded as upstream's plugins word them.
const (
	reasonNodeName          = "node(s) didn't match the requested node name"
	reasonUnschedulable     = "node(s) were unschedulable"
	reasonTaint             = "node(s) had untolerated taint(s)"
	reasonNodeAffinity      = "node(s) didn't match Pod's node affinity/selector"
	reasonAffinityConflict  = "pod affinity terms conflict"
	reasonPorts             = "node(s) didn't have free ports for the requested pod ports"
	reasonTooManyPods       = "Too many pods"
	reasonSpread            = "node(s) didn't match pod topology spread constraints"
	reasonSpreadLabel       = reasonSpread + " (missing required label)"
	reasonPodAffinity       = "node(s) didn't match pod affinity rules"
	reasonPodAntiAffinity   = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAnti      = "node(s) didn't satisfy existing pods anti-affinity rules"
	reasonNoVictims         = "No preemption victims found for incoming pod"
	reasonPreemptionUseless = "Preemption is not helpful for scheduling"
	msgNoNodes              = "no nodes available to schedule pods"
	// noteLengthLimit caps event messages, as the API does.
	noteLengthLimit = 1024
)

// Statuses that carry no detail, allocated once.
var (
	stNodeName      = newStatus(codeUnresolvable, plNodeName, reasonNodeName)
	stUnschedulable = newStatus(codeUnresolvable, plNodeUnschedulable, reasonUnschedulable)
	stTaint         = newStatus(codeUnresolvable, plTaintToleration, reasonTaint)
	stNodeAffinity  = newStatus(codeUnresolvable, plNodeAffinity, reasonNodeAffinity)
	stPorts         = newStatus(codeUnschedulable, plNodePorts, reasonPorts)
	stSpread        = newStatus(codeUnschedulable, plPodTopologySpread, reasonSpread)
	stSpreadLabel   = newStatus(codeUnresolvable, plPodTopologySpread, reasonSpreadLabel)
	stPodAffinity   = newStatus(codeUnresolvable, plInterPodAffinity, reasonPodAffinity)
	stPodAnti       = newStatus(codeUnschedulable, plInterPodAffinity, reasonPodAntiAffinity)
	stExistingAnti  = newStatus(codeUnschedulable, plInterPodAffinity, reasonExistingAnti)
	stNoVictims     = newStatus(codeUnresolvable, 0, reasonNoVictims)
	stUseless       = newStatus(codeUnresolvable, 0, reasonPreemptionUseless)
)

// fitError explains why no node fits, in upstream's format:
// "0/N nodes are available: <prefilter msg>. <counted reasons>. <preemption msg>".
type fitError struct {
	numAllNodes int
	// statuses are the verdicts on the nodes that were filtered.
	statuses map[string]*status
	// absent is the verdict for every node not in statuses (nil: none).
	absent        *status
	preFilterMsg  string
	postFilterMsg string
}

// rejectedBy is the set of filters that rejected some node.
func (e *fitError) rejectedBy() pluginSet {
	var p pluginSet
	for _, s := range e.statuses {
		p |= s.plugin
	}
	if e.absent != nil {
		p |= e.absent.plugin
	}
	return p
}

func (e *fitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "0/%d nodes are available:", e.numAllNodes)
	if e.preFilterMsg != "" {
		fmt.Fprintf(&b, " %s.", e.preFilterMsg)
	} else {
		counts := map[string]int{}
		for _, s := range e.statuses {
			for _, r := range s.reasons {
				counts[r]++
			}
		}
		if n := e.numAllNodes - len(e.statuses); n > 0 && e.absent != nil {
			for _, r := range e.absent.reasons {
				counts[r] += n
			}
		}
		parts := make([]string, 0, len(counts))
		for r, n := range counts {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
		sort.Strings(parts)
		if len(parts) > 0 {
			fmt.Fprintf(&b, " %s.", strings.Join(parts, ", "))
		}
	}
	if e.postFilterMsg != "" {
		b.WriteString(" " + e.postFilterMsg)
	}
	return b.String()
}

// namespaceLister is what the scheduler needs of namespaces.
type namespaceLister interface {
	// labelsOf returns the namespace's labels (nil when unknown).
	labelsOf(name string) labels.Set
	// matching lists the names of the namespaces whose labels match sel.
	matching(sel labels.Selector) []string
}

// cycleState is what one scheduling attempt computes about its pod before
// filtering (upstream's PreFilter and PreScore state).
type cycleState struct {
	pi  *podInfo
	pod *corev1.Pod
	// nodeAffinity is the pod's nodeSelector and required node affinity.
	nodeAffinity nodeaffinity.RequiredNodeAffinity
	// hasNodeAffinity is false when the pod has neither.
	hasNodeAffinity bool
	// nodeNames restricts the candidate nodes (required node affinity on
	// metadata.name); nil means all.
	nodeNames sets.Set[string]
	nsLabels  labels.Set
	spread    *spreadFilterState
	affinity  *affinityFilterState
	// volumes is the VolumeBinding state (nil: the pod has no claims, or
	// the scheduler runs without volume binding), vb its binder.
	volumes *volumeState
	vb      *volumeBinder
}

// clone copies the parts that preemption changes when it removes pods.
func (cs *cycleState) clone() *cycleState {
	c := *cs
	c.spread = cs.spread.clone()
	c.affinity = cs.affinity.clone()
	return &c
}

// addPod and removePod update the state for a pod added to or removed
// from node (nominated pods, preemption victims).
func (cs *cycleState) addPod(pi *podInfo, node *corev1.Node)    { cs.updateWithPod(pi, node, 1) }
func (cs *cycleState) removePod(pi *podInfo, node *corev1.Node) { cs.updateWithPod(pi, node, -1) }

func (cs *cycleState) updateWithPod(pi *podInfo, node *corev1.Node, delta int) {
	if cs.spread != nil {
		cs.spread.update(cs, pi, node, delta)
	}
	if cs.affinity != nil {
		cs.affinity.update(pi, node, int64(delta))
	}
}

// filters run in upstream's order; the first that rejects a node decides.
var filters = []func(cs *cycleState, n *nodeInfo) *status{
	filterNodeName,
	filterNodeUnschedulable,
	filterTaintToleration,
	filterNodeAffinity,
	filterNodePorts,
	filterNodeResources,
	filterVolumeBinding,
	filterPodTopologySpread,
	filterInterPodAffinity,
}

func runFilters(cs *cycleState, n *nodeInfo) *status {
	for _, f := range filters {
		if s := f(cs, n); !s.ok() {
			return s
		}
	}
	return nil
}

// parallelizer runs work over n items on up to workers goroutines.
type parallelizer struct{ workers int }

// newParallelizer uses up to workers goroutines, and no more than there
// are processors to run them.
func newParallelizer(workers int) parallelizer {
	return parallelizer{workers: max(1, min(workers, runtime.GOMAXPROCS(0)))}
}

// until calls fn(i) for i in [0, n), in parallel chunks; fn returning
// false stops the remaining work early (best effort).
func (p parallelizer) until(n int, fn func(i int) bool) {
	if n == 0 {
		return
	}
	workers := min(p.workers, n)
	chunk := max(1, min(n/(workers*4), 64))
	if workers <= 1 || n <= 32 {
		for i := 0; i < n; i++ {
			if !fn(i) {
				return
			}
		}
		return
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					if !fn(i) {
						stop.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
