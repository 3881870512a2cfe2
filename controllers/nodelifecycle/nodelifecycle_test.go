package nodelifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	d := DefaultConfig()
	if d.NodeMonitorPeriod != 5*time.Second || d.NodeMonitorGracePeriod != 50*time.Second || d.NodeStartupGracePeriod != 60*time.Second ||
		d.NodeEvictionRate != 0.1 || d.SecondaryNodeEvictionRate != 0.01 || d.LargeClusterSizeThreshold != 50 || d.UnhealthyZoneThreshold != 0.55 {
		t.Errorf("defaults = %+v", d)
	}
	tests := []struct {
		name   string
		change func(*Config)
		flag   string
	}{
		{"period", func(c *Config) { c.NodeMonitorPeriod = 0 }, "--node-monitor-period"},
		{"grace", func(c *Config) { c.NodeMonitorGracePeriod = -time.Second }, "--node-monitor-grace-period"},
		{"grace not above period", func(c *Config) { c.NodeMonitorGracePeriod = 5 * time.Second }, "--node-monitor-grace-period"},
		{"startup", func(c *Config) { c.NodeStartupGracePeriod = 0 }, "--node-startup-grace-period"},
		{"rate", func(c *Config) { c.NodeEvictionRate = -1 }, "--node-eviction-rate"},
		{"secondary rate", func(c *Config) { c.SecondaryNodeEvictionRate = -0.5 }, "--secondary-node-eviction-rate"},
		{"large cluster", func(c *Config) { c.LargeClusterSizeThreshold = -1 }, "--large-cluster-size-threshold"},
		{"zone threshold zero", func(c *Config) { c.UnhealthyZoneThreshold = 0 }, "--unhealthy-zone-threshold"},
		{"zone threshold above one", func(c *Config) { c.UnhealthyZoneThreshold = 1.5 }, "--unhealthy-zone-threshold"},
	}
	for _, tc := range tests {
		c := DefaultConfig()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag+":") {
			t.Errorf("%s: Validate = %v, want an error naming %s", tc.name, err, tc.flag)
		}
	}
	zero := DefaultConfig()
	zero.NodeEvictionRate, zero.SecondaryNodeEvictionRate = 0, 0
	if err := zero.Validate(); err != nil {
		t.Errorf("zero rates: %v", err)
	}
}

func TestComputeZoneState(t *testing.T) {
	cond := func(s corev1.ConditionStatus) *corev1.NodeCondition {
		return &corev1.NodeCondition{Type: corev1.NodeReady, Status: s}
	}
	T, F, U := cond(corev1.ConditionTrue), cond(corev1.ConditionFalse), cond(corev1.ConditionUnknown)
	tests := []struct {
		name      string
		in        []*corev1.NodeCondition
		unhealthy int
		want      ZoneState
	}{
		{"all ready", []*corev1.NodeCondition{T, T}, 0, StateNormal},
		{"one of two down", []*corev1.NodeCondition{T, U}, 1, StateNormal},
		{"all down", []*corev1.NodeCondition{U, F}, 2, StateFullDisruption},
		{"single node down", []*corev1.NodeCondition{F}, 1, StateFullDisruption},
		{"nil counts as down", []*corev1.NodeCondition{nil, nil}, 2, StateFullDisruption},
		{"two of three down: at most two is never partial", []*corev1.NodeCondition{T, U, U}, 2, StateNormal},
		{"three of four down", []*corev1.NodeCondition{T, U, U, F}, 3, StatePartialDisruption},
		{"three of five down (0.6)", []*corev1.NodeCondition{T, T, U, U, U}, 3, StatePartialDisruption},
		{"three of six down (0.5)", []*corev1.NodeCondition{T, T, T, U, U, U}, 3, StateNormal},
		{"empty", nil, 0, StateNormal},
	}
	for _, tc := range tests {
		n, s := ComputeZoneState(tc.in, 0.55)
		if n != tc.unhealthy || s != tc.want {
			t.Errorf("%s: got (%d, %s), want (%d, %s)", tc.name, n, s, tc.unhealthy, tc.want)
		}
	}
}

