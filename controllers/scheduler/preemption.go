package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Preemption looks at 10% of the nodes where it could help, and at least
// 100 of them, as upstream's DefaultPreemption defaults.
const (
	minCandidateNodesPercentage = 10
	minCandidateNodesAbsolute   = 100
)

// nominator tracks pods nominated to nodes (status.nominatedNodeName, or
// set by this scheduler's preemption before the informer shows it), so
// that pods of lower or equal priority leave room for them. Safe for
// concurrent use.
type nominator struct {
	mu     sync.Mutex
	byNode map[string][]*podInfo
	nodeOf map[types.UID]string
}

func newNominator() *nominator {
	return &nominator{byNode: map[string][]*podInfo{}, nodeOf: map[types.UID]string{}}
}

// set nominates pi's pod to node ("" removes the nomination).
func (n *nominator) set(pi *podInfo, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pi.pod.UID)
	if node == "" {
		return
	}
	n.byNode[node] = append(n.byNode[node], pi)
	n.nodeOf[pi.pod.UID] = node
}

func (n *nominator) delete(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(uid)
}

func (n *nominator) deleteLocked(uid types.UID) {
	node, ok := n.nodeOf[uid]
	if !ok {
		return
	}
	delete(n.nodeOf, uid)
	n.byNode[node] = removeUID(n.byNode[node], uid)
	if len(n.byNode[node]) == 0 {
		delete(n.byNode, node)
	}
}

// snapshot copies the nominations (nil when there are none).
func (n *nominator) snapshot() map[string][]*podInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.byNode) == 0 {
		return nil
	}
	out := make(map[string][]*podInfo, len(n.byNode))
	for k, v := range n.byNode {
		out[k] = append([]*podInfo(nil), v...)
	}
	return out
}

// filterWithNominated runs the filters on n, first as if the pods
// nominated to it with at least the pod's priority were already there,
// then without them; the pod must pass both.
func filterWithNominated(cs *cycleState, n *nodeInfo, nominated map[string][]*podInfo) *status {
	var add []*podInfo
	for _, p := range nominated[n.name] {
		if p.priority >= cs.pi.priority && p.pod.UID != cs.pod.UID {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return runFilters(cs, n)
	}
	ni, c := n.clone(), cs.clone()
	for _, p := range add {
		ni.addPod(p)
		c.addPod(p, ni.node)
	}
	if st := runFilters(c, ni); !st.ok() {
		return st
	}
	return runFilters(cs, n)
}

// podStartTime is when the pod started, or now for a pod not started yet.
func podStartTime(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return time.Now()
}

// moreImportant orders victims: higher priority, then started earlier.
func moreImportant(a, b *podInfo) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return podStartTime(a.pod).Before(podStartTime(b.pod))
}

// splitByPDB splits pods (most important first) into those whose eviction
// would exceed a PodDisruptionBudget's allowed disruptions and the rest.
func splitByPDB(pods []*podInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*podInfo) {
	allowed := make([]int32, len(pdbs))
	selectors := make([]labels.Selector, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil {
			selectors[i] = sel
		}
	}
	for _, p := range pods {
		violated := false
		if len(p.pod.Labels) > 0 {
			for i, pdb := range pdbs {
				sel := selectors[i]
				if pdb.Namespace != p.pod.Namespace || sel == nil || sel.Empty() || !sel.Matches(labels.Set(p.pod.Labels)) {
					continue
				}
				if _, disrupted := pdb.Status.DisruptedPods[p.pod.Name]; disrupted {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violated = true
				}
			}
		}
		if violated {
			violating = append(violating, p)
		} else {
			nonViolating = append(nonViolating, p)
		}
	}
	return violating, nonViolating
}

