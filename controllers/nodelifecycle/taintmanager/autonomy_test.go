package taintmanager

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/nodeautonomy"
)

func autonomous(n *corev1.Node) *corev1.Node {
	n.Annotations = map[string]string{nodeautonomy.Annotation: nodeautonomy.Value}
	return n
}

// TestAutonomousNodeTaints: on a node marked autonomous the not-ready and
// unreachable NoExecute taints evict nothing; other NoExecute taints do.
func TestAutonomousNodeTaints(t *testing.T) {
	operator := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name   string
		node   *corev1.Node
		pod    *corev1.Pod
		evicts bool
	}{
		{"unreachable", autonomous(node("n1", unreachable)), pod("p", "n1"), false},
		{"not-ready", autonomous(node("n1", notReady)), pod("p", "n1"), false},
		{"both", autonomous(node("n1", unreachable, notReady)), pod("p", "n1"), false},
		{"operator's NoExecute taint still evicts", autonomous(node("n1", unreachable, operator)), pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, nil)), true},
		{"same taints, not marked", node("n1", unreachable), pod("p", "n1"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, node("n1"), tc.pod)
			h.setNode(tc.node)
			if !tc.evicts {
				h.clock.Step(24 * time.Hour)
				if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
					t.Fatalf("deleted = %v, want none", got)
				}
				return
			}
			if got := h.deleted(1, 5*time.Second); len(got) != 1 {
				t.Fatalf("deleted = %v, want [p]", got)
			}
		})
	}
}

// TestAutonomyMarkerToggled: marking a tainted node autonomous cancels its
// pods' scheduled deletions; unmarking it schedules them again.
func TestAutonomyMarkerToggled(t *testing.T) {
	h := newHarness(t, node("n1"), pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](30))))
	h.setNode(node("n1", unreachable))
	if n := h.m.evictions.len(); n != 1 {
		t.Fatalf("%d deletions scheduled, want 1", n)
	}
	h.clock.Step(10 * time.Second)
	h.setNode(autonomous(node("n1", unreachable)))
	if n := h.m.evictions.len(); n != 0 {
		t.Fatalf("%d deletions still scheduled on the autonomous node", n)
	}
	h.clock.Step(time.Hour)
	if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("deleted = %v on the autonomous node", got)
	}
	h.setNode(node("n1", unreachable))
	h.clock.Step(29 * time.Second)
	if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("deleted %v before the toleration ran out again", got)
	}
	h.clock.Step(time.Second)
	if got := h.deleted(1, 5*time.Second); len(got) != 1 {
		t.Fatalf("deleted = %v after unmarking, want [p]", got)
	}
}

// TestNodeUpdateOnMarkerChange: a node update that only flips the marker
// is queued (the evicting taints changed), one that changes nothing is not.
func TestNodeUpdateOnMarkerChange(t *testing.T) {
	h := newHarness(t, node("n1"))
	plain := node("n1", unreachable)
	h.m.nodeUpdated(plain, node("n1", unreachable))
	if n := h.m.nodeQueue.Len(); n != 0 {
		t.Fatalf("queue length %d after a no-op update", n)
	}
	h.m.nodeUpdated(plain, autonomous(node("n1", unreachable)))
	if n := h.m.nodeQueue.Len(); n != 1 {
		t.Fatalf("queue length %d after marking the node, want 1", n)
	}
}
