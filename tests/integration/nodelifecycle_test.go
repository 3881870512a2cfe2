package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/nodelifecycle"
	"github.com/k1s/k1s/controllers/podgc"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// nlcGrace and nlcPeriod are the test's --node-monitor-grace-period and
// --node-monitor-period.
const (
	nlcGrace  = 3 * time.Second
	nlcPeriod = 500 * time.Millisecond
	// renewEvery is how often simulated nodes renew their leases.
	renewEvery = 300 * time.Millisecond
)

// startNodeLifecycleServer starts a control plane whose own node lifecycle
// controller and pod garbage collector, if it has them, are off: the tests
// run theirs with short periods.
func startNodeLifecycleServer(t *testing.T) *framework.Server {
	t.Helper()
	dir := t.TempDir()
	cm := manager.DefaultConfig()
	cfg := server.Config{
		DataDir:           filepath.Join(dir, "data"),
		BindAddress:       "127.0.0.1",
		HTTPSPort:         framework.FreePort(t),
		NodeIP:            "127.0.0.1",
		WriteKubeconfig:   filepath.Join(dir, "kubeconfig.yaml"),
		EtcdClientPort:    framework.FreePort(t),
		EtcdPeerPort:      framework.FreePort(t),
		AdvertiseAddress:  "127.0.0.1",
		DisableAgent:      true,
		ControllerManager: &cm,
	}
	cm.Controllers = []string{"*"}
	for _, name := range []string{"node-lifecycle-controller", "pod-garbage-collector"} {
		cm.Controllers = append(cm.Controllers, "-"+name)
		if _, err := server.New(cfg); err != nil && strings.Contains(err.Error(), fmt.Sprintf("unknown controller %q", name)) {
			// The server does not run one yet.
			cm.Controllers = cm.Controllers[:len(cm.Controllers)-1]
		}
	}
	return framework.StartWith(t, cfg)
}

// runNodeLifecycle runs a node lifecycle controller against s until the
// test (or the returned stop) ends it. As under the controller manager,
// the informers and the event sink use admin credentials and the
// controller itself acts as kube-system/node-controller, so its RBAC role
// is exercised.
func runNodeLifecycle(t *testing.T, s *framework.Server, cfg nodelifecycle.Config) (stop func()) {
	t.Helper()
	client := s.Client(t)
	saConfig := s.UserConfig(t, "system:serviceaccount:kube-system:node-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	saConfig.QPS, saConfig.Burst = 500, 1000
	saClient, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := saClient.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the node-controller identity may list secrets (err %v): RBAC is not exercised", err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := func(component string) record.EventRecorder {
		return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := nodelifecycle.New(cfg, saClient, factory, recorder, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("node lifecycle controller: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("node lifecycle controller did not stop")
			}
			factory.Shutdown()
			broadcaster.Shutdown()
		})
	}
	t.Cleanup(stop)
	return stop
}

func fastNodeLifecycleConfig() nodelifecycle.Config {
	cfg := nodelifecycle.DefaultConfig()
	cfg.NodeMonitorGracePeriod = nlcGrace
	cfg.NodeMonitorPeriod = nlcPeriod
	cfg.NodeStartupGracePeriod = nlcGrace
	return cfg
}

// kubelets simulates the heartbeats of nodes: it renews the leases of the
// live ones.
type kubelets struct {
	t      *testing.T
	client kubernetes.Interface

	mu    sync.Mutex
	alive map[string]bool
}

// newKubelets registers the nodes (Ready, with leases, labelled with
// their zones) and renews the leases of the live ones until the test ends.
func newKubelets(t *testing.T, client kubernetes.Interface, zones map[string]string) *kubelets {
	t.Helper()
	k := &kubelets{t: t, client: client, alive: map[string]bool{}}
	ctx := context.Background()
	for name, zone := range zones {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if zone != "" {
			n.Labels[corev1.LabelTopologyZone] = zone
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		k.post(name, corev1.ConditionTrue)
		now := metav1.NewMicroTime(time.Now())
		lease := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
			Spec:       coordv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}
		if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		k.alive[name] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait.UntilWithContext(ctx, k.renew, renewEvery)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		for name := range zones {
			_ = client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	return k
}

func (k *kubelets) renew(ctx context.Context) {
	k.mu.Lock()
	var names []string
	for n, ok := range k.alive {
		if ok {
			names = append(names, n)
		}
	}
	k.mu.Unlock()
	for _, name := range names {
		l, err := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		_, _ = k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
	}
}

// setAlive starts or stops the nodes' heartbeats.
func (k *kubelets) setAlive(alive bool, names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range names {
		k.alive[n] = alive
	}
}

// post plays the kubelet posting the node's status with Ready=status.
func (k *kubelets) post(name string, status corev1.ConditionStatus) {
	k.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := k.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		conds := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady"}}
		for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			conds = append(conds, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient"})
		}
		for i := range conds {
			conds[i].LastHeartbeatTime = now
			conds[i].LastTransitionTime = now
		}
		n.Status.Conditions = conds
		_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		k.t.Fatalf("post status of node %s: %v", name, err)
	}
}

// runningPod creates a Ready pod bound to node.
func runningPod(t *testing.T, c kubernetes.Interface, name, node string, tolerations ...corev1.Toleration) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
			Tolerations:                   tolerations,
		},
	}
	p, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods("default").Delete(context.Background(), name, *metav1.NewDeleteOptions(0))
	})
}

