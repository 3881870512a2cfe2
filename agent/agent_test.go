package agent

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/agent/kuberuntime"
	"github.com/k1s/k1s/agent/volume"
	"github.com/k1s/k1s/internal/fakecri"
)

// fakeVolumes records what the agent asked of its volume manager.
type fakeVolumes struct {
	mu       sync.Mutex
	setUp    []types.UID
	torn     []types.UID
	setUpErr error
	active   []sets.Set[types.UID]
}

func (v *fakeVolumes) Mounts(*corev1.Pod, *corev1.Container, map[string]string, volume.ContainerOptions) ([]*runtimeapi.Mount, error) {
	return nil, nil
}

func (v *fakeVolumes) SetUpPod(_ context.Context, pod *corev1.Pod) (map[string]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setUp = append(v.setUp, pod.UID)
	if v.setUpErr != nil {
		return nil, v.setUpErr
	}
	return map[string]string{}, nil
}

func (v *fakeVolumes) TearDownPod(_ context.Context, uid types.UID) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.torn = append(v.torn, uid)
	return nil
}

func (v *fakeVolumes) CleanupOrphans(_ context.Context, active sets.Set[types.UID]) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.active = append(v.active, active.Clone())
	return nil
}

type testAgent struct {
	a      *Agent
	client *fake.Clientset
	rt     *fakecri.Runtime
	vols   *fakeVolumes
	clock  *testingclock.FakeClock
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestAgent(t *testing.T) *testAgent {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	ta := &testAgent{client: fake.NewClientset(), rt: fakecri.NewRuntime(clk), vols: &fakeVolumes{}, clock: clk}
	images := fakecri.NewImages("k1s.local/busybox:1.36")
	a, err := New(Config{
		NodeName: "node1", NodeIPs: []net.IP{net.ParseIP("192.168.5.10")},
		RuntimeEndpoint: "unix:///run/fake.sock", DataDir: t.TempDir(),
	}, Deps{Client: ta.client, Runtime: ta.rt, Images: images, Volumes: ta.vols, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's runtime manager logs under /var/log/pods; give it a
	// private directory instead.
	a.runtime, err = kuberuntime.New(kuberuntime.Config{
		NodeName: "node1", NodeIPs: []net.IP{net.ParseIP("192.168.5.10")},
		PodLogsDir: t.TempDir(), ResolvConf: filepath.Join(t.TempDir(), "none"),
	}, ta.rt, images, ta.vols, nil, a.recorder, clk)
	if err != nil {
		t.Fatal(err)
	}
	ta.a = a
	return ta
}

// runWithAPIPod creates pod in the API and runs the agent until the test
// ends; it returns the run's context.
func (ta *testAgent) runWithAPIPod(t *testing.T, pod *corev1.Pod) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := ta.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ta.a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ctx
}

func apiPod(policy corev1.RestartPolicy, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec: corev1.PodSpec{
			NodeName: "node1", RestartPolicy: policy, DNSPolicy: corev1.DNSClusterFirst,
			Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullNever}},
		},
	}
}

func (ta *testAgent) status(t *testing.T, uid types.UID) corev1.PodStatus {
	t.Helper()
	st, ok := ta.a.statuses.GetPodStatus(uid)
	if !ok {
		t.Fatalf("no status for %s", uid)
	}
	return st
}

func (ta *testAgent) containerID(t *testing.T) string {
	t.Helper()
	ta.rt.Lock()
	defer ta.rt.Unlock()
	for id := range ta.rt.Containers {
		return id
	}
	t.Fatal("no container")
	return ""
}

func TestSyncPodRunsANewPod(t *testing.T) {
	ta := newTestAgent(t)
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	ta.a.pods.SetAPIPod(pod)
	// The worker may hold an older copy: the pod manager's is synced.
	stale := pod.DeepCopy()
	stale.Spec.Containers[0].Image = "k1s.local/old:1"

	requeue, finished := ta.a.syncPod(context.Background(), stale)
	if requeue != 30*time.Second || finished {
		t.Errorf("syncPod = %v, %v; want 30s, not finished", requeue, finished)
	}
	if len(ta.vols.setUp) != 1 || ta.vols.setUp[0] != "uid-1" {
		t.Errorf("volumes set up for %v", ta.vols.setUp)
	}
	st := ta.status(t, "uid-1")
	if st.Phase != corev1.PodRunning || st.PodIP != "10.42.0.7" || st.HostIP != "192.168.5.10" {
		t.Errorf("status phase %s pod IP %q host IP %q", st.Phase, st.PodIP, st.HostIP)
	}
	cs := st.ContainerStatuses[0]
	if cs.State.Running == nil || !cs.Ready || cs.Image != "k1s.local/busybox:1.36" || !strings.HasPrefix(cs.ContainerID, "containerd://") {
		t.Errorf("container status = %+v", cs)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
		t.Errorf("start time = %v", st.StartTime)
	}
}