func TestTainterRate(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := newTainter(clk, 1)
	for _, n := range []string{"a", "b", "c"} {
		if !q.add(n, "") {
			t.Fatalf("add %s refused", n)
		}
	}
	if q.add("a", "") {
		t.Fatal("a queued twice")
	}
	var done []string
	take := func() int {
		before := len(done)
		q.try(func(name, _ string) (bool, time.Duration) { done = append(done, name); return true, 0 })
		return len(done) - before
	}
	if n := take(); n != 1 {
		t.Fatalf("first try took %d, want the one burst token", n)
	}
	clk.Step(500 * time.Millisecond)
	if n := take(); n != 0 {
		t.Fatalf("took %d after half a token", n)
	}
	clk.Step(500 * time.Millisecond)
	if n := take(); n != 1 {
		t.Fatalf("took %d after a second", n)
	}
	// Rate 0 stops everything.
	q.setRate(0)
	clk.Step(time.Hour)
	if n := take(); n != 0 {
		t.Fatalf("took %d at rate 0", n)
	}
	// Leaving rate 0 starts with an empty bucket.
	q.setRate(2)
	if n := take(); n != 0 {
		t.Fatalf("took %d right after rate 0", n)
	}
	clk.Step(500 * time.Millisecond)
	if n := take(); n != 1 {
		t.Fatalf("took %d half a second into rate 2", n)
	}
	if !slices.Equal(done, []string{"a", "b", "c"}) {
		t.Errorf("order = %v", done)
	}
	// A handled node stays known until removed.
	if q.add("a", "") {
		t.Error("handled node queued again before remove")
	}
	if !q.remove("a") || !q.add("a", "") {
		t.Error("remove then add failed")
	}
}

func TestTainterRetry(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := newTainter(clk, 100)
	q.add("a", "")
	calls := 0
	fn := func(string, string) (bool, time.Duration) { calls++; return calls > 1, 50 * time.Millisecond }
	q.try(fn)
	if calls != 1 || len(q.queued()) != 1 {
		t.Fatalf("after a failure: calls %d, queued %v", calls, q.queued())
	}
	q.try(fn)
	if calls != 1 {
		t.Fatal("retried before its wait")
	}
	clk.Step(60 * time.Millisecond)
	q.try(fn)
	if calls != 2 || len(q.queued()) != 0 {
		t.Fatalf("after the wait: calls %d, queued %v", calls, q.queued())
	}
}

func TestTainterSetRateKeepsToken(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	full := newTainter(clk, 1)
	full.setRate(0.01)
	full.add("a", "")
	n := 0
	full.try(func(string, string) (bool, time.Duration) { n++; return true, 0 })
	if n != 1 {
		t.Errorf("a full bucket lost its token on a rate change")
	}
	empty := newTainter(clk, 1)
	empty.add("a", "")
	empty.try(func(string, string) (bool, time.Duration) { return true, 0 })
	empty.setRate(0.5)
	empty.add("b", "")
	n = 0
	empty.try(func(string, string) (bool, time.Duration) { n++; return true, 0 })
	if n != 0 {
		t.Errorf("an empty bucket got a token on a rate change")
	}
}

