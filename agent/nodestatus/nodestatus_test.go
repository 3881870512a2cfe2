package nodestatus

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

type fakeHealth struct {
	mu                 sync.Mutex
	runtimeErr, netErr error
	version            string
}

func (h *fakeHealth) set(rt, nw error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runtimeErr, h.netErr = rt, nw
}

func (h *fakeHealth) RuntimeReady(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runtimeErr
}

func (h *fakeHealth) NetworkReady() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.netErr
}

func (h *fakeHealth) RuntimeVersion(context.Context) string { return h.version }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testConfig(t *testing.T) Config {
	return Config{
		NodeName: "node1", NodeIPs: []net.IP{net.ParseIP("192.168.5.10"), net.ParseIP("fd00::10")},
		Hostname: "node1.lab", Labels: map[string]string{"zone": "a"}, ControlPlane: true,
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}},
		MaxPods: 50, DataDir: t.TempDir(), KubeletVersion: "v1.37.1-k1s", AgentPort: 10350,
	}
}

func newTest(t *testing.T, cfg Config, objs ...kruntime.Object) (*Manager, *fake.Clientset, *fakeHealth, *testingclock.FakeClock) {
	t.Helper()
	client := fake.NewClientset(objs...)
	health := &fakeHealth{version: "containerd://2.4.2"}
	clk := testingclock.NewFakeClock(t0)
	m, err := New(cfg, client, health, clk)
	if err != nil {
		t.Fatal(err)
	}
	return m, client, health, clk
}

func wantLabels() map[string]string {
	return map[string]string{
		"kubernetes.io/hostname": "node1", "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH,
		"node-role.kubernetes.io/control-plane": "true", "zone": "a",
	}
}

func condition(st corev1.NodeStatus, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestNewValidates(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{NodeIPs: []net.IP{net.ParseIP("10.0.0.1")}}, "--node-name"},
		{Config{NodeName: "n"}, "--node-ip"},
	} {
		if _, err := New(tt.cfg, fake.NewClientset(), nil, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tt.cfg, err, tt.want)
		}
	}
}

func TestRegister(t *testing.T) {
	m, client, _, _ := newTest(t, testConfig(t))
	if err := m.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantLabels(), node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(testConfig(t).Taints, node.Spec.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	st := node.Status
	wantAddrs := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.168.5.10"},
		{Type: corev1.NodeInternalIP, Address: "fd00::10"},
		{Type: corev1.NodeHostName, Address: "node1.lab"},
	}
	if diff := cmp.Diff(wantAddrs, st.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if st.DaemonEndpoints.KubeletEndpoint.Port != 10350 {
		t.Errorf("daemon endpoint = %d, want 10350", st.DaemonEndpoints.KubeletEndpoint.Port)
	}
	pods := st.Capacity[corev1.ResourcePods]
	cpu := st.Capacity[corev1.ResourceCPU]
	mem := st.Capacity[corev1.ResourceMemory]
	disk, hasDisk := st.Capacity[corev1.ResourceEphemeralStorage]
	if pods.Value() != 50 || cpu.Value() != int64(runtime.NumCPU()) || mem.Value() <= 0 || !hasDisk || disk.Value() <= 0 {
		t.Errorf("capacity = %v", st.Capacity)
	}
	if !cmp.Equal(st.Capacity, st.Allocatable, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })) {
		t.Errorf("allocatable %v != capacity %v", st.Allocatable, st.Capacity)
	}
	if st.NodeInfo.KubeletVersion != "v1.37.1-k1s" || st.NodeInfo.ContainerRuntimeVersion != "containerd://2.4.2" ||
		st.NodeInfo.OperatingSystem != runtime.GOOS || st.NodeInfo.Architecture != runtime.GOARCH {
		t.Errorf("node info = %+v", st.NodeInfo)
	}
	var types []corev1.NodeConditionType
	for _, c := range st.Conditions {
		types = append(types, c.Type)
		if c.Type != corev1.NodeReady && c.Status != corev1.ConditionFalse {
			t.Errorf("%s = %s, want False", c.Type, c.Status)
		}
	}
	if diff := cmp.Diff([]corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady}, types); diff != "" {
		t.Errorf("condition types (-want +got):\n%s", diff)
	}
	if r := condition(st, corev1.NodeReady); r.Status != corev1.ConditionTrue || r.Reason != "KubeletReady" || !r.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Ready = %+v", r)
	}

	noDisk := testConfig(t)
	noDisk.DataDir = ""
	m, client, _, _ = newTest(t, noDisk)
	if err := m.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	node, _ = client.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if _, ok := node.Status.Capacity[corev1.ResourceEphemeralStorage]; ok {
		t.Errorf("ephemeral storage without a data dir")
	}
}