func TestSyncPodRequeuesSoonWhileWaiting(t *testing.T) {
	tests := []struct {
		name       string
		setUpErr   error
		image      string
		wantReason string
		wantRunPod bool
	}{
		{name: "volumes not ready", setUpErr: errors.New("configmap cfg not found"), image: "k1s.local/busybox:1.36", wantReason: kuberuntime.ReasonContainerCreating},
		{name: "image never pulled", image: "k1s.local/absent:1", wantReason: kuberuntime.ReasonErrImageNeverPull, wantRunPod: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestAgent(t)
			ta.vols.setUpErr = tt.setUpErr
			pod := apiPod(corev1.RestartPolicyAlways, tt.image)
			ta.a.pods.SetAPIPod(pod)
			requeue, finished := ta.a.syncPod(context.Background(), pod)
			if requeue != 2*time.Second || finished {
				t.Errorf("syncPod = %v, %v; want 2s", requeue, finished)
			}
			st := ta.status(t, pod.UID)
			w := st.ContainerStatuses[0].State.Waiting
			if st.Phase != corev1.PodPending || w == nil || w.Reason != tt.wantReason {
				t.Errorf("phase %s, waiting %+v; want Pending and %s", st.Phase, w, tt.wantReason)
			}
			if got := ta.rt.CallsOf("RunPodSandbox") > 0; got != tt.wantRunPod {
				t.Errorf("sandbox created = %v, want %v", got, tt.wantRunPod)
			}
		})
	}
}

func TestSyncPodFinishedPodReleasesItsSandbox(t *testing.T) {
	ta := newTestAgent(t)
	pod := apiPod(corev1.RestartPolicyNever, "k1s.local/busybox:1.36")
	ta.a.pods.SetAPIPod(pod)
	ctx := context.Background()
	ta.a.syncPod(ctx, pod)
	ta.rt.Exit(t, ta.containerID(t), 0)

	requeue, finished := ta.a.syncPod(ctx, pod)
	if requeue != 0 || finished {
		t.Errorf("syncPod = %v, %v; want 0, not finished (the API object stays)", requeue, finished)
	}
	if st := ta.status(t, pod.UID); st.Phase != corev1.PodSucceeded {
		t.Fatalf("phase = %s, want Succeeded", st.Phase)
	}
	for id, sb := range ta.rt.Sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("sandbox %s of a finished pod still ready", id)
		}
	}
	ta.rt.ResetCalls()
	if requeue, _ := ta.a.syncPod(ctx, pod); requeue != 0 {
		t.Errorf("finished pod requeued after %v", requeue)
	}
	for _, call := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if n := ta.rt.CallsOf(call); n != 0 {
			t.Errorf("a finished pod ran again: %s × %d", call, n)
		}
	}
}