func TestHeartbeatGrace(t *testing.T) {
	tests := []struct {
		name string
		// beat plays the node's kubelet every 10s; nil for a dead node.
		beat func(h *harness)
		// unknownAfter is when the node goes Unknown; 0 never (within 3m).
		unknownAfter time.Duration
	}{
		{"no heartbeat", nil, 51 * time.Second},
		{"lease renewals", func(h *harness) { h.renew("n1") }, 0},
		{"status heartbeats", func(h *harness) { h.post("n1", corev1.ConditionTrue) }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0), nodeLease("n1", t0), readyPod("p", "n1"))
			h.pass()
			var wentUnknown time.Duration
			for elapsed := time.Duration(0); elapsed < 3*time.Minute; {
				h.clock.Step(time.Second)
				elapsed += time.Second
				if tc.beat != nil && elapsed%(10*time.Second) == 0 {
					tc.beat(h)
				}
				if elapsed%(time.Second) == 0 {
					h.pass()
				}
				if wentUnknown == 0 && readyStatus(h.node("n1")) == corev1.ConditionUnknown {
					wentUnknown = elapsed
				}
			}
			if wentUnknown != tc.unknownAfter {
				t.Fatalf("went Unknown after %s, want %s", wentUnknown, tc.unknownAfter)
			}
			if tc.unknownAfter == 0 {
				if s := h.pod("p").Status.Conditions[0].Status; s != corev1.ConditionTrue {
					t.Errorf("pod Ready = %s on a healthy node", s)
				}
				return
			}
			n := h.node("n1")
			for _, c := range n.Status.Conditions {
				switch c.Type {
				case corev1.NodeNetworkUnavailable:
					if c.Status != corev1.ConditionFalse || c.Reason != "Kubelet" {
						t.Errorf("NetworkUnavailable changed: %+v", c)
					}
				default:
					if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
						t.Errorf("%s = %+v", c.Type, c)
					}
					if !c.LastTransitionTime.Time.Equal(t0.Add(51 * time.Second)) {
						t.Errorf("%s transition at %s", c.Type, c.LastTransitionTime)
					}
					if !c.LastHeartbeatTime.Time.Equal(t0) {
						t.Errorf("%s heartbeat rewritten to %s", c.Type, c.LastHeartbeatTime)
					}
				}
			}
			pr := h.pod("p").Status.Conditions[0]
			if pr.Type != corev1.PodReady || pr.Status != corev1.ConditionFalse || !pr.LastTransitionTime.Time.Equal(t0.Add(51*time.Second)) {
				t.Errorf("pod Ready = %+v, want False since the node went Unknown", pr)
			}
			ev := h.events()
			for _, want := range []string{
				"Normal RegisteredNode Node n1 event: Registered Node n1 in Controller",
				"Normal NodeNotReady Node n1 status is now: NodeNotReady",
				"Warning NodeNotReady Node is not ready",
			} {
				if !hasEvent(ev, want) {
					t.Errorf("no event %q in %q", want, ev)
				}
			}
			var statusUpdates int
			for _, a := range h.client.Actions() {
				if a.GetVerb() == "update" && a.GetResource().Resource == "nodes" {
					if a.GetSubresource() != "status" {
						t.Errorf("node update outside the status subresource: %v", a)
					}
					statusUpdates++
				}
			}
			if statusUpdates != 1 {
				t.Errorf("%d node status updates, want 1 (later passes change nothing)", statusUpdates)
			}
		})
	}
}

func TestNeverReportedNode(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)}}
	h := newHarness(t, DefaultConfig(), n)
	h.pass()
	h.clock.Step(59 * time.Second)
	h.pass()
	if len(h.node("n1").Status.Conditions) != 0 {
		t.Fatal("conditions set within the startup grace period")
	}
	h.clock.Step(2 * time.Second)
	h.pass()
	got := h.node("n1").Status.Conditions
	if len(got) != 4 {
		t.Fatalf("conditions = %+v, want Ready and the three pressures", got)
	}
	for _, c := range got {
		if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusNeverUpdated" || c.Message != "Kubelet never posted node status." || !c.LastHeartbeatTime.Time.Equal(t0) {
			t.Errorf("%s = %+v", c.Type, c)
		}
	}
	if ev := h.events(); hasEvent(ev, "Normal NodeNotReady Node n1 status is now: NodeNotReady") {
		t.Errorf("NodeNotReady event for a node that was never Ready: %q", ev)
	}
}

// TestLeaseCacheStale: a lease renewal the cache has not seen yet stops the
// node from going Unknown.
func TestLeaseCacheStale(t *testing.T) {
	l := nodeLease("n1", t0)
	l.ResourceVersion = "1"
	h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0), l)
	h.pass()
	h.clock.Step(51 * time.Second)
	renewed := nodeLease("n1", t0.Add(50*time.Second))
	renewed.ResourceVersion = "2"
	if _, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(h.ctx, renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The lease cache still holds version 1.
	h.refreshNodesAndPods()
	if err := h.c.monitorNodeHealth(h.ctx); err != nil {
		t.Fatal(err)
	}
	if s := readyStatus(h.node("n1")); s != corev1.ConditionTrue {
		t.Fatalf("Ready = %s although the server's lease was renewed", s)
	}
	h.pass()
	if s := readyStatus(h.node("n1")); s != corev1.ConditionTrue {
		t.Fatalf("Ready = %s after the cache caught up", s)
	}
}