func TestReRegisterKeepsTheNode(t *testing.T) {
	existing := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid", Labels: map[string]string{
			"kubernetes.io/hostname": "old-name", "added-by-admin": "yes", "zone": "b",
		}},
		Spec: corev1.NodeSpec{PodCIDR: "10.42.3.0/24", Taints: []corev1.Taint{{Key: "admin", Effect: corev1.TaintEffectNoExecute}}},
	}
	m, client, _, _ := newTest(t, testConfig(t), existing)
	client.ClearActions()
	if err := m.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if diff := cmp.Diff([]string{"create", "get", "update"}, verbs); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
	node, _ := client.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	want := wantLabels()
	want["added-by-admin"] = "yes"
	if diff := cmp.Diff(want, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if node.UID != "node-uid" || node.Spec.PodCIDR != "10.42.3.0/24" || len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "admin" {
		t.Errorf("re-registration replaced the node: %+v", node)
	}

	// Labels already current: no update.
	client.ClearActions()
	if err := m.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("updated a node whose labels are current")
		}
	}
}

func TestRegisterErrors(t *testing.T) {
	m, client, _, _ := newTest(t, testConfig(t))
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "node1", errors.New("not allowed"))
	})
	if err := m.register(context.Background()); err == nil || !strings.Contains(err.Error(), "create node node1") {
		t.Errorf("err = %v", err)
	}
}

func statusPosts(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if (a.GetVerb() == "patch" || a.GetVerb() == "update") && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func getNode(t *testing.T, c *fake.Clientset) *corev1.Node {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUpdatePostsOnChangeAndReportInterval(t *testing.T) {
	m, client, health, clk := newTest(t, testConfig(t))
	ctx := context.Background()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	// Someone else's fields on the status survive.
	n := getNode(t, client)
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"k1s.local/pause:3.10"}}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()

	steps := []struct {
		name      string
		advance   time.Duration
		rt, nw    error
		wantPosts int
		wantReady corev1.ConditionStatus
		wantMsg   string
		// when Ready last changed, in seconds after t0
		wantTransition time.Duration
	}{
		{name: "first update posts", wantPosts: 1, wantReady: corev1.ConditionTrue, wantMsg: "kubelet is posting ready status"},
		{name: "unchanged within the report interval", advance: 10 * time.Second, wantPosts: 1, wantReady: corev1.ConditionTrue},
		{name: "unchanged still", advance: 4 * time.Minute, wantPosts: 1, wantReady: corev1.ConditionTrue},
		{name: "unchanged past the report interval posts", advance: time.Minute, wantPosts: 2, wantReady: corev1.ConditionTrue},
		{name: "runtime down", advance: 10 * time.Second, rt: errors.New("dial unix: no such file"), wantPosts: 3,
			wantReady: corev1.ConditionFalse, wantMsg: "container runtime is down: dial unix: no such file", wantTransition: 5*time.Minute + 20*time.Second},
		{name: "network and runtime down", advance: 10 * time.Second, rt: errors.New("x"), nw: errors.New("cni config uninitialized"), wantPosts: 4,
			wantReady: corev1.ConditionFalse, wantMsg: "container runtime is down: x; container runtime network not ready: cni config uninitialized",
			wantTransition: 5*time.Minute + 20*time.Second},
		{name: "network down", advance: 10 * time.Second, nw: errors.New("cni config uninitialized"), wantPosts: 5,
			wantReady: corev1.ConditionFalse, wantMsg: "container runtime network not ready: cni config uninitialized",
			wantTransition: 5*time.Minute + 20*time.Second},
		{name: "ready again", advance: 10 * time.Second, wantPosts: 6, wantReady: corev1.ConditionTrue, wantMsg: "kubelet is posting ready status",
			wantTransition: 5*time.Minute + 50*time.Second},
	}
	elapsed := time.Duration(0)
	for _, s := range steps {
		clk.Step(s.advance)
		elapsed += s.advance
		health.set(s.rt, s.nw)
		if err := m.update(ctx); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := statusPosts(client); got != s.wantPosts {
			t.Fatalf("%s: %d posts, want %d", s.name, got, s.wantPosts)
		}
		st := getNode(t, client).Status
		ready := condition(st, corev1.NodeReady)
		if ready.Status != s.wantReady || (s.wantMsg != "" && ready.Message != s.wantMsg) {
			t.Errorf("%s: Ready = %s %q %q", s.name, ready.Status, ready.Reason, ready.Message)
		}
		if s.wantReady == corev1.ConditionFalse && ready.Reason != "KubeletNotReady" {
			t.Errorf("%s: reason %q, want KubeletNotReady", s.name, ready.Reason)
		}
		if want := t0.Add(s.wantTransition); !ready.LastTransitionTime.Time.Equal(want) {
			t.Errorf("%s: Ready transition %v, want %v", s.name, ready.LastTransitionTime.Time, want)
		}
		// The pressure conditions never changed: their transition stays at t0.
		if mp := condition(st, corev1.NodeMemoryPressure); !mp.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s: MemoryPressure transition moved to %v", s.name, mp.LastTransitionTime.Time)
		}
		if len(st.Images) != 1 {
			t.Errorf("%s: images lost: %v", s.name, st.Images)
		}
	}
	last := condition(getNode(t, client).Status, corev1.NodeReady)
	if !last.LastHeartbeatTime.Time.Equal(t0.Add(elapsed)) {
		t.Errorf("heartbeat = %v, want the last post's time %v", last.LastHeartbeatTime.Time, t0.Add(elapsed))
	}
}

