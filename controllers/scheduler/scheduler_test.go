package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

// harness runs a Scheduler against a fake clientset whose pods/binding
// sets spec.nodeName, as the apiserver does.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	recorder *record.FakeRecorder
	cancel   context.CancelFunc
	done     chan error

	mu       sync.Mutex
	bindings map[string]string // pod → node
	failBind map[string]int    // pod → bindings to reject
}

func startScheduler(t *testing.T, cfg Config, objs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(1000),
		bindings: map[string]string{}, failBind: map[string]int{}, done: make(chan error, 1)}
	h.client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca := action.(k8stesting.CreateAction)
		if ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*corev1.Binding)
		h.mu.Lock()
		if h.failBind[b.Name] > 0 {
			h.failBind[b.Name]--
			h.mu.Unlock()
			return true, nil, apierrors.NewConflict(corev1.Resource("pods/binding"), b.Name, errors.New("test rejects the binding"))
		}
		h.bindings[b.Name] = b.Target.Name
		h.mu.Unlock()
		obj, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Spec.NodeName = b.Target.Name
		return true, nil, h.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, b.Namespace)
	})
	factory := informers.NewSharedInformerFactory(h.client, 0)
	s, err := New(cfg, h.client, factory, h.recorder, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	factory.Start(ctx.Done())
	go func() { h.done <- s.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Error("Run did not return")
	}
}

func (h *harness) create(objs ...runtime.Object) {
	h.t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			_, err = h.client.CoreV1().Pods(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.Node:
			_, err = h.client.CoreV1().Nodes().Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

// waitPod waits until cond holds for the pod.
func (h *harness) waitPod(name string, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := h.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		h.t.Fatalf("pod %s: %s did not happen; last %+v", name, what, last.Status)
	}
	return last
}

// event waits for an event containing want.
func (h *harness) event(want string) {
	h.t.Helper()
	timeout := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case e := <-h.recorder.Events:
			if strings.Contains(e, want) {
				return
			}
			seen = append(seen, e)
		case <-timeout:
			h.t.Fatalf("no event %q; saw %q", want, seen)
		}
	}
}

func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestSchedulerBindsToTheNodeThatFits(t *testing.T) {
	h := startScheduler(t, Config{}, makeNode("small", "1", "1Gi"), makeNode("big", "4", "4Gi"))
	h.create(makePod("p", requests("cpu", "2")))
	p := h.waitPod("p", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if p.Spec.NodeName != "big" {
		t.Fatalf("bound to %s, want big", p.Spec.NodeName)
	}
	h.event("Normal Scheduled Successfully assigned default/p to big")
}

func TestSchedulerReportsFailure(t *testing.T) {
	h := startScheduler(t, Config{}, makeNode("n1", "1", "1Gi"))
	h.create(makePod("p", requests("cpu", "2")))
	const msg = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	h.event("Warning FailedScheduling " + msg)
	p := h.waitPod("p", "PodScheduled=False", func(p *corev1.Pod) bool { return scheduledCondition(p) != nil })
	c := scheduledCondition(p)
	if c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable || c.Message != msg {
		t.Fatalf("condition %+v", c)
	}
	// A bigger node arrives: the pod is moved from the unschedulable pods
	// at once and bound.
	h.create(makeNode("n2", "4", "4Gi"))
	p = h.waitPod("p", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if p.Spec.NodeName != "n2" {
		t.Fatalf("bound to %s", p.Spec.NodeName)
	}
}

func TestSchedulerNoNodes(t *testing.T) {
	h := startScheduler(t, Config{})
	h.create(makePod("p"))
	h.event("Warning FailedScheduling no nodes available to schedule pods")
	h.create(makeNode("n1", "1", "1Gi"))
	h.waitPod("p", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == "n1" })
}

func TestSchedulerHonoursSchedulerName(t *testing.T) {
	h := startScheduler(t, Config{SchedulerName: "mine"}, makeNode("n1", "1", "1Gi"))
	mine := makePod("mine")
	mine.Spec.SchedulerName = "mine"
	h.create(makePod("theirs"), mine)
	h.waitPod("mine", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == "n1" })
	time.Sleep(200 * time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.bindings["theirs"]; ok {
		t.Fatal("bound a pod of another scheduler")
	}
}

func TestSchedulerSkipsGatedAndAssumedPods(t *testing.T) {
	h := startScheduler(t, Config{}, makeNode("n1", "1", "1Gi"))
	gated := makePod("gated", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}} })
	h.create(gated)
	time.Sleep(200 * time.Millisecond)
	h.mu.Lock()
	_, bound := h.bindings["gated"]
	h.mu.Unlock()
	if bound {
		t.Fatal("bound a gated pod")
	}
	// Removing the gate queues it.
	gated.Spec.SchedulingGates = nil
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), gated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPod("gated", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == "n1" })
}

func TestSchedulerAccountsAssumedPods(t *testing.T) {
	// Two 600m pods and a 1-cpu node: the second must fail even if the
	// first's binding has not reached the informer yet.
	h := startScheduler(t, Config{}, makeNode("n1", "1", "1Gi"))
	h.create(makePod("a", requests("cpu", "600m"), created(1)), makePod("b", requests("cpu", "600m"), created(2)))
	h.waitPod("a", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == "n1" })
	h.event("0/1 nodes are available: 1 Insufficient cpu.")
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.bindings) != 1 {
		t.Fatalf("bindings %v", h.bindings)
	}
}

