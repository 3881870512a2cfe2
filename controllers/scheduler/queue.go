package scheduler

import (
	"container/heap"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// plugin names a filter; pluginSet is a set of them (the filters that
// rejected a pod, or those a cluster event may satisfy).
type pluginSet uint16

const (
	plNodeName pluginSet = 1 << iota
	plNodeUnschedulable
	plTaintToleration
	plNodeAffinity
	plNodePorts
	plNodeResourcesFit
	plPodTopologySpread
	plInterPodAffinity
	plVolumeBinding

	allPlugins pluginSet = 1<<iota - 1
)

var pluginNames = []struct {
	p    pluginSet
	name string
}{
	{plNodeName, "NodeName"},
	{plNodeUnschedulable, "NodeUnschedulable"},
	{plTaintToleration, "TaintToleration"},
	{plNodeAffinity, "NodeAffinity"},
	{plNodePorts, "NodePorts"},
	{plNodeResourcesFit, "NodeResourcesFit"},
	{plPodTopologySpread, "PodTopologySpread"},
	{plInterPodAffinity, "InterPodAffinity"},
	{plVolumeBinding, "VolumeBinding"},
}

func (p pluginSet) String() string {
	s := ""
	for _, n := range pluginNames {
		if p&n.p != 0 {
			if s != "" {
				s += ","
			}
			s += n.name
		}
	}
	return s
}

// clusterEvent is a change that may make unschedulable pods schedulable.
type clusterEvent int

const (
	evNodeAdd clusterEvent = iota
	evNodeAllocatable
	evNodeLabel
	evNodeTaint // taints or spec.unschedulable
	evAssignedPodAdd
	evAssignedPodUpdate // labels of a pod on a node
	evAssignedPodDelete
	// evVolumeChange: a PersistentVolume, PersistentVolumeClaim or
	// StorageClass was added or changed.
	evVolumeChange
)

// helps is the set of filters an event may now satisfy, as upstream's
// plugins register their events.
func (e clusterEvent) helps() pluginSet {
	switch e {
	case evNodeAdd:
		return allPlugins
	case evNodeAllocatable:
		return plNodeResourcesFit
	case evNodeLabel:
		return plNodeAffinity | plPodTopologySpread | plInterPodAffinity | plVolumeBinding
	case evNodeTaint:
		return plTaintToleration | plNodeUnschedulable | plPodTopologySpread
	case evAssignedPodAdd, evAssignedPodUpdate:
		return plInterPodAffinity | plPodTopologySpread
	case evAssignedPodDelete:
		return plNodeResourcesFit | plNodePorts | plInterPodAffinity | plPodTopologySpread
	case evVolumeChange:
		return plVolumeBinding
	}
	return allPlugins
}

// Where a queued pod is.
const (
	inActive = iota
	inBackoff
	inUnschedulable
	inFlight
)

// queuedPod is a pod waiting for (or in) a scheduling attempt.
type queuedPod struct {
	pod  *corev1.Pod
	info *podInfo
	// timestamp is when it last entered the queue or failed.
	timestamp time.Time
	// attempts counts scheduling attempts (pops).
	attempts int
	// rejectedBy are the filters that rejected it last; empty after an
	// error or when there were no nodes, so that any event moves it.
	rejectedBy pluginSet
	seq        uint64
	where      int
	index      int
	// updated is set when the pod changed while it was being scheduled.
	updated bool
}

type podHeap struct {
	items []*queuedPod
	less  func(a, b *queuedPod) bool
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *podHeap) Push(x any) {
	qp := x.(*queuedPod)
	qp.index = len(h.items)
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	qp := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	qp.index = -1
	return qp
}

// activeLess orders by priority (higher first), then creation time, then
// arrival in the queue.
func activeLess(a, b *queuedPod) bool {
	if a.info.priority != b.info.priority {
		return a.info.priority > b.info.priority
	}
	ta, tb := a.pod.CreationTimestamp.Time, b.pod.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.seq < b.seq
}

// schedulingQueue holds the pods to schedule: active (ready now), backoff
// (failed recently, waiting out a doubling delay) and unschedulable (wait
// for a cluster event that may help, or at most maxUnschedulable). Safe
// for concurrent use.
type schedulingQueue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	clock clock.Clock

	initialBackoff, maxBackoff, maxUnschedulable time.Duration

	active        podHeap
	backoff       podHeap
	unschedulable map[types.UID]*queuedPod
	// pods are every pod the queue holds, including the one in flight.
	pods map[types.UID]*queuedPod
	seq  uint64
	// eventsInFlight are the filters that events received since the last
	// pop may satisfy; a pod they could help is not parked as unschedulable.
	eventsInFlight pluginSet
	closed         bool
}

