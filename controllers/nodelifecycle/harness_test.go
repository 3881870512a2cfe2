package nodelifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// readyNode is a node in zone (none if empty) whose kubelet last posted
// Ready=status at heartbeat.
func readyNode(name, zone string, status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)), Labels: map[string]string{}},
	}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	hb := metav1.NewTime(heartbeat)
	since := metav1.NewTime(t0.Add(-time.Hour))
	for _, c := range []struct {
		t corev1.NodeConditionType
		s corev1.ConditionStatus
	}{
		{corev1.NodeReady, status},
		{corev1.NodeMemoryPressure, corev1.ConditionFalse},
		{corev1.NodeDiskPressure, corev1.ConditionFalse},
		{corev1.NodePIDPressure, corev1.ConditionFalse},
		{corev1.NodeNetworkUnavailable, corev1.ConditionFalse},
	} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c.t, Status: c.s, Reason: "Kubelet", LastHeartbeatTime: hb, LastTransitionTime: since})
	}
	return n
}

func nodeLease(name string, renew time.Time) *coordv1.Lease {
	r := metav1.NewMicroTime(renew)
	return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name}, Spec: coordv1.LeaseSpec{RenewTime: &r}}
}

func readyPod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: ktypes.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		}},
	}
}

// harness runs the controller's passes by hand on a fake clock, copying
// the fake clientset's objects into the informer stores around each pass.
type harness struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	c        *Controller
	// alive are nodes whose leases pass renews first.
	alive []string
}

func newHarness(t *testing.T, cfg Config, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(cfg, client, factory, func(string) record.EventRecorder { return rec }, clk)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: klog.NewContext(context.Background(), klog.Background()), client: client, factory: factory, clock: clk, recorder: rec, c: c}
	h.refresh()
	return h
}

// refresh replaces the informer stores with the clientset's objects.
func (h *harness) refresh() {
	h.t.Helper()
	h.refreshNodesAndPods()
	leases, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var objs []any
	for i := range leases.Items {
		objs = append(objs, &leases.Items[i])
	}
	if err := h.factory.Coordination().V1().Leases().Informer().GetStore().Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) refreshNodesAndPods() {
	h.t.Helper()
	nodes, err := h.client.CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var objs []any
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	if err := h.factory.Core().V1().Nodes().Informer().GetStore().Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
	pods, err := h.client.CoreV1().Pods("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	objs = nil
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	if err := h.factory.Core().V1().Pods().Informer().GetStore().Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
}

// pass is one monitor pass on fresh caches.
func (h *harness) pass() {
	h.t.Helper()
	h.renew(h.alive...)
	h.refresh()
	if err := h.c.monitorNodeHealth(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	h.refresh()
}

// taintPass drains the zones' taint queues once.
func (h *harness) taintPass() {
	h.t.Helper()
	h.refresh()
	h.c.noExecuteTaintingPass(h.ctx)
	h.refresh()
}

// noSchedule runs the NoSchedule taint sync of every node.
func (h *harness) noSchedule() {
	h.t.Helper()
	h.refresh()
	nodes, _ := h.client.CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if err := h.c.syncNoScheduleTaints(h.ctx, n.Name); err != nil {
			h.t.Fatal(err)
		}
	}
	h.refresh()
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods("ns").Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// renew renews the nodes' leases now.
func (h *harness) renew(names ...string) {
	h.t.Helper()
	for _, name := range names {
		l, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		now := metav1.NewMicroTime(h.clock.Now())
		l.Spec.RenewTime = &now
		if _, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(h.ctx, l, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// post plays the kubelet: the node's Ready condition is status, with a
// heartbeat now.
func (h *harness) post(name string, status corev1.ConditionStatus) {
	h.t.Helper()
	n := h.node(name)
	now := metav1.NewTime(h.clock.Now())
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message, c.LastHeartbeatTime = status, "Kubelet", "", now
	}
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// events drains the recorded events.
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

func hasEvent(events []string, want string) bool {
	for _, e := range events {
		if e == want {
			return true
		}
	}
	return false
}

// noExecute lists the node's NoExecute taint keys.
func noExecute(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t.Key)
		}
	}
	return out
}

func taintKeys(n *corev1.Node) string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return strings.Join(out, ",")
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	if c := nodeCondition(&n.Status, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
}

func keyOf(ns, name string) ktypes.NamespacedName {
	return ktypes.NamespacedName{Namespace: ns, Name: name}
}
