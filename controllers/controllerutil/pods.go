package controllerutil

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
)

// PodDeletionCostAnnotation is the pod annotation whose int32 value orders
// pods for scale-down: lower cost goes first.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// PodKey is a pod's "namespace/name".
func PodKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// IsPodActive reports whether the pod has neither terminated (Succeeded,
// Failed) nor begun deletion.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// IsPodTerminal reports whether the pod's phase is Succeeded or Failed.
func IsPodTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsPodTerminating reports whether the pod is being deleted but has not
// reached a terminal phase.
func IsPodTerminating(p *corev1.Pod) bool {
	return !IsPodTerminal(p) && p.DeletionTimestamp != nil
}

// FilterActivePods returns the active pods, in order.
func FilterActivePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// FilterTerminatingPods returns the terminating pods, in order.
func FilterTerminatingPods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if IsPodTerminating(p) {
			out = append(out, p)
		}
	}
	return out
}

// CountTerminatingPods counts the terminating pods.
func CountTerminatingPods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if IsPodTerminating(p) {
			n++
		}
	}
	return n
}

// FilterClaimedPods returns the pods that owner controls and selector
// matches.
func FilterClaimedPods(owner metav1.Object, selector labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if metav1.IsControlledBy(p, owner) && selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// GetPodReadyCondition returns the pod's Ready condition, or nil.
func GetPodReadyCondition(status corev1.PodStatus) *corev1.PodCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == corev1.PodReady {
			return &status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(p *corev1.Pod) bool {
	c := GetPodReadyCondition(p.Status)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether the pod has been ready for at least
// minReadySeconds at now (any ready pod when minReadySeconds is 0).
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now metav1.Time) bool {
	if !IsPodReady(p) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	c := GetPodReadyCondition(p.Status)
	d := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(d).Before(now.Time)
}

// nextAvailabilityCheck is how long after now the ready pod becomes
// available, or nil if it is not ready, already available, or has no
// ready transition time.
func nextAvailabilityCheck(p *corev1.Pod, minReadySeconds int32, now time.Time) *time.Duration {
	if minReadySeconds <= 0 || !IsPodReady(p) {
		return nil
	}
	c := GetPodReadyCondition(p.Status)
	if c.LastTransitionTime.IsZero() {
		return nil
	}
	d := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if d <= 0 {
		return nil
	}
	return &d
}

// FindMinNextPodAvailabilityCheck returns after how long the owner should
// recount available pods: the earliest moment a ready but not yet
// available pod (as of evaluated, when the status was computed) becomes
// available, measured from clk's now; 0 if that moment has passed since;
// nil if no pod is waiting.
func FindMinNextPodAvailabilityCheck(pods []*corev1.Pod, minReadySeconds int32, evaluated time.Time, clk clock.PassiveClock) *time.Duration {
	var first *time.Duration
	var firstPod *corev1.Pod
	for _, p := range pods {
		if d := nextAvailabilityCheck(p, minReadySeconds, evaluated); d != nil && (first == nil || *d < *first) {
			first, firstPod = d, p
		}
	}
	if firstPod == nil {
		return nil
	}
	if d := nextAvailabilityCheck(firstPod, minReadySeconds, clk.Now()); d != nil {
		return d
	}
	zero := time.Duration(0)
	return &zero
}

// GetDeletionCost returns the pod's deletion cost annotation (0 when
// absent or not an int32).
func GetDeletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// phaseOrdinal orders phases for deletion: pending first, running last.
func phaseOrdinal(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default:
		return 0
	}
}

// readyTime is when the ready pod became ready, or the zero time.
func readyTime(p *corev1.Pod) metav1.Time {
	if c := GetPodReadyCondition(p.Status); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime
	}
	return metav1.Time{}
}

// maxRestarts returns the highest restart count among the pod's regular
// containers and among its sidecars (restartable init containers).
func maxRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if sidecars[c.Name] {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

// moreRestarts compares restart counts: +1 when a restarted more than b,
// -1 when fewer, 0 when equal (regular containers first, then sidecars).
func moreRestarts(a, b *corev1.Pod) int {
	ar, as := maxRestarts(a)
	br, bs := maxRestarts(b)
	switch {
	case ar != br:
		return cmpBool(ar > br)
	case as != bs:
		return cmpBool(as > bs)
	}
	return 0
}

func cmpBool(b bool) int {
	if b {
		return 1
	}
	return -1
}

// laterOrZero reports whether a is after b, a zero time counting as the
// latest.
func laterOrZero(a, b metav1.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b.Time)
}

