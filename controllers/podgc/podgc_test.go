package podgc

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mkPod(name, nodeName string, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 3, CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func terminating(p *corev1.Pod) *corev1.Pod {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
	return p
}

func evicted(p *corev1.Pod) *corev1.Pod {
	p.Status.Reason = "Evicted"
	return p
}

func mkNode(name string, ready bool, taints ...corev1.Taint) *corev1.Node {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}},
	}
}

type harness struct {
	t       *testing.T
	ctx     context.Context
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	clock   *clocktesting.FakeClock
	c       *Controller
}

func newHarness(t *testing.T, cfg Config, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(cfg, client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clk)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: klog.NewContext(context.Background(), klog.Background()), client: client, factory: factory, clock: clk, c: c}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetStore().Add(o)
		case *corev1.Node:
			err = factory.Core().V1().Nodes().Informer().GetStore().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// deleted returns the names of the pods deleted so far, sorted.
func (h *harness) deleted() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d.GetName())
			opts := d.GetDeleteOptions()
			if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
				h.t.Errorf("delete of %s without grace period 0: %+v", d.GetName(), opts)
			}
			if opts.Preconditions == nil || opts.Preconditions.UID == nil || string(*opts.Preconditions.UID) != "uid-"+d.GetName() {
				h.t.Errorf("delete of %s without its UID precondition", d.GetName())
			}
		}
	}
	sort.Strings(out)
	return out
}

// statusPatches returns the status patches by pod name.
func (h *harness) statusPatches() map[string]patchBody {
	out := map[string]patchBody{}
	for _, a := range h.client.Actions() {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || a.GetResource().Resource != "pods" {
			continue
		}
		if p.GetSubresource() != "status" || p.GetPatchType() != types.StrategicMergePatchType {
			h.t.Errorf("pod patch %s of type %s outside status", p.GetName(), p.GetPatchType())
		}
		var b patchBody
		if err := json.Unmarshal(p.GetPatch(), &b); err != nil {
			h.t.Fatal(err)
		}
		out[p.GetName()] = b
	}
	return out
}

type patchBody struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Status   corev1.PodStatus  `json:"status"`
}

func TestTerminatedThreshold(t *testing.T) {
	pods := []runtime.Object{
		mkPod("old-succeeded", "n1", corev1.PodSucceeded, 5*time.Hour),
		mkPod("old-failed", "n1", corev1.PodFailed, 4*time.Hour),
		evicted(mkPod("young-evicted", "n1", corev1.PodFailed, time.Minute)),
		mkPod("young-succeeded", "n1", corev1.PodSucceeded, 2*time.Minute),
		mkPod("b-same-age", "n1", corev1.PodFailed, 3*time.Hour),
		mkPod("a-same-age", "n1", corev1.PodFailed, 3*time.Hour),
		mkPod("running-ancient", "n1", corev1.PodRunning, 100*time.Hour),
		mkPod("pending", "n1", corev1.PodPending, 100*time.Hour),
		mkPod("unknown", "n1", corev1.PodUnknown, 100*time.Hour),
		mkNode("n1", true),
	}
	tests := []struct {
		threshold int
		want      []string
	}{
		{0, nil},
		{-1, nil},
		{6, nil},
		{100, nil},
		{5, []string{"young-evicted"}},
		{3, []string{"old-failed", "old-succeeded", "young-evicted"}},
		{2, []string{"a-same-age", "old-failed", "old-succeeded", "young-evicted"}},
		{1, []string{"a-same-age", "b-same-age", "old-failed", "old-succeeded", "young-evicted"}},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		cfg.TerminatedPodGCThreshold = tc.threshold
		h := newHarness(t, cfg, pods...)
		h.c.gc(h.ctx)
		if got := h.deleted(); !slices.Equal(got, tc.want) {
			t.Errorf("threshold %d: deleted %v, want %v", tc.threshold, got, tc.want)
		}
		if p := h.statusPatches(); len(p) != 0 {
			t.Errorf("threshold %d: terminated pods patched: %v", tc.threshold, p)
		}
	}
}

