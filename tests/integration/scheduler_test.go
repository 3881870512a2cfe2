package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/scheduler"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// schedInServer reports whether k1s server registers the scheduler
// itself: a --controllers list naming it validates.
func schedInServer(t *testing.T) bool {
	t.Helper()
	dir := t.TempDir()
	_, err := server.New(server.Config{
		DataDir:           filepath.Join(dir, "data"),
		NodeIP:            "127.0.0.1",
		AdvertiseAddress:  "127.0.0.1",
		DisableAgent:      true,
		ControllerManager: framework.Controllers(scheduler.ControllerName),
	})
	if err != nil && !strings.Contains(err.Error(), "unknown controller") {
		t.Fatalf("server config: %v", err)
	}
	return err == nil
}

// schedStart starts a control plane with a scheduler: the server's own
// once it registers one, else a controller manager of this test running
// only the scheduler, as the server would (its Descriptor, service
// account credentials and the default RBAC policy).
func schedStart(t *testing.T) (*framework.Server, kubernetes.Interface) {
	t.Helper()
	s := framework.Start(t)
	if schedInServer(t) {
		t.Log("the server runs the scheduler")
		return s, s.Client(t)
	}
	t.Log("starting a scheduler in the test")
	cm := manager.DefaultConfig()
	cm.LeaderElect = false
	m, err := manager.New(cm, s.RESTConfig(t), scheduler.Descriptor(scheduler.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
	return s, s.Client(t)
}

func schedPoll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// schedNode creates a Ready node with cpu and memory capacity and
// allocatable, room for 110 pods, and the given labels and taints.
func schedNode(t *testing.T, c kubernetes.Interface, name, cpu string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	l := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: corev1.NodeSpec{Taints: taints}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	// The node IPAM controller writes the node too: retry on conflicts.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{
			Capacity: rl, Allocatable: rl,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// schedNamespace creates a namespace and waits for its default service
// account; its pods are deleted at once when the test ends.
func schedNamespace(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schedPoll(t, "default service account", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	})
	return name
}

type schedPodOpt func(*corev1.Pod)

func schedCPU(q string) schedPodOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
}

func schedPod(t *testing.T, c kubernetes.Interface, ns, name string, opts ...schedPodOpt) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: podSpec()}
	for _, o := range opts {
		o(p)
	}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// schedBound waits for the pod to be bound and returns its node.
func schedBound(t *testing.T, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	var node string
	schedPoll(t, "pod "+name+" bound", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	return node
}

// schedFailed waits for a FailedScheduling event of the pod containing
// want and returns its message.
func schedFailed(t *testing.T, c kubernetes.Interface, ns, name, want string) string {
	t.Helper()
	var seen []string
	var msg string
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling"})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Source.Component == scheduler.DefaultSchedulerName && strings.Contains(e.Message, want) {
				msg = e.Message
				return true, nil
			}
			seen = append(seen, e.Message)
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no FailedScheduling event for %s with %q; saw %q", name, want, seen)
	}
	return msg
}