// untolerated are tolerations that DefaultTolerationSeconds takes as
// covering the node controller's taints (so it adds no 300s defaults) but
// that match neither: the pod tolerates nothing.
func untolerated() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpEqual, Value: "never", Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpEqual, Value: "never", Effect: corev1.TaintEffectNoExecute},
	}
}

func tolerateUnreachable(seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

// evicted reports whether the pod is gone or being deleted.
func evicted(t *testing.T, c kubernetes.Interface, name string) bool {
	t.Helper()
	p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.DeletionTimestamp != nil
}

func taintSet(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	sort.Strings(out)
	return out
}

func hasNoExecute(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

func nodeReady(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// poll waits up to timeout for cond, failing with what.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func getNode(t *testing.T, c kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNodeLifecycle(t *testing.T) {
	s := startNodeLifecycleServer(t)
	c := s.Client(t)
	if _, err := c.CoreV1().ServiceAccounts("default").Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Run("HeartbeatLoss", func(t *testing.T) { testHeartbeatLoss(t, s, c) })
	t.Run("PartialDisruption", func(t *testing.T) { testPartialDisruption(t, s, c) })
	t.Run("FullDisruption", func(t *testing.T) { testFullDisruption(t, s, c) })
	t.Run("PodGC", func(t *testing.T) { testPodGC(t, s, c) })
}

// testHeartbeatLoss: a node that stops renewing its lease goes Unknown
// after the grace period, gets the unreachable taints, its pods lose
// Ready and are evicted as their tolerations say; its recovery lifts the
// taints. A second node stays healthy (were every node down, the
// controller would assume its own fault and taint nothing).
func testHeartbeatLoss(t *testing.T, s *framework.Server, c kubernetes.Interface) {
	k := newKubelets(t, c, map[string]string{"hb-dead": "", "hb-ok": ""})
	runningPod(t, c, "no-toleration", "hb-dead", untolerated()...)
	runningPod(t, c, "tolerates-2s", "hb-dead", tolerateUnreachable(ptr.To[int64](2)))
	runningPod(t, c, "tolerates-forever", "hb-dead", tolerateUnreachable(nil))
	runningPod(t, c, "on-healthy", "hb-ok")
	cfg := fastNodeLifecycleConfig()
	cfg.NodeEvictionRate = 1
	runNodeLifecycle(t, s, cfg)
	// Let the controller see both nodes healthy first.
	time.Sleep(2 * nlcPeriod)

	stopped := time.Now()
	k.setAlive(false, "hb-dead")
	var unknownAt time.Time
	poll(t, nlcGrace+5*time.Second, "hb-dead to go Unknown", func() bool {
		if r := nodeReady(getNode(t, c, "hb-dead")); r != nil && r.Status == corev1.ConditionUnknown {
			unknownAt = time.Now()
			return true
		}
		return false
	})
	// The last renewal seen may be up to one renewal interval before the stop.
	if d := unknownAt.Sub(stopped); d < nlcGrace-renewEvery {
		t.Errorf("Unknown %s after the last heartbeat, before the %s grace period", d, nlcGrace)
	}
	n := getNode(t, c, "hb-dead")
	for _, cond := range n.Status.Conditions {
		if cond.Status != corev1.ConditionUnknown || cond.Reason != "NodeStatusUnknown" || cond.Message != "Kubelet stopped posting node status." {
			t.Errorf("condition %s = %s %s %q", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}

	var taintedAt time.Time
	poll(t, 5*time.Second, "the unreachable taints", func() bool {
		got := taintSet(getNode(t, c, "hb-dead"))
		if slices.Equal(got, []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}) {
			taintedAt = time.Now()
			return true
		}
		return false
	})
	poll(t, 3*time.Second, "the pod without a matching toleration to be evicted", func() bool { return evicted(t, c, "no-toleration") })
	if d := time.Since(taintedAt); d > 1500*time.Millisecond {
		t.Errorf("pod without toleration evicted %s after the taint, want at once", d)
	}
	poll(t, 3*time.Second, "the pods on hb-dead to lose Ready", func() bool {
		p, err := c.CoreV1().Pods("default").Get(context.Background(), "tolerates-forever", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				return cond.Status == corev1.ConditionFalse
			}
		}
		return false
	})
	if evicted(t, c, "tolerates-2s") && time.Since(taintedAt) < 1500*time.Millisecond {
		t.Errorf("pod with tolerationSeconds=2 evicted %s after the taint", time.Since(taintedAt))
	}
	poll(t, 5*time.Second, "the pod with tolerationSeconds=2 to be evicted", func() bool { return evicted(t, c, "tolerates-2s") })
	if d := time.Since(taintedAt); d < 1500*time.Millisecond {
		t.Errorf("pod with tolerationSeconds=2 evicted %s after the taint", d)
	}
	time.Sleep(time.Second)
	if evicted(t, c, "tolerates-forever") {
		t.Error("pod tolerating forever was evicted")
	}
	if evicted(t, c, "on-healthy") {
		t.Error("pod on the healthy node was evicted")
	}
	if got := taintSet(getNode(t, c, "hb-ok")); len(got) != 0 {
		t.Errorf("healthy node tainted: %v", got)
	}
	p, err := c.CoreV1().Pods("default").Get(context.Background(), "no-toleration", metav1.GetOptions{})
	if err == nil {
		found := false
		for _, cond := range p.Status.Conditions {
			found = found || (cond.Type == corev1.DisruptionTarget && cond.Reason == "DeletionByTaintManager")
		}
		if !found {
			t.Errorf("evicted pod lacks the DisruptionTarget condition: %+v", p.Status.Conditions)
		}
	}
	poll(t, 5*time.Second, "the NodeNotReady and TaintManagerEviction events", func() bool {
		evs, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		var nodeNotReady, eviction bool
		for _, e := range evs.Items {
			nodeNotReady = nodeNotReady || (e.Reason == "NodeNotReady" && e.InvolvedObject.Name == "hb-dead" && e.Message == "Node hb-dead status is now: NodeNotReady")
			eviction = eviction || (e.Reason == "TaintManagerEviction" && e.Message == "Marking for deletion Pod default/no-toleration")
		}
		return nodeNotReady && eviction
	})

	// Recovery.
	k.setAlive(true, "hb-dead")
	k.post("hb-dead", corev1.ConditionTrue)
	poll(t, 5*time.Second, "hb-dead's taints to go", func() bool { return len(getNode(t, c, "hb-dead").Spec.Taints) == 0 })
}

// testPartialDisruption: zone a has three of its four nodes NotReady
// (partial disruption; a zone above --large-cluster-size-threshold, so it
// taints at --secondary-node-eviction-rate), zone b one of two (normal
// rate), zone c none. The controller starts on that state so every zone's
// state is known from its first pass.
func testPartialDisruption(t *testing.T, s *framework.Server, c kubernetes.Interface) {
	zones := map[string]string{"pa1": "a", "pa2": "a", "pa3": "a", "pa4": "a", "pb1": "b", "pb2": "b", "pc1": "c", "pc2": "c"}
	k := newKubelets(t, c, zones)
	for _, n := range []string{"pa1", "pa2", "pa3", "pb1"} {
		k.post(n, corev1.ConditionFalse)
	}
	cfg := fastNodeLifecycleConfig()
	cfg.NodeEvictionRate = 2
	cfg.SecondaryNodeEvictionRate = 0.5
	cfg.LargeClusterSizeThreshold = 3
	start := time.Now()
	runNodeLifecycle(t, s, cfg)

	seen := map[string]time.Duration{}
	poll(t, 12*time.Second, "the not-ready taints of pa1..pa3 and pb1", func() bool {
		for name := range zones {
			if _, ok := seen[name]; !ok && hasNoExecute(getNode(t, c, name), corev1.TaintNodeNotReady) {
				seen[name] = time.Since(start)
			}
		}
		return len(seen) >= 4
	})
	if len(seen) != 4 {
		t.Fatalf("tainted: %v", seen)
	}
	for _, healthy := range []string{"pa4", "pb2", "pc1", "pc2"} {
		if _, ok := seen[healthy]; ok {
			t.Errorf("healthy node %s tainted", healthy)
		}
	}
	var a []time.Duration
	for _, n := range []string{"pa1", "pa2", "pa3"} {
		a = append(a, seen[n])
	}
	slices.Sort(a)
	// At 0.5 nodes/s the three go about 2s apart; at the normal 2/s they
	// would all be tainted within a second.
	if spread := a[2] - a[0]; spread < 3*time.Second {
		t.Errorf("zone a tainted at %v: %s apart, want the secondary rate", a, spread)
	}
	if a[1]-a[0] < 1500*time.Millisecond || a[2]-a[1] < 1500*time.Millisecond {
		t.Errorf("zone a tainted at %v, want about 2s apart", a)
	}
	if d := seen["pb1"] - a[0]; d > time.Second || d < -time.Second {
		t.Errorf("pb1 tainted at %s, zone a's first at %s: the normal zone should not wait", seen["pb1"], a[0])
	}
	t.Logf("taint times: zone a %v, pb1 %s", a, seen["pb1"])
}

// testFullDisruption: three zones of two nodes all stop heartbeating. Once
// every zone is fully disrupted the controller taints nothing and lifts the
// NoExecute taints it set, so no pod is evicted; when a node comes back,
// tainting resumes for the others and the recovered node is clean.
func testFullDisruption(t *testing.T, s *framework.Server, c kubernetes.Interface) {
	zones := map[string]string{"fx1": "x", "fx2": "x", "fy1": "y", "fy2": "y", "fz1": "z", "fz2": "z"}
	var names []string
	for n := range zones {
		names = append(names, n)
	}
	sort.Strings(names)
	k := newKubelets(t, c, zones)
	// The pod rides out any moment in which only some nodes look down.
	runningPod(t, c, "rides-out", "fx1", tolerateUnreachable(ptr.To[int64](4)))
	cfg := fastNodeLifecycleConfig()
	cfg.NodeEvictionRate = 10
	runNodeLifecycle(t, s, cfg)
	time.Sleep(2 * nlcPeriod)

	k.setAlive(false, names...)
	poll(t, nlcGrace+5*time.Second, "every node to go Unknown", func() bool {
		for _, n := range names {
			if r := nodeReady(getNode(t, c, n)); r == nil || r.Status != corev1.ConditionUnknown {
				return false
			}
		}
		return true
	})
	// Longer than the pod's toleration: nothing is tainted NoExecute and the
	// pod stays.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	for _, n := range names {
		node := getNode(t, c, n)
		if hasNoExecute(node, corev1.TaintNodeUnreachable) || hasNoExecute(node, corev1.TaintNodeNotReady) {
			t.Errorf("node %s tainted NoExecute in full disruption: %v", n, taintSet(node))
		}
		if !slices.Contains(taintSet(node), "node.kubernetes.io/unreachable:NoSchedule") {
			t.Errorf("node %s lacks the unreachable NoSchedule taint: %v", n, taintSet(node))
		}
	}
	if evicted(t, c, "rides-out") {
		t.Fatal("pod evicted although every zone is fully disrupted")
	}

	// fx1 comes back: the controller leaves the mode and taints the rest.
	k.setAlive(true, "fx1")
	k.post("fx1", corev1.ConditionTrue)
	poll(t, 10*time.Second, "the other nodes to get the unreachable NoExecute taint", func() bool {
		for _, n := range names[1:] {
			if !hasNoExecute(getNode(t, c, n), corev1.TaintNodeUnreachable) {
				return false
			}
		}
		return true
	})
	if got := taintSet(getNode(t, c, "fx1")); len(got) != 0 {
		t.Errorf("recovered fx1 has taints %v", got)
	}
	if evicted(t, c, "rides-out") {
		t.Error("pod on the recovered node evicted")
	}
}

// testPodGC runs the pod garbage collector as kube-system/pod-garbage-collector
// with a threshold of two terminated pods and a one-second quarantine: the
// oldest terminated pod and the pod of a node that does not exist go, the
// others stay.
func testPodGC(t *testing.T, s *framework.Server, c kubernetes.Interface) {
	ctx := context.Background()
	newKubelets(t, c, map[string]string{"gc-node": ""})
	done := func(name string) {
		runningPod(t, c, name, "gc-node")
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodSucceeded
		if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	done("done-a")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have whole seconds
	done("done-b")
	done("done-c")
	runningPod(t, c, "alive", "gc-node")
	runningPod(t, c, "orphan", "ghost-node")

	saConfig := s.UserConfig(t, "system:serviceaccount:kube-system:pod-garbage-collector", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	saClient, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(c, 0)
	cfg := podgc.DefaultConfig()
	cfg.TerminatedPodGCThreshold = 2
	cfg.CheckPeriod = 200 * time.Millisecond
	cfg.QuarantineTime = time.Second
	gc, err := podgc.New(cfg, saClient, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, klog.Background()))
	factory.Start(runCtx.Done())
	errc := make(chan error, 1)
	go func() { errc <- gc.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("pod GC: %v", err)
		}
		factory.Shutdown()
	}()

	gone := func(name string) bool {
		_, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	poll(t, 5*time.Second, "the oldest terminated pod to be collected", func() bool { return gone("done-a") })
	poll(t, 5*time.Second, "the orphaned pod to be collected", func() bool { return gone("orphan") })
	time.Sleep(500 * time.Millisecond)
	for _, name := range []string{"done-b", "done-c", "alive"} {
		if gone(name) {
			t.Errorf("pod %s collected", name)
		}
	}
}