func newSchedulingQueue(clk clock.Clock, initialBackoff, maxBackoff, maxUnschedulable time.Duration) *schedulingQueue {
	q := &schedulingQueue{
		clock: clk, initialBackoff: initialBackoff, maxBackoff: maxBackoff, maxUnschedulable: maxUnschedulable,
		active:        podHeap{less: activeLess},
		unschedulable: map[types.UID]*queuedPod{},
		pods:          map[types.UID]*queuedPod{},
	}
	q.backoff = podHeap{less: func(a, b *queuedPod) bool { return q.backoffExpiry(a).Before(q.backoffExpiry(b)) }}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// backoffDuration doubles from initialBackoff per attempt, up to maxBackoff.
func (q *schedulingQueue) backoffDuration(attempts int) time.Duration {
	d := q.initialBackoff
	for i := 1; i < attempts; i++ {
		if d >= q.maxBackoff/2 {
			return q.maxBackoff
		}
		d *= 2
	}
	return min(d, q.maxBackoff)
}

func (q *schedulingQueue) backoffExpiry(qp *queuedPod) time.Time {
	return qp.timestamp.Add(q.backoffDuration(qp.attempts))
}

// add queues a new pending pod, or updates one already queued.
func (q *schedulingQueue) add(pod *corev1.Pod) {
	info := newPodInfo(pod)
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.pods[pod.UID]; ok {
		q.updateLocked(qp, info)
		return
	}
	q.seq++
	qp := &queuedPod{pod: pod, info: info, timestamp: q.clock.Now(), seq: q.seq, index: -1}
	q.pods[pod.UID] = qp
	q.pushActiveLocked(qp)
}

func (q *schedulingQueue) pushActiveLocked(qp *queuedPod) {
	qp.where = inActive
	heap.Push(&q.active, qp)
	q.cond.Signal()
}

// updateLocked records a newer version of a queued pod. A change to its
// spec or labels may make it schedulable, so an unschedulable pod moves.
func (q *schedulingQueue) updateLocked(qp *queuedPod, info *podInfo) {
	old, pod := qp.pod, info.pod
	qp.pod, qp.info = pod, info
	changed := !equality.Semantic.DeepEqual(old.Spec, pod.Spec) || !equality.Semantic.DeepEqual(old.Labels, pod.Labels)
	switch qp.where {
	case inActive:
		heap.Fix(&q.active, qp.index)
	case inBackoff:
		if changed {
			heap.Remove(&q.backoff, qp.index)
			q.pushActiveLocked(qp)
		}
	case inUnschedulable:
		if changed {
			delete(q.unschedulable, pod.UID)
			q.moveLocked(qp)
		}
	case inFlight:
		qp.updated = qp.updated || changed
	}
}

// update is add for a pod the queue may already hold.
func (q *schedulingQueue) update(pod *corev1.Pod) { q.add(pod) }

// delete drops the pod wherever it is.
func (q *schedulingQueue) delete(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp, ok := q.pods[uid]
	if !ok {
		return
	}
	delete(q.pods, uid)
	switch qp.where {
	case inActive:
		heap.Remove(&q.active, qp.index)
	case inBackoff:
		heap.Remove(&q.backoff, qp.index)
	case inUnschedulable:
		delete(q.unschedulable, uid)
	}
}

// has reports whether the queue holds the pod (waiting or in flight).
func (q *schedulingQueue) has(uid types.UID) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.pods[uid]
	return ok
}