// selectVictims finds the fewest, least important pods of lower priority
// to remove from n so that the pod fits, preferring to keep pods whose
// eviction would violate a PodDisruptionBudget. It returns them most
// important first, with how many violate a budget.
func selectVictims(cs *cycleState, n *nodeInfo, pdbs []*policyv1.PodDisruptionBudget, nominated map[string][]*podInfo) ([]*podInfo, int, *status) {
	var potential []*podInfo
	for _, p := range n.pods {
		if p.priority < cs.pi.priority {
			potential = append(potential, p)
		}
	}
	if len(potential) == 0 {
		return nil, 0, stNoVictims
	}
	ni, c := n.clone(), cs.clone()
	for _, p := range potential {
		ni.removePod(p.pod.UID)
		c.removePod(p, ni.node)
	}
	if st := filterWithNominated(c, ni, nominated); !st.ok() {
		return nil, 0, st
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportant(potential[i], potential[j]) })
	violating, nonViolating := splitByPDB(potential, pdbs)
	var victims []*podInfo
	// reprieve puts p back; it stays a victim if the pod then no longer fits.
	reprieve := func(p *podInfo) bool {
		ni.addPod(p)
		c.addPod(p, ni.node)
		if filterWithNominated(c, ni, nominated).ok() {
			return true
		}
		ni.removePod(p.pod.UID)
		c.removePod(p, ni.node)
		victims = append(victims, p)
		return false
	}
	violations := 0
	for _, p := range violating {
		if !reprieve(p) {
			violations++
		}
	}
	for _, p := range nonViolating {
		reprieve(p)
	}
	if len(victims) == 0 {
		return nil, 0, newStatus(codeError, 0, fmt.Sprintf("expected at least one victim pod on node %q", n.name))
	}
	if len(violating) > 0 && len(nonViolating) > 0 {
		sort.SliceStable(victims, func(i, j int) bool { return moreImportant(victims[i], victims[j]) })
	}
	return victims, violations, nil
}

// candidate is a node where evicting victims makes room.
type candidate struct {
	node       string
	victims    []*podInfo // most important first
	violations int
}

// pickCandidate chooses, in order: fewest PDB violations, lowest highest
// victim priority, lowest sum of priorities, fewest victims, latest start
// of the most important victims; then the first.
func pickCandidate(cands []candidate) candidate {
	scores := []func(c *candidate) int64{
		func(c *candidate) int64 { return -int64(c.violations) },
		func(c *candidate) int64 { return -int64(c.victims[0].priority) },
		func(c *candidate) int64 {
			var sum int64
			for _, v := range c.victims {
				// Shifted so that negative priorities still add up.
				sum += int64(v.priority) + math.MaxInt32 + 1
			}
			return -sum
		},
		func(c *candidate) int64 { return -int64(len(c.victims)) },
		func(c *candidate) int64 {
			top := c.victims[0].priority
			earliest := podStartTime(c.victims[0].pod)
			for _, v := range c.victims {
				if t := podStartTime(v.pod); v.priority == top && t.Before(earliest) {
					earliest = t
				}
			}
			return earliest.UnixNano()
		},
	}
	for _, f := range scores {
		var kept []candidate
		best := int64(math.MinInt64)
		for i := range cands {
			s := f(&cands[i])
			if s > best {
				best, kept = s, kept[:0]
			}
			if s == best {
				kept = append(kept, cands[i])
			}
		}
		if len(kept) == 1 {
			return kept[0]
		}
		cands = kept
	}
	return cands[0]
}