func TestNodeStatusConflictRetried(t *testing.T) {
	h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0))
	h.pass()
	failed := false
	h.client.PrependReactor("update", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && !failed {
			failed = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("stale"))
		}
		return false, nil, nil
	})
	h.clock.Step(51 * time.Second)
	h.pass()
	if !failed || readyStatus(h.node("n1")) != corev1.ConditionUnknown {
		t.Fatalf("conflict not retried: failed=%v Ready=%s", failed, readyStatus(h.node("n1")))
	}
}

func TestMarkPodsRetriedNextPass(t *testing.T) {
	h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0), readyPod("p", "n1"))
	h.pass()
	failures := 0
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			failures++
			return true, nil, errors.New("apiserver unavailable")
		}
		return false, nil, nil
	})
	h.clock.Step(51 * time.Second)
	h.pass()
	if s := h.pod("p").Status.Conditions[0].Status; s != corev1.ConditionTrue {
		t.Fatalf("pod Ready = %s despite the failed update", s)
	}
	h.clock.Step(5 * time.Second)
	h.pass()
	if s := h.pod("p").Status.Conditions[0].Status; s != corev1.ConditionFalse {
		t.Fatalf("pod Ready = %s after the retry pass", s)
	}
}

// TestPodBoundToUnhealthyNode: a pod bound after the node went Unknown is
// marked not ready by the pod worker.
func TestPodBoundToUnhealthyNode(t *testing.T) {
	h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0), readyNode("n2", "", corev1.ConditionTrue, t0))
	h.pass()
	h.clock.Step(51 * time.Second)
	h.post("n2", corev1.ConditionTrue)
	h.pass()
	for _, p := range []*corev1.Pod{readyPod("late", "n1"), readyPod("fine", "n2")} {
		if _, err := h.client.CoreV1().Pods("ns").Create(h.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.refresh()
	for _, name := range []string{"late", "fine"} {
		if err := h.c.syncPod(h.ctx, keyOf("ns", name)); err != nil {
			t.Fatal(err)
		}
	}
	if s := h.pod("late").Status.Conditions[0].Status; s != corev1.ConditionFalse {
		t.Errorf("pod on the Unknown node: Ready = %s", s)
	}
	if s := h.pod("fine").Status.Conditions[0].Status; s != corev1.ConditionTrue {
		t.Errorf("pod on the healthy node: Ready = %s", s)
	}
}

func TestTaintLifecycle(t *testing.T) {
	h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0), nodeLease("n1", t0),
		readyNode("n2", "", corev1.ConditionTrue, t0), nodeLease("n2", t0))
	// Were n2 down too, every zone would be fully disrupted and nothing tainted.
	h.alive = []string{"n2"}
	h.pass()
	h.clock.Step(51 * time.Second)
	h.pass()
	h.taintPass()
	h.noSchedule()
	n := h.node("n1")
	if got := taintKeys(n); got != "node.kubernetes.io/unreachable:NoExecute,node.kubernetes.io/unreachable:NoSchedule" {
		t.Fatalf("taints after the node went Unknown = %s", got)
	}
	if ta := n.Spec.Taints[0].TimeAdded; ta == nil || !ta.Time.Equal(t0.Add(51*time.Second)) {
		t.Errorf("NoExecute taint added at %v", ta)
	}

	// The kubelet comes back but reports NotReady: the taints swap at once.
	h.clock.Step(5 * time.Second)
	h.renew("n1")
	h.post("n1", corev1.ConditionFalse)
	h.pass()
	h.noSchedule()
	if got := taintKeys(h.node("n1")); got != "node.kubernetes.io/not-ready:NoExecute,node.kubernetes.io/not-ready:NoSchedule" {
		t.Fatalf("taints after NotReady = %s", got)
	}

	// And Unknown again: swapped back at once, without the rate limiter.
	h.c.tainter("").setRate(0)
	h.clock.Step(51 * time.Second)
	h.pass()
	h.noSchedule()
	if got := taintKeys(h.node("n1")); got != "node.kubernetes.io/unreachable:NoExecute,node.kubernetes.io/unreachable:NoSchedule" {
		t.Fatalf("taints after Unknown again = %s", got)
	}

	// Recovery lifts everything.
	h.clock.Step(5 * time.Second)
	h.renew("n1")
	h.post("n1", corev1.ConditionTrue)
	h.pass()
	h.noSchedule()
	if got := taintKeys(h.node("n1")); got != "" {
		t.Fatalf("taints after recovery = %s", got)
	}
	if got := taintKeys(h.node("n2")); got != "" {
		t.Errorf("healthy n2 has taints %s", got)
	}
	if q := h.c.tainter("").queued(); len(q) != 0 {
		t.Errorf("recovered node still queued: %v", q)
	}
}