// close wakes pop for good.
func (q *schedulingQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// pop blocks until a pod is active and returns it (now in flight), or nil
// once the queue is closed.
func (q *schedulingQueue) pop() *queuedPod {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	qp := heap.Pop(&q.active).(*queuedPod)
	qp.where = inFlight
	qp.attempts++
	qp.updated = false
	q.eventsInFlight = 0
	return qp
}

// done forgets a pod that left the queue for good (assumed on a node).
func (q *schedulingQueue) done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.pods[uid]; ok && qp.where == inFlight {
		delete(q.pods, uid)
	}
}

// requeue puts back a pod whose attempt failed, with pod its latest
// version. rejectedBy are the filters that rejected it (empty after an
// error). It goes to backoff when the failure was an error or when an
// event that may help arrived meanwhile, else to the unschedulable pods.
// A pod deleted meanwhile, or one the queue holds again, is left alone.
func (q *schedulingQueue) requeue(qp *queuedPod, pod *corev1.Pod, rejectedBy pluginSet, isError bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cur, ok := q.pods[pod.UID]
	switch {
	case !ok && isError:
		// A failed binding: the pod left the queue when it was assumed.
		q.pods[pod.UID] = qp
	case !ok || cur != qp || cur.where != inFlight:
		// Deleted meanwhile, or queued again by an event.
		return
	}
	if qp.pod != pod {
		qp.pod = pod
		qp.info = newPodInfo(pod)
	}
	qp.timestamp = q.clock.Now()
	qp.rejectedBy = rejectedBy
	if isError || qp.updated || q.eventsInFlight&q.interest(rejectedBy) != 0 {
		q.moveLocked(qp)
		return
	}
	qp.where = inUnschedulable
	q.unschedulable[pod.UID] = qp
}

// interest is the set of plugins whose events may help a pod rejected by
// rejectedBy; a pod rejected by nothing in particular waits for anything.
func (q *schedulingQueue) interest(rejectedBy pluginSet) pluginSet {
	if rejectedBy == 0 {
		return allPlugins
	}
	return rejectedBy
}

// moveLocked sends a pod to backoff, or to active once its backoff is over.
func (q *schedulingQueue) moveLocked(qp *queuedPod) {
	if q.backoffExpiry(qp).After(q.clock.Now()) {
		qp.where = inBackoff
		heap.Push(&q.backoff, qp)
		return
	}
	q.pushActiveLocked(qp)
}

// onEvent moves the unschedulable pods that ev may help.
func (q *schedulingQueue) onEvent(ev clusterEvent) {
	helps := ev.helps()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.eventsInFlight |= helps
	for uid, qp := range q.unschedulable {
		if q.interest(qp.rejectedBy)&helps != 0 {
			delete(q.unschedulable, uid)
			q.moveLocked(qp)
		}
	}
}

// flush moves pods whose backoff is over to active, and pods unschedulable
// for longer than maxUnschedulable to backoff or active.
func (q *schedulingQueue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for q.backoff.Len() > 0 {
		qp := q.backoff.items[0]
		if q.backoffExpiry(qp).After(now) {
			break
		}
		heap.Pop(&q.backoff)
		q.pushActiveLocked(qp)
	}
	for uid, qp := range q.unschedulable {
		if now.Sub(qp.timestamp) >= q.maxUnschedulable {
			delete(q.unschedulable, uid)
			q.moveLocked(qp)
		}
	}
}

// run flushes every second until ctx is done, then closes the queue.
func (q *schedulingQueue) run(ctx context.Context, clk clock.WithTicker) {
	t := clk.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			q.close()
			return
		case <-t.C():
			q.flush()
		}
	}
}

// counts returns the number of active, backoff and unschedulable pods.
func (q *schedulingQueue) counts() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable)
}