func TestTerminateDeletedPod(t *testing.T) {
	ta := newTestAgent(t)
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ta.a.pods.SetAPIPod(pod)
	ta.a.syncPod(ctx, pod)
	id := ta.containerID(t)

	deleting := pod.DeepCopy()
	now := metav1.NewTime(t0)
	deleting.DeletionTimestamp = &now
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](10)
	if _, err := ta.client.CoreV1().Pods("shop").Create(ctx, deleting, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ta.a.pods.SetAPIPod(deleting)

	requeue, finished := ta.a.syncPod(ctx, deleting)
	if requeue != 0 || !finished {
		t.Fatalf("syncPod = %v, %v; want the worker finished", requeue, finished)
	}
	if got, ok := ta.rt.Stops[id]; !ok || got != 10 {
		t.Errorf("container stopped with %d (stopped %v), want the deletion grace 10", got, ok)
	}
	if len(ta.rt.Containers) != 0 || len(ta.rt.Sandboxes) != 0 {
		t.Errorf("left in the runtime: %d containers, %d sandboxes", len(ta.rt.Containers), len(ta.rt.Sandboxes))
	}
	if len(ta.vols.torn) != 1 || ta.vols.torn[0] != pod.UID {
		t.Errorf("volumes torn down for %v", ta.vols.torn)
	}
	st := ta.status(t, pod.UID)
	if st.Phase != corev1.PodFailed || st.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("final status phase %s, container %+v; want Failed with the container terminated", st.Phase, st.ContainerStatuses[0].State)
	}

	// The status manager writes the final status, then removes the object.
	go func() { _ = ta.a.statuses.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := ta.client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not deleted from the API: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTerminatePodGoneFromTheAPI(t *testing.T) {
	ta := newTestAgent(t)
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	ctx := context.Background()
	ta.a.pods.SetAPIPod(pod)
	ta.a.syncPod(ctx, pod)
	id := ta.containerID(t)
	ta.a.pods.DeleteAPIPod(pod)

	requeue, finished := ta.a.syncPod(ctx, pod)
	if requeue != 0 || !finished {
		t.Fatalf("syncPod = %v, %v; want finished", requeue, finished)
	}
	if got := ta.rt.Stops[id]; got != 30 {
		t.Errorf("stopped with %ds, want the default 30", got)
	}
	if len(ta.rt.Containers) != 0 || len(ta.rt.Sandboxes) != 0 {
		t.Errorf("left in the runtime")
	}
	if _, ok := ta.a.statuses.GetPodStatus(pod.UID); ok {
		t.Errorf("status kept for a pod gone from the API")
	}
	for _, a := range ta.client.Actions() {
		if a.GetResource().Resource == "pods" {
			t.Errorf("API call for a pod already gone: %s", a.GetVerb())
		}
	}
}

func TestTerminateRetriesOnRuntimeErrors(t *testing.T) {
	ta := newTestAgent(t)
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	ctx := context.Background()
	ta.a.pods.SetAPIPod(pod)
	ta.a.syncPod(ctx, pod)
	ta.a.pods.DeleteAPIPod(pod)
	for _, method := range []string{"ListPodSandbox", "StopContainer", "RemovePodSandbox"} {
		ta.rt.Inject(method, errors.New("runtime busy"))
		if requeue, finished := ta.a.syncPod(ctx, pod); requeue != 2*time.Second || finished {
			t.Errorf("%s failing: syncPod = %v, %v; want a retry in 2s", method, requeue, finished)
		}
	}
	if requeue, finished := ta.a.syncPod(ctx, pod); requeue != 0 || !finished {
		t.Errorf("after recovery: %v, %v", requeue, finished)
	}
}

func TestHealth(t *testing.T) {
	ta := newTestAgent(t)
	h := &health{a: ta.a}
	ctx := context.Background()
	ta.rt.Conditions = []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized\n"},
	}
	if err := h.RuntimeReady(ctx); err != nil {
		t.Errorf("RuntimeReady = %v", err)
	}
	if err := h.NetworkReady(); err == nil || err.Error() != "NetworkReady=false reason:NetworkPluginNotReady message:cni config uninitialized" {
		t.Errorf("NetworkReady = %v", err)
	}
	ta.rt.Conditions = []*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: false, Reason: "Broken", Message: "shim gone"}}
	if err := h.RuntimeReady(ctx); err == nil || err.Error() != "Broken: shim gone" {
		t.Errorf("RuntimeReady = %v", err)
	}
	if err := h.NetworkReady(); err != nil {
		t.Errorf("NetworkReady without a condition = %v", err)
	}
	ta.rt.Inject("Status", errors.New("connection refused"))
	if err := h.RuntimeReady(ctx); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("RuntimeReady with the runtime away = %v", err)
	}
	if v := h.RuntimeVersion(ctx); v != "containerd://2.4.2" {
		t.Errorf("RuntimeVersion = %q", v)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{}, Deps{})
	for _, flag := range []string{"--node-name", "--node-ip", "--container-runtime-endpoint"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("New(empty) = %v, want an error naming %s", err, flag)
		}
	}
	_, err = New(Config{NodeName: "n", NodeIPs: []net.IP{net.ParseIP("10.0.0.1")}, RuntimeEndpoint: "unix:///x", DataDir: t.TempDir()}, Deps{})
	if err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("New without deps = %v", err)
	}
}

