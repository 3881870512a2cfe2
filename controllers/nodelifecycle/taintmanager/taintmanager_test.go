package taintmanager

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	unreachable = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
)

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Spec: corev1.NodeSpec{Taints: taints}}
}

func pod(name, nodeName string, tolerations ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 2},
		Spec:       corev1.PodSpec{NodeName: nodeName, Tolerations: tolerations},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func tolerate(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

type harness struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	m        *Manager
	ctx      context.Context
}

func newHarness(t *testing.T, n *corev1.Node, pods ...*corev1.Pod) *harness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	rec := record.NewFakeRecorder(100)
	m, err := New(client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: client, factory: factory, clock: clk, recorder: rec, m: m, ctx: klog.NewContext(context.Background(), klog.Background())}
	m.ctx = h.ctx
	h.setNode(n)
	for _, p := range pods {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(h.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := factory.Core().V1().Pods().Informer().GetStore().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(m.evictions.stop)
	return h
}

func (h *harness) setNode(n *corev1.Node) {
	h.t.Helper()
	if err := h.factory.Core().V1().Nodes().Informer().GetStore().Update(n); err != nil {
		h.t.Fatal(err)
	}
	if err := h.m.syncNode(h.ctx, n.Name); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) setPod(p *corev1.Pod) {
	h.t.Helper()
	if err := h.factory.Core().V1().Pods().Informer().GetStore().Update(p); err != nil {
		h.t.Fatal(err)
	}
	if err := h.m.syncPod(h.ctx, podItem{p.Namespace, p.Name, p.Spec.NodeName}); err != nil {
		h.t.Fatal(err)
	}
}

// deleted lists the pods deleted so far, waiting up to wait for at least
// want of them (deletions run on their own goroutines).
func (h *harness) deleted(want int, wait time.Duration) []string {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var out []string
		for _, a := range h.client.Actions() {
			if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
				out = append(out, d.GetName())
			}
		}
		if len(out) >= want || time.Now().After(deadline) {
			return out
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestEvictions(t *testing.T) {
	tests := []struct {
		name   string
		taints []corev1.Taint
		pod    *corev1.Pod
		// after is how long after the taint the pod is deleted; 0 at
		// once, -1 never.
		after time.Duration
	}{
		{"no toleration: at once", []corev1.Taint{unreachable}, pod("p", "n1"), 0},
		{"tolerationSeconds 30", []corev1.Taint{unreachable}, pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](30))), 30 * time.Second},
		{"tolerationSeconds 0: at once", []corev1.Taint{unreachable}, pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](0))), 0},
		{"tolerationSeconds negative: at once", []corev1.Taint{unreachable}, pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](-5))), 0},
		{"tolerates forever", []corev1.Taint{unreachable}, pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, nil)), -1},
		{"tolerates one of two taints: at once", []corev1.Taint{unreachable, notReady}, pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, nil)), 0},
		{"shortest of the used tolerations", []corev1.Taint{unreachable, notReady},
			pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](60)), tolerate(corev1.TaintNodeNotReady, ptr.To[int64](20))), 20 * time.Second},
		{"unused toleration does not count", []corev1.Taint{unreachable},
			pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](60)), tolerate(corev1.TaintNodeNotReady, ptr.To[int64](5))), 60 * time.Second},
		{"wildcard toleration (daemon set style) forever", []corev1.Taint{unreachable, notReady},
			pod("p", "n1", corev1.Toleration{Operator: corev1.TolerationOpExists}), -1},
		{"value mismatch is not tolerated", []corev1.Taint{unreachable},
			pod("p", "n1", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoExecute}), 0},
		{"NoSchedule taints are ignored", []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}, pod("p", "n1"), -1},
		{"pod on another node", []corev1.Taint{unreachable}, pod("p", "n2"), -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, node("n1"), tc.pod)
			h.setNode(node("n1", tc.taints...))
			switch {
			case tc.after == 0:
				if got := h.deleted(1, 5*time.Second); len(got) != 1 || got[0] != "p" {
					t.Fatalf("deleted = %v, want [p] at once", got)
				}
			case tc.after < 0:
				h.clock.Step(24 * time.Hour)
				if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
					t.Fatalf("deleted = %v, want none", got)
				}
			default:
				h.clock.Step(tc.after - time.Second)
				if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
					t.Fatalf("deleted %v a second before %s", got, tc.after)
				}
				h.clock.Step(time.Second)
				if got := h.deleted(1, 5*time.Second); len(got) != 1 {
					t.Fatalf("deleted = %v after %s, want [p]", got, tc.after)
				}
			}
		})
	}
}

func TestDeletionMarksDisruptionTarget(t *testing.T) {
	h := newHarness(t, node("n1"), pod("p", "n1"))
	h.setNode(node("n1", unreachable))
	h.deleted(1, 5*time.Second)
	var patch clienttesting.PatchAction
	var del clienttesting.DeleteAction
	for _, a := range h.client.Actions() {
		switch a := a.(type) {
		case clienttesting.PatchAction:
			patch = a
		case clienttesting.DeleteAction:
			del = a
		}
	}
	if patch == nil || patch.GetSubresource() != "status" || patch.GetPatchType() != types.StrategicMergePatchType {
		t.Fatalf("status patch = %#v", patch)
	}
	var body struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Status   corev1.PodStatus  `json:"status"`
	}
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Metadata.UID != "uid-p" || len(body.Status.Conditions) != 1 {
		t.Fatalf("patch = %s", patch.GetPatch())
	}
	c := body.Status.Conditions[0]
	if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue || c.Reason != DisruptionReason || c.Message != DisruptionMessage || c.ObservedGeneration != 2 {
		t.Errorf("condition = %+v", c)
	}
	if del == nil || del.GetDeleteOptions().Preconditions == nil || *del.GetDeleteOptions().Preconditions.UID != "uid-p" {
		t.Errorf("delete = %#v", del)
	}
	if del != nil && del.GetDeleteOptions().GracePeriodSeconds != nil {
		t.Errorf("delete forces grace period %d, want the pod's own", *del.GetDeleteOptions().GracePeriodSeconds)
	}
	ev := h.events()
	if len(ev) != 1 || ev[0] != "Normal TaintManagerEviction Marking for deletion Pod ns/p" {
		t.Errorf("events = %q", ev)
	}
}