func TestReadyChannel(t *testing.T) {
	m, _, health, _ := newTest(t, testConfig(t))
	ctx := context.Background()
	health.set(errors.New("down"), nil)
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.update(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Ready():
		t.Fatal("Ready closed while the node is NotReady")
	default:
	}
	health.set(nil, nil)
	if err := m.update(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Ready():
	default:
		t.Fatal("Ready not closed after a Ready post")
	}
	// Going NotReady and back does not close it twice.
	health.set(errors.New("down"), nil)
	_ = m.update(ctx)
	health.set(nil, nil)
	if err := m.update(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateReregistersADeletedNode(t *testing.T) {
	m, client, _, _ := newTest(t, testConfig(t))
	ctx := context.Background()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.update(ctx); err != nil {
		t.Fatal(err)
	}
	if n := getNode(t, client); n.Labels["zone"] != "a" {
		t.Errorf("node not registered again: %+v", n)
	}
}

func TestRunRegistersAndHoldsTheLease(t *testing.T) {
	cfg := testConfig(t)
	client := fake.NewClientset()
	client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*corev1.Node).UID = types.UID("node-uid")
		return false, nil, nil
	})
	m, err := New(cfg, client, &fakeHealth{version: "containerd://2.4.2"}, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	for _, ch := range []<-chan struct{}{m.Registered(), m.Ready()} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("node not registered and Ready")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node1", metav1.GetOptions{})
		if err == nil {
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "node1" || *l.Spec.LeaseDurationSeconds != 40 {
				t.Errorf("lease spec = %+v", l.Spec)
			}
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].UID != "node-uid" {
				t.Errorf("lease owner = %+v, want the node", l.OwnerReferences)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lease: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop")
	}
}

// A status post carries only the status: the node-lifecycle controller's
// taint change made after the agent read the node survives it, and a
// failed post is tried again at once.
func TestUpdateSendsOnlyStatusAndRetries(t *testing.T) {
	m, client, _, _ := newTest(t, testConfig(t))
	ctx := context.Background()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	stale := getNode(t, client)
	n := stale.DeepCopy()
	n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The agent reads the node as it was before the taint.
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		return true, stale.DeepCopy(), nil
	})
	// The first post fails.
	failed := false
	client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if !failed && a.GetSubresource() == "status" {
			failed = true
			return true, nil, apierrors.NewConflict(corev1.Resource("nodes"), "node1", errors.New("changed"))
		}
		return false, nil, nil
	})
	client.ClearActions()
	if err := m.update(ctx); err != nil {
		t.Fatalf("update: %v", err)
	}
	if !failed || statusPosts(client) != 2 {
		t.Errorf("status posts: %d (first failed: %v), want a failed one and a retry", statusPosts(client), failed)
	}
	var reads []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("the node was written whole: %v", a)
		}
		if g, ok := a.(k8stesting.GetActionImpl); ok && g.GetResource().Resource == "nodes" {
			reads = append(reads, g.GetOptions.ResourceVersion)
		}
	}
	// As kubelet: the first try reads the watch cache, the retry etcd.
	if len(reads) != 2 || reads[0] != "0" || reads[1] != "" {
		t.Errorf("node reads with resourceVersions %q, want [\"0\" \"\"]", reads)
	}
	got, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "node1")
	if err != nil {
		t.Fatal(err)
	}
	node := got.(*corev1.Node)
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != corev1.TaintNodeNotReady {
		t.Errorf("taints after the status post: %v, want the controller's not-ready taint kept", node.Spec.Taints)
	}
	if c := condition(node.Status, corev1.NodeReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s, want True", c.Status)
	}
}

// The node-lifecycle controller set Ready to Unknown while the agent could
// not reach the apiserver: the agent's next update posts Ready again at
// once, without waiting for the 5-minute report interval.
func TestUpdatePostsOverAControllersUnknown(t *testing.T) {
	m, client, _, clk := newTest(t, testConfig(t))
	ctx := context.Background()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.update(ctx); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, client)
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	clk.Step(10 * time.Second)
	if err := m.update(ctx); err != nil {
		t.Fatal(err)
	}
	if statusPosts(client) != 1 {
		t.Fatalf("%d status posts, want 1", statusPosts(client))
	}
	if c := condition(getNode(t, client).Status, corev1.NodeReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s after the update, want True", c.Status)
	}
}