func TestNoScheduleTaints(t *testing.T) {
	foreign := corev1.Taint{Key: "example.com/dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name          string
		conditions    map[corev1.NodeConditionType]corev1.ConditionStatus
		unschedulable bool
		taints        []corev1.Taint
		want          string
	}{
		{"healthy", nil, false, nil, ""},
		{"not ready", map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}, false, nil, "node.kubernetes.io/not-ready:NoSchedule"},
		{"unknown", map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionUnknown}, false, nil, "node.kubernetes.io/unreachable:NoSchedule"},
		{"pressures", map[corev1.NodeConditionType]corev1.ConditionStatus{
			corev1.NodeMemoryPressure: corev1.ConditionTrue, corev1.NodeDiskPressure: corev1.ConditionTrue, corev1.NodePIDPressure: corev1.ConditionTrue,
		}, false, nil, "node.kubernetes.io/memory-pressure:NoSchedule,node.kubernetes.io/disk-pressure:NoSchedule,node.kubernetes.io/pid-pressure:NoSchedule"},
		{"network unavailable", map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeNetworkUnavailable: corev1.ConditionTrue}, false, nil, "node.kubernetes.io/network-unavailable:NoSchedule"},
		{"unschedulable", nil, true, nil, "node.kubernetes.io/unschedulable:NoSchedule"},
		{"stale taints removed, foreign kept", nil, false, []corev1.Taint{
			foreign,
			{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		}, "example.com/dedicated:NoSchedule"},
		{"NoExecute taints left to the NoExecute logic", nil, false, []corev1.Taint{UnreachableTaint}, "node.kubernetes.io/unreachable:NoExecute"},
		{"existing kept", map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}, false,
			[]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, "node.kubernetes.io/not-ready:NoSchedule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := readyNode("n1", "", corev1.ConditionTrue, t0)
			for i := range n.Status.Conditions {
				if s, ok := tc.conditions[n.Status.Conditions[i].Type]; ok {
					n.Status.Conditions[i].Status = s
				}
			}
			n.Spec.Unschedulable = tc.unschedulable
			n.Spec.Taints = tc.taints
			h := newHarness(t, DefaultConfig(), n)
			h.noSchedule()
			if got := taintKeys(h.node("n1")); got != tc.want {
				t.Errorf("taints = %q, want %q", got, tc.want)
			}
			patches := 0
			for _, a := range h.client.Actions() {
				if a.GetVerb() == "patch" {
					patches++
				}
			}
			h.noSchedule()
			after := 0
			for _, a := range h.client.Actions() {
				if a.GetVerb() == "patch" {
					after++
				}
			}
			if after != patches {
				t.Errorf("a second sync patched again")
			}
		})
	}
}

func TestTaintPatchConflictRetried(t *testing.T) {
	n := readyNode("n1", "", corev1.ConditionFalse, t0)
	n.ResourceVersion = "5"
	h := newHarness(t, DefaultConfig(), n)
	var patches []string
	h.client.PrependReactor("patch", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patches = append(patches, string(a.(clienttesting.PatchAction).GetPatch()))
		if len(patches) == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("stale"))
		}
		return false, nil, nil
	})
	h.noSchedule()
	if len(patches) != 2 || !strings.Contains(patches[0], `"resourceVersion":"5"`) {
		t.Fatalf("patches = %q, want a conflict then a retry, with the resourceVersion", patches)
	}
	if got := taintKeys(h.node("n1")); got != "node.kubernetes.io/not-ready:NoSchedule" {
		t.Errorf("taints = %s", got)
	}
}