// terminatingByPreemption reports whether p is being deleted because this
// (or another) scheduler preempted it.
func terminatingByPreemption(p *corev1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// statusOf is fe's verdict for node name.
func (e *fitError) statusOf(name string) *status {
	if s, ok := e.statuses[name]; ok {
		return s
	}
	return e.absent
}

// preemptionResult is what preemption decided for the pod: nominate is
// nil to leave its nominated node alone, else the node to nominate ("" to
// clear); message is the "preemption: ..." part of the failure message.
type preemptionResult struct {
	nominate *string
	message  string
}

// preempt tries to make room for the pod of cs by evicting pods of lower
// priority from one node, after filtering failed with fe.
func (s *Scheduler) preempt(ctx context.Context, cs *cycleState, fe *fitError, nominated map[string][]*podInfo) preemptionResult {
	pod := cs.pod
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return preemptionResult{message: "preemption: not eligible due to preemptionPolicy=Never."}
	}
	if nnn := pod.Status.NominatedNodeName; nnn != "" {
		if st := fe.statusOf(nnn); st == nil || st.code != codeUnresolvable {
			if n := s.snap.byName[nnn]; n != nil {
				for _, p := range n.pods {
					if p.priority < cs.pi.priority && terminatingByPreemption(p.pod) {
						return preemptionResult{message: "preemption: not eligible due to a terminating pod on the nominated node."}
					}
				}
			}
		}
	}
	clear := ""
	all := s.snap.list
	var potential []*nodeInfo
	for _, n := range all {
		if st := fe.statusOf(n.name); st != nil && st.code == codeUnschedulable {
			potential = append(potential, n)
		}
	}
	useless := &fitError{numAllNodes: len(all), statuses: map[string]*status{}, absent: stUseless}
	if len(potential) == 0 {
		return preemptionResult{nominate: &clear, message: "preemption: " + useless.Error()}
	}
	pdbs, err := s.pdbs.List(labels.Everything())
	if err != nil {
		return preemptionResult{message: "preemption: " + err.Error()}
	}
	want := max(len(potential)*minCandidateNodesPercentage/100, minCandidateNodesAbsolute)
	want = min(want, len(potential))
	offset := s.rnd.IntN(len(potential))

	var mu sync.Mutex
	var nonViolating, violating []candidate
	statuses := make([]*status, len(potential))
	s.par.until(len(potential), func(i int) bool {
		n := potential[(offset+i)%len(potential)]
		victims, violations, st := selectVictims(cs, n, pdbs, nominated)
		if st != nil {
			statuses[i] = st
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		c := candidate{node: n.name, victims: victims, violations: violations}
		if violations == 0 {
			nonViolating = append(nonViolating, c)
		} else {
			violating = append(violating, c)
		}
		return !(len(nonViolating) > 0 && len(nonViolating)+len(violating) >= want)
	})
	cands := append(nonViolating, violating...)
	if len(cands) == 0 {
		for i, st := range statuses {
			if st != nil {
				useless.statuses[potential[(offset+i)%len(potential)].name] = st
			}
		}
		return preemptionResult{nominate: &clear, message: "preemption: " + useless.Error()}
	}
	best := pickCandidate(cands)
	if err := s.evict(ctx, cs, best, nominated); err != nil {
		return preemptionResult{message: "preemption: " + err.Error()}
	}
	node := best.node
	return preemptionResult{nominate: &node,
		message: fmt.Sprintf("preemption: found a potential placement for pod on node %v, preempting %d victims", best.node, len(best.victims))}
}

// evict deletes the candidate's victims (marking them DisruptionTarget
// first) and takes the nomination away from lower-priority pods
// nominated to the same node, which may no longer fit there.
func (s *Scheduler) evict(ctx context.Context, cs *cycleState, c candidate, nominated map[string][]*podInfo) error {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	errs := make([]error, len(c.victims))
	for i, v := range c.victims {
		if v.pod.DeletionTimestamp != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			victim := v.pod
			cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
				Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", s.cfg.SchedulerName)}
			if err := s.patchStatus(ctx, victim, &cond, nil); err != nil {
				if !apierrors.IsNotFound(err) {
					errs[i] = fmt.Errorf("mark victim %s/%s: %w", victim.Namespace, victim.Name, err)
				}
				return
			}
			err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs[i] = fmt.Errorf("delete victim %s/%s: %w", victim.Namespace, victim.Name, err)
				return
			}
			logger.V(2).Info("Preempted pod", "victim", klog.KObj(victim), "preemptor", klog.KObj(cs.pod), "node", c.node)
			s.recorder.Eventf(victim, corev1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", cs.pod.UID, c.node)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, p := range nominated[c.node] {
		if p.priority < cs.pi.priority && p.pod.UID != cs.pod.UID {
			s.nominator.delete(p.pod.UID)
			empty := ""
			if err := s.patchStatus(ctx, p.pod, nil, &empty); err != nil && !apierrors.IsNotFound(err) {
				logger.Error(err, "Cannot clear the nominated node of a lower-priority pod", "pod", klog.KObj(p.pod))
			}
		}
	}
	return nil
}