func TestSchedulerRetriesAFailedBinding(t *testing.T) {
	h := startScheduler(t, Config{PodInitialBackoff: 10 * time.Millisecond, PodMaxBackoff: 20 * time.Millisecond}, makeNode("n1", "1", "1Gi"))
	h.mu.Lock()
	h.failBind["p"] = 1
	h.mu.Unlock()
	h.create(makePod("p", requests("cpu", "1")))
	h.event("Warning FailedScheduling binding rejected:")
	p := h.waitPod("p", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == "n1" })
	if c := scheduledCondition(p); c == nil || c.Reason != corev1.PodReasonSchedulerError {
		t.Fatalf("condition after the failed binding %+v, want SchedulerError", c)
	}
}

func TestSchedulerPreempts(t *testing.T) {
	victim := makePod("victim", priority(1), requests("cpu", "800m"), onNode("n1"))
	h := startScheduler(t, Config{}, makeNode("n1", "1", "1Gi"), victim)
	h.create(makePod("vip", priority(1000), requests("cpu", "500m")))
	h.event("Normal Preempted Preempted by pod uid-vip on node n1")
	h.event("Warning FailedScheduling 0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on node n1, preempting 1 victims")
	vip := h.waitPod("vip", "nominated", func(p *corev1.Pod) bool { return p.Status.NominatedNodeName == "n1" })
	if vip.Spec.NodeName != "" {
		t.Fatal("bound before the victim left")
	}
	// The fake clientset deletes at once: the victim is gone and the pod
	// goes to its nominated node.
	if _, err := h.client.CoreV1().Pods("default").Get(context.Background(), "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("victim still there: %v", err)
	}
	h.waitPod("vip", "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == "n1" })
	var sawDisruption bool
	for _, a := range h.client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetName() == "victim" && pa.GetSubresource() == "status" &&
			strings.Contains(string(pa.GetPatch()), `"reason":"PreemptionByScheduler"`) && strings.Contains(string(pa.GetPatch()), "default-scheduler: preempting to accommodate a higher priority pod") {
			sawDisruption = true
		}
	}
	if !sawDisruption {
		t.Fatal("victim not marked DisruptionTarget before deletion")
	}
}

func TestSchedulerPreemptionPolicyNever(t *testing.T) {
	victim := makePod("victim", priority(1), requests("cpu", "800m"), onNode("n1"))
	h := startScheduler(t, Config{}, makeNode("n1", "1", "1Gi"), victim)
	never := corev1.PreemptNever
	h.create(makePod("polite", priority(1000), requests("cpu", "500m"), func(p *corev1.Pod) { p.Spec.PreemptionPolicy = &never }))
	h.event("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")
	if _, err := h.client.CoreV1().Pods("default").Get(context.Background(), "victim", metav1.GetOptions{}); err != nil {
		t.Fatalf("victim: %v", err)
	}
}

func TestDescriptor(t *testing.T) {
	d := Descriptor(Config{})
	if d.Name != "scheduler" || d.ServiceAccount != "kube-scheduler" || d.DisabledByDefault {
		t.Fatalf("descriptor %+v", d)
	}
	client := fake.NewClientset()
	builder := &managertesting.ClientBuilder{Clientset: client}
	var started []func(context.Context) error
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: informers.NewSharedInformerFactory(client, 0),
		EventRecorder:   func(string) record.EventRecorder { return record.NewFakeRecorder(1) },
		Clock:           clock.RealClock{},
		Go:              func(fn func(context.Context) error) { started = append(started, fn) },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || len(builder.Names()) != 1 || builder.Names()[0] != "kube-scheduler" {
		t.Fatalf("started %d, clients for %v", len(started), builder.Names())
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, ""},
		{Config{SchedulerName: "Not_A_Name"}, "schedulerName"},
		{Config{PercentageOfNodesToScore: 101}, "percentageOfNodesToScore"},
		{Config{Parallelism: -1}, "parallelism"},
		{Config{PodInitialBackoff: 5 * time.Second, PodMaxBackoff: time.Second}, "podMaxBackoff"},
		{Config{KubeAPIQPS: -1}, "kubeAPIQPS"},
	}
	for _, tc := range cases {
		tc.cfg.SetDefaults()
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSchedulerSurvivesManyFailedBindings(t *testing.T) {
	// More failing bindings than binding slots: every pod is retried and
	// bound in the end.
	h := startScheduler(t, Config{PodInitialBackoff: 10 * time.Millisecond, PodMaxBackoff: 20 * time.Millisecond}, makeNode("n1", "100", "100Gi", nodeAllocatable(corev1.ResourcePods, "1000")))
	const n = 2 * maxBindingsInFlight
	h.mu.Lock()
	for i := 0; i < n; i++ {
		h.failBind[fmt.Sprintf("p%d", i)] = 1
	}
	h.mu.Unlock()
	for i := 0; i < n; i++ {
		h.create(makePod(fmt.Sprintf("p%d", i), func(p *corev1.Pod) { p.UID = types.UID(fmt.Sprintf("uid-p%d", i)) }))
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.bindings) == n, nil
	}); err != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		t.Fatalf("%d of %d pods bound", len(h.bindings), n)
	}
}