func TestHousekeepingStopsOrphans(t *testing.T) {
	ta := newTestAgent(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	orphan := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	kept := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	kept.Name, kept.UID = "kept", "uid-kept"
	// Both run; only one is still wanted (the other was deleted while the
	// agent was away).
	ta.a.pods.SetAPIPod(orphan)
	ta.a.pods.SetAPIPod(kept)
	ta.a.syncPod(ctx, orphan)
	ta.a.syncPod(ctx, kept)
	ta.a.pods.DeleteAPIPod(orphan)
	ta.a.pleg.Relist(ctx)

	ta.a.workers = newPodWorkers(ctx, ta.a.syncPod)
	// Until every source has been read, a running pod no source names may
	// still be one of theirs (the apiserver cannot be reached, say): it
	// is left alone.
	ta.a.housekeeping(ctx)
	time.Sleep(100 * time.Millisecond)
	if st, _ := ta.a.runtime.GetPodStatus(ctx, orphan.UID, orphan.Name, orphan.Namespace); len(st.Containers) != 1 {
		t.Fatalf("housekeeping stopped a pod before the sources were read: %+v", st)
	}
	close(ta.a.sourcesReady)
	ta.a.housekeeping(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := ta.a.runtime.GetPodStatus(ctx, orphan.UID, orphan.Name, orphan.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Containers) == 0 && len(st.Sandboxes) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan still in the runtime: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, _ := ta.a.runtime.GetPodStatus(ctx, kept.UID, kept.Name, kept.Namespace); len(st.Containers) != 1 || !st.Sandboxes[0].Ready {
		t.Errorf("the wanted pod was touched: %+v", st)
	}
	// Volumes of running pods are not orphans, even when the pod is unknown.
	ta.vols.mu.Lock()
	active := ta.vols.active[0]
	ta.vols.mu.Unlock()
	if !active.Equal(sets.New[types.UID]("uid-1", "uid-kept")) {
		t.Errorf("CleanupOrphans kept %v, want both running pods", sets.List(active))
	}
	cancel()
	ta.a.workers.Wait()
}

// fakeNetwork records the pod CIDRs it was given.
type fakeNetwork struct {
	mu    sync.Mutex
	cidrs []string
	err   error
}

func (n *fakeNetwork) SetPodCIDR(cidr string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cidrs = append(n.cidrs, cidr)
	return n.err
}

func (n *fakeNetwork) last() (string, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.cidrs) == 0 {
		return "", 0
	}
	return n.cidrs[len(n.cidrs)-1], len(n.cidrs)
}

func TestWatchNodeWritesTheNetworkConfig(t *testing.T) {
	ta := newTestAgent(t)
	netw := &fakeNetwork{err: errors.New("disk full")}
	ta.a.deps.Network = netw
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.1.0/24"}}
	if _, err := ta.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ta.a.node.Run(ctx) }()
	done := make(chan struct{})
	go func() { _ = ta.a.watchNode(ctx); close(done) }()

	// waitFor steps the fake clock (the 2s re-check) until cond holds.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			ta.clock.Step(2 * time.Second)
			time.Sleep(2 * time.Millisecond)
		}
	}
	// A failed write is retried.
	waitFor("a retry after a failed write", func() bool { _, n := netw.last(); return n >= 2 })
	netw.mu.Lock()
	netw.err = nil
	netw.mu.Unlock()
	waitFor("the pod CIDR", func() bool {
		ta.a.mu.Lock()
		defer ta.a.mu.Unlock()
		c, _ := netw.last()
		return c == "10.42.1.0/24" && ta.a.podCIDR == "10.42.1.0/24"
	})
	_, writes := netw.last()
	// An unchanged CIDR is not written again.
	for i := 0; i < 5; i++ {
		ta.clock.Step(2 * time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	if _, n := netw.last(); n != writes {
		t.Errorf("unchanged CIDR written %d more times", n-writes)
	}
	node, _ = ta.client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
	node.Spec.PodCIDR = "10.42.7.0/24"
	if _, err := ta.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A change arrives by the watch: no clock step (re-check) needed.
	deadline := time.Now().Add(10 * time.Second)
	for c, _ := netw.last(); c != "10.42.7.0/24"; c, _ = netw.last() {
		if time.Now().After(deadline) {
			t.Fatalf("new pod CIDR not written without a re-check: last %q", c)
		}
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	<-done
}

// With PodsAfter set, the agent starts no pod until it is closed (the
// air-gap images are still being imported), then starts the pods that
// arrived meanwhile.
func TestRunHoldsPodsUntilPodsAfter(t *testing.T) {
	ta := newTestAgent(t)
	release := make(chan struct{})
	ta.a.deps.PodsAfter = release
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	ta.runWithAPIPod(t, pod)

	// The pod reaches the pod manager, but no sandbox is made.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := ta.a.pods.Get(pod.UID); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod never reached the pod manager")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := ta.rt.CallsOf("RunPodSandbox"); n != 0 {
		t.Fatalf("%d sandboxes made before PodsAfter was closed", n)
	}

	close(release)
	for ta.rt.CallsOf("StartContainer") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pod did not start after PodsAfter was closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Without the apiserver (APIReady not closed) the static pods run, as
// kubelet's do; the node's registration and the pods bound to it wait
// for it.
func TestRunStartsStaticPodsWithoutTheAPIServer(t *testing.T) {
	ta := newTestAgent(t)
	apiReady := make(chan struct{})
	ta.a.deps.APIReady = apiReady
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: static-web}\nspec:\n  containers:\n  - {name: keeper, image: k1s.local/busybox:1.36, imagePullPolicy: Never}\n"
	if err := os.MkdirAll(ta.a.cfg.PodManifests, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ta.a.cfg.PodManifests, "web.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	ctx := ta.runWithAPIPod(t, pod)
	running := func(name string) bool {
		for _, n := range ta.rt.ContainerNames() {
			if strings.HasSuffix(n, "-"+name+"-0") {
				return true
			}
		}
		return false
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; containers %q", what, ta.rt.ContainerNames())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the static pod's container", func() bool { return running("keeper") })
	time.Sleep(100 * time.Millisecond)
	if running("app") {
		t.Error("a pod bound to the node started before the apiserver was there")
	}
	if nodes, _ := ta.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); len(nodes.Items) != 0 {
		t.Errorf("the node registered before the apiserver was there: %v", nodes.Items)
	}

	close(apiReady)
	waitFor("the pod bound to the node", func() bool { return running("app") })
	waitFor("the node's registration", func() bool {
		_, err := ta.client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
		return err == nil
	})
	if !running("keeper") {
		t.Error("the static pod's container is gone")
	}
}

// Housekeeping keeps mirror pods with the Node from the agent's watch of
// it: no request for the Node every 2 s.
func TestHousekeepingReadsTheWatchedNode(t *testing.T) {
	ta := newTestAgent(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid"}}
	if _, err := ta.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ta.a.node.Run(ctx) }()
	done := make(chan struct{})
	go func() { _ = ta.a.watchNode(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := ta.a.nodeWatch.Node(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the node watch did not see the node")
		}
		time.Sleep(2 * time.Millisecond)
	}
	ta.a.workers = newPodWorkers(ctx, ta.a.syncPod)
	ta.client.ClearActions()
	ta.a.housekeeping(ctx)
	for _, act := range ta.client.Actions() {
		if act.GetVerb() == "get" && act.GetResource().Resource == "nodes" {
			t.Errorf("housekeeping read the Node from the apiserver: %v", act)
		}
	}
	if got, err := ta.a.ownNode(ctx); err != nil || got.UID != "node-uid" {
		t.Errorf("ownNode = %v, %v", got, err)
	}
	cancel()
	<-done
}

// TestSyncPodActiveDeadline: a running pod whose activeDeadlineSeconds is
// shortened below its run time is killed and reported Failed with reason
// DeadlineExceeded (the Pods conformance spec updates it on a running
// pod); before that, the sync comes back when the deadline falls due.
func TestSyncPodActiveDeadline(t *testing.T) {
	ta := newTestAgent(t)
	pod := apiPod(corev1.RestartPolicyAlways, "k1s.local/busybox:1.36")
	pod.Generation = 1
	ta.a.pods.SetAPIPod(pod)
	ctx := context.Background()
	if requeue, _ := ta.a.syncPod(ctx, pod); requeue != 30*time.Second {
		t.Fatalf("requeue = %v, want 30s without a deadline", requeue)
	}
	if st := ta.status(t, pod.UID); st.Phase != corev1.PodRunning || st.ObservedGeneration != 1 {
		t.Fatalf("phase %s observedGeneration %d; want Running, 1", st.Phase, st.ObservedGeneration)
	}

	ta.clock.Step(10 * time.Second)
	updated := pod.DeepCopy()
	updated.Generation = 2
	updated.Spec.ActiveDeadlineSeconds = ptr.To[int64](25)
	ta.a.pods.SetAPIPod(updated)
	requeue, _ := ta.a.syncPod(ctx, updated)
	if requeue != 15*time.Second {
		t.Errorf("requeue = %v, want the 15s left of the deadline", requeue)
	}
	if st := ta.status(t, pod.UID); st.Phase != corev1.PodRunning || st.ObservedGeneration != 2 {
		t.Errorf("phase %s observedGeneration %d; want Running, 2", st.Phase, st.ObservedGeneration)
	}

	ta.clock.Step(15 * time.Second)
	if requeue, _ := ta.a.syncPod(ctx, updated); requeue != 0 {
		t.Errorf("requeue = %v after the deadline, want 0", requeue)
	}
	st := ta.status(t, pod.UID)
	if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" {
		t.Errorf("phase %s reason %q; want Failed, DeadlineExceeded", st.Phase, st.Reason)
	}
	ta.rt.Lock()
	defer ta.rt.Unlock()
	for id, c := range ta.rt.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s still runs past the deadline", id)
		}
	}
}