// zoned makes size nodes per zone, all Ready with leases at t0.
func zoned(zones map[string]int) []runtime.Object {
	var objs []runtime.Object
	for z, n := range zones {
		for i := 1; i <= n; i++ {
			name := z + string(rune('0'+i))
			objs = append(objs, readyNode(name, z, corev1.ConditionTrue, t0), nodeLease(name, t0))
		}
	}
	return objs
}

// stop lets the named nodes miss their heartbeats while the others renew,
// and runs the pass in which the stopped ones go Unknown together.
func stop(h *harness, all map[string]int, stopped ...string) {
	h.t.Helper()
	h.pass()
	h.clock.Step(30 * time.Second)
	for z, n := range all {
		for i := 1; i <= n; i++ {
			name := z + string(rune('0'+i))
			if !slices.Contains(stopped, name) {
				h.renew(name)
			}
		}
	}
	h.pass()
	h.clock.Step(21 * time.Second)
	h.pass()
	for _, name := range stopped {
		if s := readyStatus(h.node(name)); s != corev1.ConditionUnknown {
			h.t.Fatalf("%s Ready = %s, want Unknown", name, s)
		}
	}
}

func tainted(h *harness, names ...string) []string {
	var out []string
	for _, n := range names {
		if len(noExecute(h.node(n))) > 0 {
			out = append(out, n)
		}
	}
	return out
}

func zoneKey(z string) string { return ":\x00:" + z }

func TestZoneRates(t *testing.T) {
	fast := DefaultConfig()
	fast.NodeEvictionRate = 1
	fast.SecondaryNodeEvictionRate = 0.5

	t.Run("partial disruption of a small zone stops its tainting", func(t *testing.T) {
		zones := map[string]int{"a": 4, "b": 2}
		h := newHarness(t, fast, zoned(zones)...)
		stop(h, zones, "a1", "a2", "a3", "b1")
		if s := h.c.zoneStates[zoneKey("a")]; s != StatePartialDisruption {
			t.Fatalf("zone a = %s", s)
		}
		if s := h.c.zoneStates[zoneKey("b")]; s != StateNormal {
			t.Fatalf("zone b = %s", s)
		}
		for range 20 {
			h.taintPass()
			h.clock.Step(time.Second)
		}
		if got := tainted(h, "a1", "a2", "a3", "a4", "b1", "b2"); !slices.Equal(got, []string{"b1"}) {
			t.Errorf("tainted = %v, want only b1", got)
		}
	})

	t.Run("partial disruption of a large zone taints at the secondary rate", func(t *testing.T) {
		cfg := fast
		cfg.LargeClusterSizeThreshold = 3
		zones := map[string]int{"a": 4, "b": 2}
		h := newHarness(t, cfg, zoned(zones)...)
		stop(h, zones, "a1", "a2", "a3")
		if r := h.c.tainter(zoneKey("a")).rate(); r != 0.5 {
			t.Fatalf("zone a rate = %v", r)
		}
		var counts []int
		for range 5 {
			h.taintPass()
			counts = append(counts, len(tainted(h, "a1", "a2", "a3")))
			h.clock.Step(time.Second)
		}
		if !slices.Equal(counts, []int{1, 1, 2, 2, 3}) {
			t.Errorf("tainted per second = %v, want one every 2s", counts)
		}
	})

	t.Run("a normal zone taints at the primary rate", func(t *testing.T) {
		zones := map[string]int{"a": 6}
		h := newHarness(t, fast, zoned(zones)...)
		stop(h, zones, "a1", "a2")
		var counts []int
		for range 3 {
			h.taintPass()
			counts = append(counts, len(tainted(h, "a1", "a2")))
			h.clock.Step(time.Second)
		}
		if !slices.Equal(counts, []int{1, 2, 2}) {
			t.Errorf("tainted per second = %v, want one a second", counts)
		}
	})

	t.Run("a fully disrupted zone among healthy ones taints at the primary rate", func(t *testing.T) {
		zones := map[string]int{"a": 2, "b": 2}
		h := newHarness(t, fast, zoned(zones)...)
		stop(h, zones, "a1", "a2")
		if s := h.c.zoneStates[zoneKey("a")]; s != StateFullDisruption {
			t.Fatalf("zone a = %s", s)
		}
		if r := h.c.tainter(zoneKey("a")).rate(); r != 1 {
			t.Errorf("zone a rate = %v, want the primary 1", r)
		}
		h.taintPass()
		h.clock.Step(time.Second)
		h.taintPass()
		if got := tainted(h, "a1", "a2"); len(got) != 2 {
			t.Errorf("tainted = %v", got)
		}
	})
}