// log2Age is the base-2 logarithm of t's age at now in nanoseconds, -1 for
// a time not in the past.
func log2Age(t, now metav1.Time) int64 {
	d := now.Sub(t.Time)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// ActivePodsWithRanks sorts pods (sort.Sort) so that those to delete first
// come first. For two pods the first rule that tells them apart decides:
//
//  1. a pod not bound to a node before a bound one;
//  2. phase Pending before Unknown before Running;
//  3. a not-ready pod before a ready one;
//  4. lower controller.kubernetes.io/pod-deletion-cost first;
//  5. higher Rank first (e.g. more related pods on the same node);
//  6. of two ready pods, the one ready for a shorter time first;
//  7. the pod whose container restarted most first;
//  8. the newer pod first.
//
// In 6 and 8, with Now set, times compare on a log2 scale of their age, and
// pods in the same bucket are ordered by UID (a random but stable order),
// so that scale-down does not always pick the very newest pod. A zero time
// counts as the newest.
type ActivePodsWithRanks struct {
	// Pods to sort.
	Pods []*corev1.Pod
	// Rank holds one rank per pod, in the same order.
	Rank []int
	// Now is the reference for the logarithmic comparison; zero compares
	// times exactly.
	Now metav1.Time
}

// Len is the number of pods.
func (s ActivePodsWithRanks) Len() int { return len(s.Pods) }

// Swap swaps two pods and their ranks.
func (s ActivePodsWithRanks) Swap(i, j int) {
	s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i]
	s.Rank[i], s.Rank[j] = s.Rank[j], s.Rank[i]
}

// Less reports whether pod i should be deleted before pod j.
func (s ActivePodsWithRanks) Less(i, j int) bool {
	a, b := s.Pods[i], s.Pods[j]
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrdinal(a.Status.Phase), phaseOrdinal(b.Status.Phase); pa != pb {
		return pa < pb
	}
	ra, rb := IsPodReady(a), IsPodReady(b)
	if ra != rb {
		return !ra
	}
	if ca, cb := GetDeletionCost(a), GetDeletionCost(b); ca != cb {
		return ca < cb
	}
	if s.Rank[i] != s.Rank[j] {
		return s.Rank[i] > s.Rank[j]
	}
	if ra && rb {
		ta, tb := readyTime(a), readyTime(b)
		if !ta.Equal(&tb) {
			return s.newer(a, b, ta, tb)
		}
	}
	if c := moreRestarts(a, b); c != 0 {
		return c > 0
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return s.newer(a, b, a.CreationTimestamp, b.CreationTimestamp)
	}
	return false
}

// newer orders by time, newest first, on the logarithmic scale when Now is
// set and both times are known.
func (s ActivePodsWithRanks) newer(a, b *corev1.Pod, ta, tb metav1.Time) bool {
	if s.Now.IsZero() || ta.IsZero() || tb.IsZero() {
		return laterOrZero(ta, tb)
	}
	d := log2Age(ta, s.Now) - log2Age(tb, s.Now)
	if d == 0 {
		return a.UID < b.UID
	}
	return d < 0
}

// ActivePods sorts pods (sort.Sort) by the rules of ActivePodsWithRanks
// without deletion cost and ranks, and with exact times: the pods to
// delete first come first.
type ActivePods []*corev1.Pod

// Len is the number of pods.
func (s ActivePods) Len() int { return len(s) }

// Swap swaps two pods.
func (s ActivePods) Swap(i, j int) { s[i], s[j] = s[j], s[i] }

// Less reports whether pod i should be deleted before pod j.
func (s ActivePods) Less(i, j int) bool {
	a, b := s[i], s[j]
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrdinal(a.Status.Phase), phaseOrdinal(b.Status.Phase); pa != pb {
		return pa < pb
	}
	ra, rb := IsPodReady(a), IsPodReady(b)
	if ra != rb {
		return !ra
	}
	if ra && rb {
		ta, tb := readyTime(a), readyTime(b)
		if !ta.Equal(&tb) {
			return laterOrZero(ta, tb)
		}
	}
	if c := moreRestarts(a, b); c != 0 {
		return c > 0
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return laterOrZero(a.CreationTimestamp, b.CreationTimestamp)
	}
	return false
}