func TestOrphans(t *testing.T) {
	cfg := DefaultConfig()
	h := newHarness(t, cfg,
		mkNode("here", true),
		mkPod("orphan", "gone", corev1.PodRunning, time.Hour),
		mkPod("orphan-done", "gone", corev1.PodSucceeded, time.Hour),
		mkPod("fine", "here", corev1.PodRunning, time.Hour),
		mkPod("unbound", "", corev1.PodPending, time.Hour),
		// Its node is in the apiserver but not yet in the cache.
		mkPod("lagging", "late", corev1.PodRunning, time.Hour),
	)
	if _, err := h.client.CoreV1().Nodes().Create(h.ctx, mkNode("late", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.c.gc(h.ctx)
	h.clock.Step(39 * time.Second)
	h.c.gc(h.ctx)
	if got := h.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v within the quarantine", got)
	}
	h.clock.Step(time.Second)
	h.c.gc(h.ctx)
	if got := h.deleted(); !slices.Equal(got, []string{"orphan", "orphan-done"}) {
		t.Fatalf("deleted %v, want the two pods of the deleted node", got)
	}
	patches := h.statusPatches()
	if len(patches) != 1 {
		t.Fatalf("status patches %v, want one for the running orphan", patches)
	}
	b := patches["orphan"]
	if b.Metadata.UID != "uid-orphan" || b.Status.Phase != corev1.PodFailed || b.Status.ObservedGeneration != 3 || len(b.Status.Conditions) != 1 {
		t.Fatalf("patch = %+v", b)
	}
	c := b.Status.Conditions[0]
	if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue || c.Reason != "DeletionByPodGC" || c.Message != "PodGC: node no longer exists" ||
		c.ObservedGeneration != 3 || !c.LastTransitionTime.Time.Equal(t0.Add(40*time.Second)) {
		t.Errorf("condition = %+v", c)
	}
	// The lagging node was checked and found: its quarantine starts over.
	if _, ok := h.c.missingSince["late"]; ok {
		t.Error("quarantine of a node found in the apiserver not reset")
	}
	h.c.gc(h.ctx)
	if _, ok := h.c.missingSince["late"]; !ok {
		t.Error("node still missing from the cache not quarantined again")
	}
}

func TestOrphanNodeReturns(t *testing.T) {
	h := newHarness(t, DefaultConfig(), mkPod("p", "flaky", corev1.PodRunning, time.Hour))
	h.c.gc(h.ctx)
	h.clock.Step(30 * time.Second)
	// The node shows up in the cache before the quarantine ends.
	if err := h.factory.Core().V1().Nodes().Informer().GetStore().Add(mkNode("flaky", true)); err != nil {
		t.Fatal(err)
	}
	h.c.gc(h.ctx)
	if err := h.factory.Core().V1().Nodes().Informer().GetStore().Delete(mkNode("flaky", true)); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(30 * time.Second)
	h.c.gc(h.ctx)
	if got := h.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v: the quarantine did not start over", got)
	}
	h.clock.Step(40 * time.Second)
	h.c.gc(h.ctx)
	if got := h.deleted(); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("deleted %v after a full quarantine", got)
	}
}

func TestTerminatingPods(t *testing.T) {
	oos := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
	h := newHarness(t, DefaultConfig(),
		mkNode("down-oos", false, oos),
		mkNode("up-oos", true, oos),
		mkNode("down", false),
		terminating(mkPod("unscheduled", "", corev1.PodPending, time.Hour)),
		mkPod("unscheduled-alive", "", corev1.PodPending, time.Hour),
		terminating(mkPod("on-oos", "down-oos", corev1.PodRunning, time.Hour)),
		mkPod("on-oos-alive", "down-oos", corev1.PodRunning, time.Hour),
		terminating(mkPod("on-ready-oos", "up-oos", corev1.PodRunning, time.Hour)),
		terminating(mkPod("on-down", "down", corev1.PodRunning, time.Hour)),
	)
	h.c.gc(h.ctx)
	if got := h.deleted(); !slices.Equal(got, []string{"on-oos", "unscheduled"}) {
		t.Fatalf("deleted %v", got)
	}
	for name, b := range h.statusPatches() {
		if b.Status.Phase != corev1.PodFailed || len(b.Status.Conditions) != 0 {
			t.Errorf("%s patched with %+v, want Failed without a condition", name, b.Status)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if d := DefaultConfig(); d.TerminatedPodGCThreshold != 12500 || d.CheckPeriod != 20*time.Second || d.QuarantineTime != 40*time.Second || d.Validate() != nil {
		t.Errorf("defaults = %+v (%v)", d, d.Validate())
	}
	bad := DefaultConfig()
	bad.CheckPeriod = 0
	if err := bad.Validate(); err == nil {
		t.Error("zero check period accepted")
	}
	bad = DefaultConfig()
	bad.QuarantineTime = -time.Second
	if err := bad.Validate(); err == nil {
		t.Error("negative quarantine accepted")
	}
}

func TestDescriptor(t *testing.T) {
	d := Descriptor(DefaultConfig())
	if d.Name != "pod-garbage-collector" || !slices.Equal(d.Aliases, []string{"podgc"}) || d.ServiceAccount != "pod-garbage-collector" || d.DisabledByDefault {
		t.Fatalf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	runs := 0
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   &managertesting.ClientBuilder{Clientset: client},
		InformerFactory: informers.NewSharedInformerFactory(client, 0),
		EventRecorder:   func(string) record.EventRecorder { return record.NewFakeRecorder(1) },
		Go:              func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil || runs != 1 {
		t.Fatalf("Start = %v, runs %d", err, runs)
	}
}

// TestRun: the collector runs every check period on its clock.
func TestRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TerminatedPodGCThreshold = 1
	client := fake.NewClientset(mkPod("a", "", corev1.PodSucceeded, 2*time.Hour), mkPod("b", "", corev1.PodSucceeded, time.Hour))
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(cfg, client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clk)
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		pods, _ := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		if len(pods.Items) == 1 && pods.Items[0].Name == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("oldest terminated pod not collected: %d pods", len(pods.Items))
		}
		clk.Step(cfg.CheckPeriod)
		time.Sleep(10 * time.Millisecond)
	}
	var deletes []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" {
			deletes = append(deletes, a.(clienttesting.DeleteAction).GetName())
		}
	}
	if strings.Join(deletes, ",") != "a" {
		t.Errorf("deletes = %v", deletes)
	}
}