func TestFullDisruption(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeEvictionRate = 10
	zones := map[string]int{"a": 2, "b": 2, "c": 2}
	h := newHarness(t, cfg, zoned(zones)...)
	// One node down: tainted.
	stop(h, zones, "a1")
	h.taintPass()
	if got := tainted(h, "a1"); len(got) != 1 {
		t.Fatalf("a1 not tainted while the rest is healthy")
	}
	// Every node down: master disruption mode.
	h.clock.Step(51 * time.Second)
	h.pass()
	for z := range zones {
		if s := h.c.zoneStates[zoneKey(z)]; s != StateFullDisruption {
			t.Errorf("zone %s = %s", z, s)
		}
		if r := h.c.tainter(zoneKey(z)).rate(); r != 0 {
			t.Errorf("zone %s rate = %v, want 0", z, r)
		}
	}
	all := []string{"a1", "a2", "b1", "b2", "c1", "c2"}
	for range 5 {
		h.taintPass()
		h.clock.Step(time.Second)
		h.pass()
	}
	if got := tainted(h, all...); len(got) != 0 {
		t.Fatalf("tainted in full disruption: %v", got)
	}
	// One node back: out of the mode, heartbeats timed afresh.
	h.renew("b1")
	h.post("b1", corev1.ConditionTrue)
	h.pass()
	if s := h.c.zoneStates[zoneKey("b")]; s != StateNormal {
		t.Errorf("zone b = %s after b1 recovered", s)
	}
	for _, z := range []string{"a", "b", "c"} {
		if r := h.c.tainter(zoneKey(z)).rate(); r != 10 {
			t.Errorf("zone %s rate = %v after recovery, want 10", z, r)
		}
	}
	if hl := h.c.health.get("a1"); !hl.probe.Equal(h.clock.Now()) {
		t.Errorf("a1 probe = %s, want reset to now", hl.probe)
	}
	// The nodes still Unknown are tainted again from the next pass on,
	// one per zone and token.
	h.clock.Step(time.Second)
	h.pass()
	h.taintPass()
	if got := tainted(h, all...); len(got) != 3 || !slices.Contains(got, "b2") {
		t.Errorf("tainted after recovery = %v, want b2 and one node each of a and c", got)
	}
}