func schedGet(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScheduler places pods on simulated nodes through the real apiserver
// and checks the decisions and the failure reports.
func TestScheduler(t *testing.T) {
	_, c := schedStart(t)
	ctx := context.Background()

	t.Run("insufficient cpu", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-cpu")
		schedNode(t, c, "cpu-1", "1", nil)
		schedPod(t, c, ns, "greedy", schedCPU("2"))
		const want = "0/1 nodes are available: 1 Insufficient cpu."
		msg := schedFailed(t, c, ns, "greedy", want)
		if full := want + " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."; msg != full {
			t.Errorf("message %q, want %q", msg, full)
		}
		schedPoll(t, "PodScheduled=False", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "greedy", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled {
					return cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable && cond.Message == msg, nil
				}
			}
			return false, nil
		})
		if p := schedGet(t, c, ns, "greedy"); p.Spec.NodeName != "" {
			t.Fatalf("bound to %s", p.Spec.NodeName)
		}
	})

	t.Run("the node that fits", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-fit")
		schedNode(t, c, "fit-small", "1", nil)
		schedNode(t, c, "fit-big", "4", nil)
		schedPod(t, c, ns, "p", schedCPU("2"))
		if node := schedBound(t, c, ns, "p"); node != "fit-big" {
			t.Fatalf("bound to %s, want fit-big", node)
		}
		p := schedGet(t, c, ns, "p")
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status != corev1.ConditionTrue {
				t.Fatalf("PodScheduled %+v", cond)
			}
		}
		schedPoll(t, "Scheduled event", func(ctx context.Context) (bool, error) {
			evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p,reason=Scheduled"})
			return err == nil && len(evs.Items) == 1 && evs.Items[0].Message == "Successfully assigned sched-fit/p to fit-big", nil
		})
	})

	t.Run("node affinity", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-affinity")
		schedNode(t, c, "aff-a", "4", map[string]string{"disk": "hdd"})
		schedNode(t, c, "aff-b", "4", map[string]string{"disk": "ssd"})
		required := func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}}}
		}
		preferred := func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"hdd"}}}}}}}}
		}
		for i := 0; i < 3; i++ {
			schedPod(t, c, ns, fmt.Sprintf("ssd-%d", i), required)
			schedPod(t, c, ns, fmt.Sprintf("hdd-%d", i), preferred)
		}
		for i := 0; i < 3; i++ {
			if node := schedBound(t, c, ns, fmt.Sprintf("ssd-%d", i)); node != "aff-b" {
				t.Errorf("ssd-%d on %s, want aff-b", i, node)
			}
			if node := schedBound(t, c, ns, fmt.Sprintf("hdd-%d", i)); node != "aff-a" {
				t.Errorf("hdd-%d on %s, want aff-a (preferred)", i, node)
			}
		}
		schedPod(t, c, ns, "nowhere", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "nvme"} })
		schedFailed(t, c, ns, "nowhere", "2 node(s) didn't match Pod's node affinity/selector.")
	})

	t.Run("taints", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-taints")
		dedicated := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
		schedNode(t, c, "taint-gpu", "4", map[string]string{"pool": "gpu"}, dedicated)
		schedNode(t, c, "taint-plain", "4", map[string]string{"pool": "plain"})
		for i := 0; i < 3; i++ {
			schedPod(t, c, ns, fmt.Sprintf("plain-%d", i))
		}
		for i := 0; i < 3; i++ {
			if node := schedBound(t, c, ns, fmt.Sprintf("plain-%d", i)); node != "taint-plain" {
				t.Errorf("plain-%d on the tainted node", i)
			}
		}
		toGPU := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "gpu"} }
		schedPod(t, c, ns, "intolerant", toGPU)
		schedFailed(t, c, ns, "intolerant", "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s).")
		schedPod(t, c, ns, "tolerant", toGPU, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		})
		if node := schedBound(t, c, ns, "tolerant"); node != "taint-gpu" {
			t.Fatalf("tolerant on %s", node)
		}
		// Taking the taint away lets the other pod through at once.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := c.CoreV1().Nodes().Get(ctx, "taint-gpu", metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = nil
			_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if node := schedBound(t, c, ns, "intolerant"); node != "taint-gpu" {
			t.Fatalf("intolerant on %s", node)
		}
	})

	t.Run("host ports", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-ports")
		schedNode(t, c, "port-1", "4", nil)
		schedNode(t, c, "port-2", "4", nil)
		withPort := func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		}
		schedPod(t, c, ns, "web-0", withPort)
		schedPod(t, c, ns, "web-1", withPort)
		a, b := schedBound(t, c, ns, "web-0"), schedBound(t, c, ns, "web-1")
		if a == b {
			t.Fatalf("both pods with host port 8080 on %s", a)
		}
		schedPod(t, c, ns, "web-2", withPort)
		schedFailed(t, c, ns, "web-2", "2 node(s) didn't have free ports for the requested pod ports.")
		// Freeing a port lets it in.
		if err := c.CoreV1().Pods(ns).Delete(ctx, "web-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		if node := schedBound(t, c, ns, "web-2"); node != a {
			t.Fatalf("web-2 on %s, want %s", node, a)
		}
	})

	t.Run("anti-affinity spreads", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-anti")
		for i := 0; i < 3; i++ {
			schedNode(t, c, fmt.Sprintf("anti-%d", i), "4", nil)
		}
		anti := func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "web"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
		}
		for i := 0; i < 4; i++ {
			schedPod(t, c, ns, fmt.Sprintf("web-%d", i), anti)
		}
		seen := map[string]bool{}
		bound := 0
		schedPoll(t, "three pods bound", func(ctx context.Context) (bool, error) {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			clear(seen)
			bound = 0
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					bound++
					seen[p.Spec.NodeName] = true
				}
			}
			return bound == 3, nil
		})
		if len(seen) != 3 {
			t.Fatalf("3 pods on %d nodes: %v", len(seen), seen)
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				schedFailed(t, c, ns, p.Name, "3 node(s) didn't match pod anti-affinity rules.")
			}
		}
	})

	t.Run("preemption", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-preempt")
		for name, value := range map[string]int32{"sched-low": 10, "sched-high": 1000} {
			if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		schedNode(t, c, "preempt-1", "1", nil)
		class := func(name string) schedPodOpt { return func(p *corev1.Pod) { p.Spec.PriorityClassName = name } }
		schedPod(t, c, ns, "low", schedCPU("800m"), class("sched-low"))
		schedBound(t, c, ns, "low")
		schedPod(t, c, ns, "high", schedCPU("500m"), class("sched-high"))
		schedFailed(t, c, ns, "high", "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on node preempt-1, preempting 1 victims")
		// The victim is marked and deleted gracefully; with no kubelet it
		// stays terminating until the test plays kubelet.
		var low *corev1.Pod
		schedPoll(t, "victim terminating", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "low", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			low = p
			return p.DeletionTimestamp != nil, nil
		})
		marked := false
		for _, cond := range low.Status.Conditions {
			if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == corev1.PodReasonPreemptionByScheduler {
				marked = true
			}
		}
		if !marked {
			t.Errorf("victim conditions %+v lack DisruptionTarget/PreemptionByScheduler", low.Status.Conditions)
		}
		schedPoll(t, "nominated node", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "high", metav1.GetOptions{})
			return err == nil && p.Status.NominatedNodeName == "preempt-1", nil
		})
		if p := schedGet(t, c, ns, "high"); p.Spec.NodeName != "" {
			t.Fatal("bound while the victim still runs")
		}
		if err := c.CoreV1().Pods(ns).Delete(ctx, "low", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if node := schedBound(t, c, ns, "high"); node != "preempt-1" {
			t.Fatalf("high on %s", node)
		}
	})

	t.Run("another scheduler's pod", func(t *testing.T) {
		ns := schedNamespace(t, c, "sched-other")
		schedNode(t, c, "other-1", "4", nil)
		schedPod(t, c, ns, "theirs", func(p *corev1.Pod) { p.Spec.SchedulerName = "other-scheduler" })
		schedPod(t, c, ns, "ours")
		schedBound(t, c, ns, "ours")
		time.Sleep(time.Second)
		p := schedGet(t, c, ns, "theirs")
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || len(p.Status.Conditions) != 0 {
			t.Fatalf("a pod for another scheduler was touched: node %q phase %s conditions %+v", p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
	})
}
