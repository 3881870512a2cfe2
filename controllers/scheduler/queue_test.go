package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestQueue() (*schedulingQueue, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return newSchedulingQueue(clk, time.Second, 10*time.Second, 60*time.Second), clk
}

// popNow pops without blocking (the test fails if nothing is active).
func popNow(t *testing.T, q *schedulingQueue) *queuedPod {
	t.Helper()
	if a, _, _ := q.counts(); a == 0 {
		t.Fatal("no active pod to pop")
	}
	return q.pop()
}

func created(sec int) podOpt {
	return func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC))
	}
}

func TestQueueOrder(t *testing.T) {
	q, _ := newTestQueue()
	q.add(makePod("late", created(3)))
	q.add(makePod("early", created(1)))
	q.add(makePod("important", created(5), priority(1000)))
	q.add(makePod("same-second-first", created(2)))
	q.add(makePod("same-second-second", created(2)))
	var got []string
	for i := 0; i < 5; i++ {
		got = append(got, popNow(t, q).pod.Name)
	}
	want := []string{"important", "early", "same-second-first", "same-second-second", "late"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestBackoffDuration(t *testing.T) {
	q, _ := newTestQueue()
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 12: 10 * time.Second} {
		if got := q.backoffDuration(attempts); got != want {
			t.Errorf("attempt %d: backoff %v, want %v", attempts, got, want)
		}
	}
}

func TestQueueErrorBacksOff(t *testing.T) {
	q, clk := newTestQueue()
	pod := makePod("p")
	q.add(pod)
	qp := popNow(t, q)
	q.requeue(qp, pod, 0, true)
	if a, b, u := q.counts(); a != 0 || b != 1 || u != 0 {
		t.Fatalf("after an error: active %d backoff %d unschedulable %d, want the pod in backoff", a, b, u)
	}
	clk.Step(999 * time.Millisecond)
	q.flush()
	if a, _, _ := q.counts(); a != 0 {
		t.Fatal("left backoff before 1s")
	}
	clk.Step(time.Millisecond)
	q.flush()
	qp = popNow(t, q)
	// Second failure: 2s.
	q.requeue(qp, pod, 0, true)
	clk.Step(1999 * time.Millisecond)
	q.flush()
	if a, b, _ := q.counts(); a != 0 || b != 1 {
		t.Fatal("second backoff shorter than 2s")
	}
	clk.Step(time.Millisecond)
	q.flush()
	if a, _, _ := q.counts(); a != 1 {
		t.Fatal("not active after 2s")
	}
}

func TestQueueUnschedulableMoves(t *testing.T) {
	cases := []struct {
		name     string
		rejected pluginSet
		event    clusterEvent
		moves    bool
	}{
		{"resources: a pod deleted", plNodeResourcesFit, evAssignedPodDelete, true},
		{"resources: a node added", plNodeResourcesFit, evNodeAdd, true},
		{"resources: allocatable grew", plNodeResourcesFit, evNodeAllocatable, true},
		{"resources: a pod added", plNodeResourcesFit, evAssignedPodAdd, false},
		{"resources: node labels", plNodeResourcesFit, evNodeLabel, false},
		{"taints: taint change", plTaintToleration, evNodeTaint, true},
		{"taints: a pod deleted", plTaintToleration, evAssignedPodDelete, false},
		{"unschedulable node: taint change", plNodeUnschedulable, evNodeTaint, true},
		{"node affinity: labels", plNodeAffinity, evNodeLabel, true},
		{"node affinity: a pod deleted", plNodeAffinity, evAssignedPodDelete, false},
		{"ports: a pod deleted", plNodePorts, evAssignedPodDelete, true},
		{"inter-pod affinity: a pod added", plInterPodAffinity, evAssignedPodAdd, true},
		{"inter-pod affinity: pod labels", plInterPodAffinity, evAssignedPodUpdate, true},
		{"spread: a pod deleted", plPodTopologySpread, evAssignedPodDelete, true},
		{"several plugins: any helps", plTaintToleration | plNodeResourcesFit, evAssignedPodDelete, true},
		{"no plugin (no nodes): anything", 0, evNodeAdd, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, clk := newTestQueue()
			pod := makePod("p")
			q.add(pod)
			qp := popNow(t, q)
			q.requeue(qp, pod, tc.rejected, false)
			if _, _, u := q.counts(); u != 1 {
				t.Fatal("a rejected pod is not parked as unschedulable")
			}
			clk.Step(5 * time.Second) // past the first backoff
			q.onEvent(tc.event)
			a, b, u := q.counts()
			if tc.moves != (a == 1) || b != 0 || u != btoi(!tc.moves) {
				t.Fatalf("active %d backoff %d unschedulable %d, want moved=%v", a, b, u, tc.moves)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestQueueMoveDuringBackoffGoesToBackoff(t *testing.T) {
	q, clk := newTestQueue()
	pod := makePod("p")
	q.add(pod)
	q.requeue(popNow(t, q), pod, plNodeResourcesFit, false)
	q.onEvent(evAssignedPodDelete)
	if a, b, _ := q.counts(); a != 0 || b != 1 {
		t.Fatalf("active %d backoff %d: a pod still backing off must wait in backoff", a, b)
	}
	clk.Step(time.Second)
	q.flush()
	if a, _, _ := q.counts(); a != 1 {
		t.Fatal("not active once the backoff is over")
	}
}

func TestQueueEventDuringAttempt(t *testing.T) {
	q, clk := newTestQueue()
	pod := makePod("p")
	q.add(pod)
	qp := popNow(t, q)
	// A pod deleted while the attempt runs frees resources: the pod must
	// not wait for another event.
	q.onEvent(evAssignedPodDelete)
	q.requeue(qp, pod, plNodeResourcesFit, false)
	if _, b, u := q.counts(); b != 1 || u != 0 {
		t.Fatalf("backoff %d unschedulable %d, want backoff", b, u)
	}
	clk.Step(2 * time.Second)
	q.flush()
	qp = popNow(t, q)
	// An unrelated event does not count.
	q.onEvent(evNodeLabel)
	q.requeue(qp, pod, plNodeResourcesFit, false)
	if _, _, u := q.counts(); u != 1 {
		t.Fatal("an unrelated event kept the pod out of the unschedulable pods")
	}
}

func TestQueueFlushesLongUnschedulable(t *testing.T) {
	q, clk := newTestQueue()
	pod := makePod("p")
	q.add(pod)
	q.requeue(popNow(t, q), pod, plNodeAffinity, false)
	clk.Step(59 * time.Second)
	q.flush()
	if _, _, u := q.counts(); u != 1 {
		t.Fatal("flushed before 60s")
	}
	clk.Step(time.Second)
	q.flush()
	if a, _, u := q.counts(); a != 1 || u != 0 {
		t.Fatalf("active %d unschedulable %d after 60s, want active", a, u)
	}
}

func TestQueueUpdates(t *testing.T) {
	q, clk := newTestQueue()
	pod := makePod("p")
	q.add(pod)
	q.requeue(popNow(t, q), pod, plTaintToleration, false)
	clk.Step(5 * time.Second)

	// A status-only change (our own PodScheduled condition) is not a reason
	// to retry.
	withStatus := pod.DeepCopy()
	withStatus.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
	q.update(withStatus)
	if _, _, u := q.counts(); u != 1 {
		t.Fatal("a status update moved an unschedulable pod")
	}
	// A new toleration is.
	tolerant := withStatus.DeepCopy()
	tolerant.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	q.update(tolerant)
	if a, _, u := q.counts(); a != 1 || u != 0 {
		t.Fatalf("active %d unschedulable %d after a spec change, want active", a, u)
	}
	qp := popNow(t, q)
	if len(qp.pod.Spec.Tolerations) != 1 || qp.info.pod != qp.pod {
		t.Fatal("the queue did not keep the latest version")
	}
	// Changed while in flight: goes back for another try, not to the
	// unschedulable pods.
	q.update(pod)
	q.requeue(qp, tolerant, plTaintToleration, false)
	if _, b, u := q.counts(); b != 1 || u != 0 {
		t.Fatalf("backoff %d unschedulable %d, want backoff", b, u)
	}
}

func TestQueueDeleteAndDone(t *testing.T) {
	q, _ := newTestQueue()
	a, b := makePod("a"), makePod("b")
	q.add(a)
	q.add(b)
	q.delete(a.UID)
	qp := popNow(t, q)
	if qp.pod.Name != "b" {
		t.Fatalf("popped %s after deleting a", qp.pod.Name)
	}
	// Deleted while in flight: a failure does not bring it back.
	q.delete(b.UID)
	q.requeue(qp, b, plNodeResourcesFit, false)
	if x, y, z := q.counts(); x+y+z != 0 || q.has(b.UID) {
		t.Fatal("a pod deleted during its attempt was requeued")
	}
	// Assumed pods leave the queue; a failed binding brings them back.
	q.add(a)
	qp = popNow(t, q)
	q.done(a.UID)
	if q.has(a.UID) {
		t.Fatal("done pod still queued")
	}
	q.requeue(qp, a, 0, true)
	if _, bo, _ := q.counts(); bo != 1 {
		t.Fatal("a failed binding did not requeue the pod")
	}
}

func TestQueuePopBlocksUntilAddOrClose(t *testing.T) {
	q, _ := newTestQueue()
	got := make(chan *queuedPod)
	go func() { got <- q.pop() }()
	q.add(makePod("p"))
	if qp := <-got; qp == nil || qp.pod.Name != "p" {
		t.Fatalf("pop returned %v", qp)
	}
	go func() { got <- q.pop() }()
	q.close()
	if qp := <-got; qp != nil {
		t.Fatal("pop returned a pod after close")
	}
}
