package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCacheAssumeConfirmForget(t *testing.T) {
	c := newSchedCache()
	c.addNode(makeNode("n1", "4", "4Gi"))
	c.addNode(makeNode("n2", "4", "4Gi"))
	snap := newSnapshot()
	c.update(snap)
	if len(snap.list) != 2 {
		t.Fatalf("snapshot has %d nodes", len(snap.list))
	}

	pod := makePod("p", requests("cpu", "1"))
	ap := pod.DeepCopy()
	ap.Spec.NodeName = "n1"
	if err := c.assume(newPodInfo(ap)); err != nil {
		t.Fatal(err)
	}
	if err := c.assume(newPodInfo(ap)); err == nil {
		t.Fatal("assumed the same pod twice")
	}
	old := snap.byName["n2"]
	c.update(snap)
	if got := snap.byName["n1"].requested.milliCPU; got != 1000 {
		t.Fatalf("assumed pod not counted: %dm", got)
	}
	if snap.byName["n2"] != old {
		t.Fatal("an unchanged node was copied again")
	}
	if !c.isAssumed(pod.UID) {
		t.Fatal("not assumed")
	}

	// The informer shows the binding: confirmed, counted once.
	c.addPod(ap)
	c.update(snap)
	if c.isAssumed(pod.UID) || len(snap.byName["n1"].pods) != 1 {
		t.Fatalf("confirm: assumed %v, pods %d", c.isAssumed(pod.UID), len(snap.byName["n1"].pods))
	}
	// A confirmed pod is not forgotten by a late binding failure.
	c.forget(pod.UID)
	if !c.hasPod(pod.UID) {
		t.Fatal("forget removed a confirmed pod")
	}

	// Forget releases an assumed pod.
	q := makePod("q", requests("cpu", "2"))
	q.Spec.NodeName = "n2"
	if err := c.assume(newPodInfo(q)); err != nil {
		t.Fatal(err)
	}
	c.forget(q.UID)
	c.update(snap)
	if got := snap.byName["n2"].requested.milliCPU; got != 0 || c.hasPod(q.UID) {
		t.Fatalf("forgotten pod still counted: %dm", got)
	}

	// A pod that lands elsewhere than assumed moves.
	moved := ap.DeepCopy()
	moved.Spec.NodeName = "n2"
	c.addPod(moved)
	c.update(snap)
	if len(snap.byName["n1"].pods) != 0 || len(snap.byName["n2"].pods) != 1 {
		t.Fatal("pod not moved to the node it is bound to")
	}
	c.removePod(moved)
	c.update(snap)
	if len(snap.byName["n2"].pods) != 0 || c.hasPod(pod.UID) {
		t.Fatal("removed pod still there")
	}
}

func TestCacheNodesComeAndGo(t *testing.T) {
	c := newSchedCache()
	snap := newSnapshot()
	// A pod bound to a node the cache has not seen yet.
	p := makePod("p", onNode("n1"), requests("cpu", "1"))
	c.addPod(p)
	c.update(snap)
	if len(snap.list) != 0 {
		t.Fatal("a node without its Node object is schedulable")
	}
	c.addNode(makeNode("n1", "4", "4Gi"))
	c.addNode(makeNode("n0", "4", "4Gi"))
	c.update(snap)
	if len(snap.list) != 2 || snap.list[0].name != "n0" || snap.byName["n1"].requested.milliCPU != 1000 {
		t.Fatalf("nodes %d (first %s)", len(snap.list), snap.list[0].name)
	}
	// Allocatable changes reach the snapshot.
	bigger := makeNode("n1", "8", "4Gi")
	c.addNode(bigger)
	c.update(snap)
	if snap.byName["n1"].allocatable.milliCPU != 8000 || snap.list[1].allocatable.milliCPU != 8000 {
		t.Fatal("allocatable update missed")
	}
	c.removeNode("n1")
	c.update(snap)
	if len(snap.list) != 1 || snap.byName["n1"] != nil {
		t.Fatal("deleted node still in the snapshot")
	}
	c.removeNode("n0")
	c.removePod(p)
	c.update(snap)
	if len(snap.list) != 0 || len(c.nodes) != 0 {
		t.Fatalf("cache kept %d empty nodes", len(c.nodes))
	}
}

func TestNodeInfoAffinityIndexes(t *testing.T) {
	n := newNodeInfoWith(makeNode("n", "1", "1Gi"),
		makePod("plain"),
		makePod("anti", affinity(podAntiAffinity(term(corev1.LabelHostname, "a", "b")))),
		makePod("pref", affinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term("zone", "a", "b")}}}})),
		makePod("port", hostPort(80, corev1.ProtocolTCP, "")))
	if len(n.withAffinity) != 2 || len(n.withReqAnti) != 1 || len(n.ports) != 1 {
		t.Fatalf("withAffinity %d withReqAnti %d ports %d", len(n.withAffinity), len(n.withReqAnti), len(n.ports))
	}
	c := n.clone()
	c.removePod("uid-anti")
	c.removePod("uid-port")
	if len(c.withAffinity) != 1 || len(c.withReqAnti) != 0 || len(c.ports) != 0 || len(c.pods) != 2 {
		t.Fatal("removal did not update the indexes")
	}
	if len(n.pods) != 4 || len(n.withReqAnti) != 1 || len(n.ports) != 1 {
		t.Fatal("removing from a clone changed the original")
	}
}