func TestReconcileNodeLabels(t *testing.T) {
	n := readyNode("n1", "", corev1.ConditionTrue, t0)
	n.Labels = map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", "beta.kubernetes.io/arch": "arm64"}
	h := newHarness(t, DefaultConfig(), n)
	if err := h.c.reconcileNodeLabels(h.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got := h.node("n1").Labels
	if got["beta.kubernetes.io/os"] != "linux" || got["beta.kubernetes.io/arch"] != "amd64" {
		t.Errorf("labels = %v", got)
	}
}

func TestNodeDeletedAndRegistered(t *testing.T) {
	h := newHarness(t, DefaultConfig(), readyNode("n1", "", corev1.ConditionTrue, t0))
	h.pass()
	if err := h.client.CoreV1().Nodes().Delete(h.ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.pass()
	if _, ok := h.c.known["n1"]; ok {
		t.Error("deleted node still known")
	}
	if ev := h.events(); !hasEvent(ev, "Normal RemovingNode Node n1 event: Removing Node n1 from Controller") {
		t.Errorf("events = %q", ev)
	}
}

// TestNewNodeLosesStaleNoExecuteTaints: the controller lifts NoExecute
// taints of nodes it sees for the first time, as upstream does on start.
func TestNewNodeLosesStaleNoExecuteTaints(t *testing.T) {
	n := readyNode("n1", "", corev1.ConditionTrue, t0)
	n.Spec.Taints = []corev1.Taint{UnreachableTaint, {Key: "example.com/x", Effect: corev1.TaintEffectNoExecute}}
	h := newHarness(t, DefaultConfig(), n)
	h.pass()
	if got := taintKeys(h.node("n1")); got != "example.com/x:NoExecute" {
		t.Errorf("taints = %s", got)
	}
}

type tickerOnly struct{ clock.WithTicker }

func TestDescriptor(t *testing.T) {
	d := Descriptor(DefaultConfig())
	if d.Name != "node-lifecycle-controller" || !slices.Equal(d.Aliases, []string{"nodelifecycle"}) || d.ServiceAccount != "node-controller" || d.DisabledByDefault {
		t.Fatalf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	cc := func(clk clock.WithTicker) (manager.ControllerContext, *int) {
		runs := 0
		return manager.ControllerContext{
			ServiceAccount:  d.ServiceAccount,
			ClientBuilder:   &managertesting.ClientBuilder{Clientset: client},
			InformerFactory: informers.NewSharedInformerFactory(client, 0),
			EventRecorder:   func(string) record.EventRecorder { return record.NewFakeRecorder(10) },
			Clock:           clk,
			Go:              func(func(context.Context) error) { runs++ },
		}, &runs
	}
	c, runs := cc(clocktesting.NewFakeClock(t0))
	if err := d.Start(context.Background(), c); err != nil || *runs != 1 {
		t.Fatalf("Start = %v, runs %d", err, *runs)
	}
	c, _ = cc(tickerOnly{clock.RealClock{}})
	if err := d.Start(context.Background(), c); err == nil {
		t.Error("Start accepted a clock without AfterFunc")
	}
	bad := DefaultConfig()
	bad.NodeMonitorPeriod = 0
	c, _ = cc(nil)
	if err := Descriptor(bad).Start(context.Background(), c); err == nil || !strings.Contains(err.Error(), "--node-monitor-period") {
		t.Errorf("Start with a bad config = %v", err)
	}
}

// TestRun drives the whole controller through informers on a fake clock:
// a node that stops renewing its lease goes Unknown, is tainted, and its
// pod without a matching toleration is deleted. A second node stays
// healthy: were every node down, the controller would taint none.
func TestRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeEvictionRate = 100
	client := fake.NewClientset(readyNode("n1", "", corev1.ConditionTrue, t0), nodeLease("n1", t0), readyPod("p", "n1"),
		readyNode("n2", "", corev1.ConditionTrue, t0), nodeLease("n2", t0))
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(cfg, client, factory, func(string) record.EventRecorder { return record.NewFakeRecorder(1000) }, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		factory.Shutdown()
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The first pass has run once the node is known.
	waitFor("first pass", func() bool { return c.health.get("n1") != nil })
	for range 11 {
		clk.Step(5 * time.Second)
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewMicroTime(clk.Now())
		l.Spec.RenewTime = &now
		if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor("Unknown", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && readyStatus(n) == corev1.ConditionUnknown
	})
	waitFor("taints", func() bool {
		clk.Step(100 * time.Millisecond)
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && strings.Contains(taintKeys(n), "unreachable:NoExecute") && strings.Contains(taintKeys(n), "unreachable:NoSchedule")
	})
	waitFor("eviction", func() bool {
		_, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if n, _ := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{}); readyStatus(n) != corev1.ConditionTrue || len(n.Spec.Taints) != 0 {
		t.Errorf("healthy node n2: Ready %s, taints %s", readyStatus(n), taintKeys(n))
	}
}

// TestFullDisruptionLiftsTaintsTheCacheMisses: entering the all-zones
// outage lifts NoExecute taints the node cache does not show yet.
func TestFullDisruptionLiftsTaintsTheCacheMisses(t *testing.T) {
	zones := map[string]int{"a": 2, "b": 2}
	h := newHarness(t, DefaultConfig(), zoned(zones)...)
	h.pass()
	h.clock.Step(51 * time.Second)
	h.refresh()
	// Tainted a moment ago by a tainting pass; the cache lags.
	n := h.node("b2")
	n.Spec.Taints = []corev1.Taint{UnreachableTaint}
	if _, err := h.client.CoreV1().Nodes().Update(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.c.monitorNodeHealth(h.ctx); err != nil {
		t.Fatal(err)
	}
	if s := h.c.zoneStates[zoneKey("b")]; s != StateFullDisruption {
		t.Fatalf("zone b = %s", s)
	}
	if got := taintKeys(h.node("b2")); got != "" {
		t.Errorf("b2 taints = %s, want the NoExecute taint lifted", got)
	}
}