func TestCancellation(t *testing.T) {
	thirty := ptr.To[int64](30)
	tests := []struct {
		name   string
		change func(h *harness)
	}{
		{"taint removed", func(h *harness) { h.setNode(node("n1")) }},
		{"taint replaced by a NoSchedule one", func(h *harness) {
			h.setNode(node("n1", corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}))
		}},
		{"pod now tolerates forever", func(h *harness) { h.setPod(pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, nil))) }},
		{"pod deleted", func(h *harness) {
			if err := h.factory.Core().V1().Pods().Informer().GetStore().Delete(pod("p", "n1")); err != nil {
				h.t.Fatal(err)
			}
			if err := h.m.syncPod(h.ctx, podItem{"ns", "p", "n1"}); err != nil {
				h.t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, node("n1"), pod("p", "n1", tolerate(corev1.TaintNodeUnreachable, thirty)))
			h.setNode(node("n1", unreachable))
			h.clock.Step(10 * time.Second)
			tc.change(h)
			if n := h.m.evictions.len(); n != 0 {
				t.Fatalf("%d deletions still scheduled", n)
			}
			h.clock.Step(time.Hour)
			if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
				t.Fatalf("deleted = %v, want none", got)
			}
			ev := h.events()
			if len(ev) != 1 || ev[0] != "Normal TaintManagerEviction Cancelling deletion of Pod ns/p" {
				t.Errorf("events = %q", ev)
			}
		})
	}
}

// TestScheduledDeletionKeepsItsStart: a second taint or a re-sync does not
// push the deletion back; the toleration period runs from the first taint.
func TestScheduledDeletionKeepsItsStart(t *testing.T) {
	p := pod("p", "n1", tolerate("", ptr.To[int64](30)))
	h := newHarness(t, node("n1"), p)
	h.setNode(node("n1", notReady))
	h.clock.Step(20 * time.Second)
	h.setNode(node("n1", unreachable)) // the taints swap
	h.setPod(p)
	h.clock.Step(9 * time.Second)
	if got := h.deleted(1, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("deleted at 29s: %v", got)
	}
	h.clock.Step(time.Second)
	if got := h.deleted(1, 5*time.Second); len(got) != 1 {
		t.Fatalf("not deleted 30s after the first taint: %v", got)
	}
}

func TestPodBoundLater(t *testing.T) {
	h := newHarness(t, node("n1"))
	h.setNode(node("n1", unreachable))
	p := pod("p", "n1")
	if _, err := h.client.CoreV1().Pods("ns").Create(h.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.setPod(p)
	if got := h.deleted(1, 5*time.Second); len(got) != 1 {
		t.Fatalf("pod bound to a tainted node not deleted: %v", got)
	}
}

func TestPodAlreadyGone(t *testing.T) {
	h := newHarness(t, node("n1"))
	if err := h.m.deletePod(h.ctx, "ns", "missing"); err != nil {
		t.Fatalf("deletePod of a missing pod = %v, want nil", err)
	}
}

func TestMinTolerationTime(t *testing.T) {
	tests := []struct {
		name string
		in   []corev1.Toleration
		want time.Duration
	}{
		{"none", nil, 0},
		{"unbounded", []corev1.Toleration{{}}, -1},
		{"bounded", []corev1.Toleration{{TolerationSeconds: ptr.To[int64](7)}, {}}, 7 * time.Second},
		{"least", []corev1.Toleration{{TolerationSeconds: ptr.To[int64](7)}, {TolerationSeconds: ptr.To[int64](3)}}, 3 * time.Second},
		{"zero wins", []corev1.Toleration{{TolerationSeconds: ptr.To[int64](7)}, {TolerationSeconds: ptr.To[int64](0)}}, 0},
	}
	for _, tc := range tests {
		if got := minTolerationTime(tc.in); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestRun drives the manager through its informers and workers.
func TestRun(t *testing.T) {
	client := fake.NewClientset(node("n1"), pod("p", "n1"), pod("q", "n1", tolerate(corev1.TaintNodeUnreachable, ptr.To[int64](5))))
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	m, err := New(client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), record.NewFakeRecorder(100), clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		factory.Shutdown()
	}()
	factory.WaitForCacheSync(ctx.Done())
	if _, err := client.CoreV1().Nodes().Update(ctx, node("n1", unreachable), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone := func(name string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{}); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("pod %s not deleted", name)
	}
	waitGone("p")
	// q waits for its 5s on the fake clock.
	deadline := time.Now().Add(10 * time.Second)
	for m.evictions.len() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "q", metav1.GetOptions{}); err != nil {
		t.Fatalf("q deleted before its tolerationSeconds: %v", err)
	}
	clk.Step(5 * time.Second)
	waitGone("q")
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" && !strings.Contains(a.GetResource().Resource, "pods") {
			t.Errorf("unexpected delete %v", a)
		}
	}
}
