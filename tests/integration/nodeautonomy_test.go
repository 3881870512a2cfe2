package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/podgc"
	"github.com/k1s/k1s/internal/nodeautonomy"
)

// TestNodeAutonomy: two nodes stop heartbeating, one marked autonomous
// (node.k1s.io/autonomy=true). Both go Unknown, get the unreachable taints
// and their pods leave the Service's EndpointSlice (ready=false); the
// plain node's pods are evicted after their tolerationSeconds, the
// autonomous node's are not, neither by the taint manager nor by the pod
// garbage collector, however long it stays away. Removing the marker
// evicts them as upstream.
func TestNodeAutonomy(t *testing.T) {
	s := startNodeLifecycleServer(t)
	c := s.Client(t)
	ctx := context.Background()
	if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	k := newKubelets(t, c, map[string]string{"edge-auto": "", "edge-plain": "", "edge-ok": ""})
	markAutonomous(t, c, "edge-auto", ptr.To(nodeautonomy.Value))

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-svc"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "edge"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Services("default").Delete(context.Background(), "edge-svc", metav1.DeleteOptions{})
	})
	servingPod(t, c, "auto-2s", "edge-auto", "10.42.1.2", tolerateUnreachable(ptr.To[int64](2)))
	servingPod(t, c, "auto-untolerated", "edge-auto", "10.42.1.3", untolerated()...)
	servingPod(t, c, "plain-2s", "edge-plain", "10.42.2.2", tolerateUnreachable(ptr.To[int64](2)))
	servingPod(t, c, "ok", "edge-ok", "10.42.3.2")
	poll(t, 10*time.Second, "all four endpoints ready", func() bool {
		r := endpointReadiness(t, c, "edge-svc")
		return len(r) == 4 && r["10.42.1.2"] && r["10.42.1.3"] && r["10.42.2.2"] && r["10.42.3.2"]
	})

	cfg := fastNodeLifecycleConfig()
	cfg.NodeEvictionRate = 10
	runNodeLifecycle(t, s, cfg)
	runPodGC(t, c)
	time.Sleep(2 * nlcPeriod)

	k.setAlive(false, "edge-auto", "edge-plain")
	for _, name := range []string{"edge-auto", "edge-plain"} {
		poll(t, nlcGrace+5*time.Second, name+" Unknown with the unreachable NoExecute taint", func() bool {
			n := getNode(t, c, name)
			r := nodeReady(n)
			return r != nil && r.Status == corev1.ConditionUnknown && hasNoExecute(n, corev1.TaintNodeUnreachable)
		})
	}
	poll(t, 10*time.Second, "the endpoints of the down nodes not ready", func() bool {
		r := endpointReadiness(t, c, "edge-svc")
		return !r["10.42.1.2"] && !r["10.42.1.3"] && r["10.42.3.2"]
	})
	poll(t, 10*time.Second, "the plain node's pod evicted after 2s", func() bool { return evicted(t, c, "plain-2s") })
	// Well past the 2s toleration and several pod-GC periods.
	time.Sleep(4 * time.Second)
	for _, name := range []string{"auto-2s", "auto-untolerated", "ok"} {
		if evicted(t, c, name) {
			t.Errorf("pod %s evicted", name)
		}
	}
	if n := getNode(t, c, "edge-auto"); !hasNoExecute(n, corev1.TaintNodeUnreachable) {
		t.Errorf("autonomous node lost its unreachable taint: %v", taintSet(n))
	}

	// Without the marker the node is an ordinary one again.
	markAutonomous(t, c, "edge-auto", nil)
	poll(t, 5*time.Second, "the untolerating pod evicted at once after unmarking", func() bool { return evicted(t, c, "auto-untolerated") })
	poll(t, 10*time.Second, "the 2s pod evicted after unmarking", func() bool { return evicted(t, c, "auto-2s") })
	if evicted(t, c, "ok") {
		t.Error("pod on the healthy node evicted")
	}
}

// markAutonomous sets (value non-nil) or removes the autonomy annotation
// and its mirror label, as k1s agent --edge-autonomy does.
func markAutonomous(t *testing.T, c kubernetes.Interface, node string, value *string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]*string{nodeautonomy.Annotation: value},
		"labels":      map[string]*string{nodeautonomy.Label: value},
	}})
	if _, err := c.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("mark node %s autonomous=%v: %v", node, value, err)
	}
}

// servingPod is runningPod with the Service's label and a pod IP.
func servingPod(t *testing.T, c kubernetes.Interface, name, node, ip string, tolerations ...corev1.Toleration) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "edge"}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
			Tolerations:                   tolerations,
		},
	}
	p, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods("default").Delete(context.Background(), name, *metav1.NewDeleteOptions(0))
	})
}

// endpointReadiness maps the addresses in the Service's EndpointSlices to
// their ready condition.
func endpointReadiness(t *testing.T, c kubernetes.Interface, svc string) map[string]bool {
	t.Helper()
	slices, err := c.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				out[a] = e.Conditions.Ready != nil && *e.Conditions.Ready
			}
		}
	}
	return out
}

// runPodGC runs the pod garbage collector with a short period until the
// test ends.
func runPodGC(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(c, 0)
	cfg := podgc.DefaultConfig()
	cfg.CheckPeriod = 200 * time.Millisecond
	cfg.QuarantineTime = time.Second
	gc, err := podgc.New(cfg, c, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	factory.Start(ctx.Done())
	errc := make(chan error, 1)
	go func() { errc <- gc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("pod GC: %v", err)
		}
		factory.Shutdown()
	})
}
