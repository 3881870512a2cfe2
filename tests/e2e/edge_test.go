package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/nodeautonomy"
	"github.com/k1s/k1s/tests/e2e/framework"
)

// edgeTestIP is the test's own address on the bridge: node 2's link to
// the server (10.99.0.1) is cut, the test still reaches node 2's API.
const edgeTestIP = "10.99.0.9"

// startEdgeAgent starts node 2 with --edge-autonomy.
func (n *twoNodes) startEdgeAgent(t *testing.T, token string) {
	t.Helper()
	log, err := os.OpenFile(n.agentLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	n.agent = n.agentCmd(append(n.agentArgs(token), "--edge-autonomy")...)
	n.agent.Stdout, n.agent.Stderr = log, log
	n.agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.agent.Wait(); log.Close() }()
}

// cutLink drops, inside node 2's namespace, every packet to or from the
// server's address; restore takes the rule away.
func (n *twoNodes) cutLink(t *testing.T) (restore func()) {
	t.Helper()
	nft := exec.Command("ip", "netns", "exec", n.netns, "nft", "-f", "-")
	nft.Stdin = strings.NewReader(fmt.Sprintf(`table inet e2e-edge {
	chain cut_output {
		type filter hook output priority -300;
		ip daddr %[1]s drop
	}
	chain cut_input {
		type filter hook input priority -300;
		ip saddr %[1]s drop
	}
	chain cut_forward {
		type filter hook forward priority -300;
		ip daddr %[1]s drop
		ip saddr %[1]s drop
	}
}
`, n.serverIP))
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("ip", "netns", "exec", n.netns, "nft", "delete", "table", "inet", "e2e-edge").CombinedOutput(); err != nil {
			t.Errorf("restore node 2's link: %v: %s", err, out)
		}
	}
	t.Cleanup(restore)
	return restore
}

// connectProxy is an HTTP CONNECT proxy on loopback that dials from the
// test's own bridge address: the exec client reaches node 2 without the
// server's address, which node 2 no longer answers.
func connectProxy(t *testing.T) *url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(edgeTestIP)}, Timeout: 5 * time.Second}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil || req.Method != http.MethodConnect {
					return
				}
				up, err := dialer.Dial("tcp", req.Host)
				if err != nil {
					fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
					return
				}
				defer up.Close()
				fmt.Fprintf(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
				go func() { _, _ = io.Copy(up, conn) }()
				_, _ = io.Copy(conn, up)
			}()
		}
	}()
	return &url.URL{Scheme: "http", Host: l.Addr().String()}
}

// execOnAgent runs cmd in a container through node 2's own API (not the
// apiserver's proxy), with the cluster admin's client certificate.
func (n *twoNodes) execOnAgent(ctx context.Context, t *testing.T, proxy *url.URL, pod, container string, cmd ...string) (string, error) {
	cfg := &rest.Config{
		Host: "https://" + net.JoinHostPort(n.agentIP, "10250"),
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: true,
			CertFile: filepath.Join(n.server.DataDir, "server", "tls", "client-admin.crt"),
			KeyFile:  filepath.Join(n.server.DataDir, "server", "tls", "client-admin.key"),
		},
		Proxy: http.ProxyURL(proxy),
	}
	q := url.Values{"output": {"1"}, "error": {"1"}, "command": cmd}
	u, _ := url.Parse(fmt.Sprintf("%s/exec/default/%s/%s?%s", cfg.Host, pod, container, q.Encode()))
	ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// agentContainers lists node 2's containers of pod (by name) through the
// CRI of its containerd.
func (n *twoNodes) agentContainers(t *testing.T, pod string) []*runtimeapi.Container {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(n.agentRun, "containerd", "containerd.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := runtimeapi.NewRuntimeServiceClient(conn).ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": "default"},
	}})
	if err != nil {
		return nil // containerd not up
	}
	return resp.Containers
}

// runningContainer is node 2's running container of pod, if any.
func (n *twoNodes) runningContainer(t *testing.T, pod string) (*runtimeapi.Container, bool) {
	for _, c := range n.agentContainers(t, pod) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c, true
		}
	}
	return nil, false
}

// maxAttempt is the highest attempt among pod's containers (-1: none).
func (n *twoNodes) maxAttempt(t *testing.T, pod string) int {
	m := -1
	for _, c := range n.agentContainers(t, pod) {
		if a := int(c.GetMetadata().GetAttempt()); a > m {
			m = a
		}
	}
	return m
}

// TestEdgeAutonomy: node 2 (--edge-autonomy) cut off from the server keeps
// its pods running, restarts a crashing container, answers its Service by
// name from its checkpoint, serves exec on its own API; restarted from
// scratch (killall) while cut off it runs its pods from the checkpoint;
// when the link returns it reconciles without restarting what runs.
func TestEdgeAutonomy(t *testing.T) {
	n := setUpTwoNodes(t)
	ctx := context.Background()
	c := n.server.Client(t)
	tokenBytes, err := os.ReadFile(filepath.Join(n.server.DataDir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "addr", "add", edgeTestIP+"/24", "dev", n.bridge).CombinedOutput(); err != nil {
		t.Fatalf("test address: %v: %s", err, out)
	}
	proxy := connectProxy(t)

	n.startEdgeAgent(t, strings.TrimSpace(string(tokenBytes)))
	node2 := waitNodeReady(t, c, agentNodeName, 90*time.Second)
	if !nodeautonomy.IsAutonomous(node2) || node2.Labels[nodeautonomy.Label] != nodeautonomy.Value {
		t.Errorf("node 2 not marked autonomous: annotations %v labels %v", node2.Annotations, node2.Labels)
	}
	waitServiceAccount(t, c, "default")

	// A Deployment whose pods read a ConfigMap (volume and environment),
	// its Service, a client and a crashing pod, all on node 2.
	onNode2 := map[string]string{corev1.LabelHostname: agentNodeName}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config"}, Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  onNode2,
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Volumes:                       []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}},
					Containers: []corev1.Container{{
						Name: "web", Image: busybox, ImagePullPolicy: corev1.PullNever,
						Command:      []string{"sh", "-c", `mkdir -p /www && echo "$GREETING $(cat /config/greeting)" > /www/index.html && exec httpd -f -p 8080 -h /www`},
						Env:          []corev1.EnvVar{{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, Key: "greeting"}}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}},
					}},
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := func(name string, nodeName string, cmd ...string) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeSelector: onNode2, NodeName: nodeName,
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:                    []corev1.Container{{Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: cmd}},
			},
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bare("client", "", "sleep", "3600")
	bare("gone", "", "sleep", "3600")
	// A pod that tolerates an unreachable node for 2 s only: on an
	// ordinary node the taint manager deletes it 2 s after the node's
	// heartbeats stop; on an autonomous one it stays.
	shortLived := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tolerant"},
		Spec: corev1.PodSpec{
			NodeSelector:                  onNode2,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](2)},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](2)},
			},
			Containers: []corev1.Container{{Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}},
		},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, shortLived, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitPod(t, c, "default", "tolerant", 90*time.Second, "running", framework.Running)
	bare("crasher", "", "sh", "-c", "sleep 2; exit 1")
	webPods := func() []string {
		var names []string
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, nil
			}
			names = names[:0]
			for i := range list.Items {
				if list.Items[i].DeletionTimestamp == nil && framework.Running(&list.Items[i]) {
					names = append(names, list.Items[i].Name)
				}
			}
			return len(names) == 2, nil
		}); err != nil {
			t.Fatalf("web pods not running: %v", names)
		}
		sort.Strings(names)
		return names
	}
	web := webPods()
	for _, p := range []string{"client", "gone"} {
		framework.WaitPod(t, c, "default", p, 90*time.Second, "running", framework.Running)
	}
	framework.WaitPod(t, c, "default", "crasher", 90*time.Second, "restarted", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	wantBody := "hello hello"
	get := func(t *testing.T, what string, within time.Duration) {
		t.Helper()
		var out string
		var err error
		if perr := wait.PollUntilContextTimeout(ctx, time.Second, within, true, func(ctx context.Context) (bool, error) {
			out, err = n.execOnAgent(ctx, t, proxy, "client", "c", "wget", "-q", "-O", "-", "http://web/")
			return err == nil && strings.TrimSpace(out) == wantBody, nil
		}); perr != nil {
			b, _ := os.ReadFile(n.agentLog)
			t.Fatalf("%s: GET http://web/ from the client through node 2's API: %q, %v\nagent log:\n%s", what, out, err, tail(b, 6000))
		}
	}
	get(t, "connected", 60*time.Second)
	ids := map[string]string{}
	for _, p := range append([]string{"client"}, web...) {
		ct, ok := n.runningContainer(t, p)
		if !ok {
			t.Fatalf("%s: no running container on node 2", p)
		}
		ids[p] = ct.Id
	}

	restore := n.cutLink(t)
	t.Run("cut off, node 2 keeps serving", func(t *testing.T) {
		// The server cannot reach node 2 (nor node 2 the server).
		if out, err := n.server.Kubectl(ctx, "exec", "client", "--request-timeout=5s", "--", "true"); err == nil {
			t.Fatalf("exec through the server still works: the link is not cut (%s)", out)
		}
		get(t, "cut off", 30*time.Second)
		before := n.maxAttempt(t, "crasher")
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 150*time.Second, true, func(context.Context) (bool, error) {
			return n.maxAttempt(t, "crasher") > before, nil
		}); err != nil {
			t.Errorf("the crashing container was not restarted while cut off (attempt %d)", before)
		}
		for p, id := range ids {
			if ct, ok := n.runningContainer(t, p); !ok || ct.Id != id {
				t.Errorf("%s: container %s no longer runs (now %v)", p, id, ct)
			}
		}
	})

	t.Run("restarted from scratch while cut off, node 2 runs its pods from its checkpoint", func(t *testing.T) {
		n.stopAgent(t, true)
		for p := range ids {
			if _, ok := n.runningContainer(t, p); ok {
				t.Fatalf("%s still runs after killall", p)
			}
		}
		start := time.Now()
		n.startEdgeAgent(t, "")
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
			for p := range ids {
				if _, ok := n.runningContainer(t, p); !ok {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			b, _ := os.ReadFile(n.agentLog)
			t.Fatalf("node 2's pods not running from its checkpoint:\nagent log:\n%s", tail(b, 8000))
		}
		took := time.Since(start)
		t.Logf("node 2 started cut off: its %d pods running after %s", len(ids), took.Round(10*time.Millisecond))
		if took > 10*time.Second {
			b, _ := os.ReadFile(n.agentLog)
			t.Logf("slow start; agent log:\n%s", tail(b, 12000))
		}
		// The proxy and DNS from the checkpoint, the ConfigMap too.
		get(t, "after the restart", 60*time.Second)
		for p := range ids {
			ct, _ := n.runningContainer(t, p)
			ids[p] = ct.Id
		}
	})
	if t.Failed() {
		return
	}

	t.Run("the server does not evict an autonomous node's pods, and does once the marker is gone", func(t *testing.T) {
		var node *corev1.Node
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 120*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := c.CoreV1().Nodes().Get(ctx, agentNodeName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			node = got
			for _, taint := range got.Spec.Taints {
				if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("node 2 never got the unreachable NoExecute taint: %+v", node.Spec.Taints)
		}
		// Well past the pod's 2 s toleration.
		time.Sleep(6 * time.Second)
		p, err := c.CoreV1().Pods("default").Get(ctx, "tolerant", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("the pod tolerating 2 s on the autonomous node was evicted: %v %v", err, p.DeletionTimestamp)
		}
		// Without the marker the node is an ordinary one: upstream's
		// taint-based eviction applies. (The agent sets the marker again
		// when it registers on reconnect.)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, nodeautonomy.Annotation)
		if _, err := c.CoreV1().Nodes().Patch(ctx, agentNodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods("default").Get(ctx, "tolerant", metav1.GetOptions{})
			return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), nil
		}); err != nil {
			t.Errorf("with the marker removed, the pod tolerating 2 s was not evicted")
		}
	})

	// Meanwhile in the apiserver: one of node 2's pods is deleted, a new
	// one is bound to it.
	if err := c.CoreV1().Pods("default").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	bare("fresh", agentNodeName, "sleep", "3600")
	restore()

	t.Run("reconnected, node 2 reconciles", func(t *testing.T) {
		waitNodeReady(t, c, agentNodeName, 120*time.Second)
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := c.CoreV1().Nodes().Get(ctx, agentNodeName, metav1.GetOptions{})
			return err == nil && nodeautonomy.IsAutonomous(got), nil
		}); err != nil {
			t.Errorf("node 2 is not marked autonomous again after it reconnected")
		}
		framework.WaitPod(t, c, "default", "fresh", 90*time.Second, "running", framework.Running)
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Pods("default").Get(ctx, "gone", metav1.GetOptions{})
			_, running := n.runningContainer(t, "gone")
			return apierrors.IsNotFound(err) && !running, nil
		}); err != nil {
			t.Errorf("the pod deleted while node 2 was away still runs or exists")
		}
		for p, id := range ids {
			ct, ok := n.runningContainer(t, p)
			if !ok || ct.Id != id {
				t.Errorf("%s: container %s restarted on reconnect (now %v)", p, id, ct)
				continue
			}
			// The apiserver's status names the same container, with the
			// restart count it had.
			var pod *corev1.Pod
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := c.CoreV1().Pods("default").Get(ctx, p, metav1.GetOptions{})
				if err == nil {
					pod = got
				}
				return pod != nil && len(pod.Status.ContainerStatuses) == 1 && strings.HasSuffix(pod.Status.ContainerStatuses[0].ContainerID, id), nil
			}); err != nil {
				b, _ := os.ReadFile(n.agentLog)
				t.Fatalf("%s: the apiserver's status does not name container %s: %+v\nagent log:\n%s", p, id, pod.Status, tail(b, 8000))
			}
			if rc := pod.Status.ContainerStatuses[0].RestartCount; fmt.Sprint(rc) != ct.Annotations["io.kubernetes.container.restartCount"] {
				t.Errorf("%s: restart count %d in the API, %s on the node", p, rc, ct.Annotations["io.kubernetes.container.restartCount"])
			}
		}
		get(t, "reconnected", 30*time.Second)
	})
}

// TestEdgeAutonomyStartBench measures (K1S_BENCH_EDGE=1; docs/BENCHMARKS.md)
// how long node 2, cut off from the server and started after `k1s
// killall`, takes from its start to every checkpointed pod Running (its
// containers running, seen through CRI). K1S_BENCH_EDGE_PODS pods (30),
// K1S_BENCH_EDGE_RUNS runs (5).
func TestEdgeAutonomyStartBench(t *testing.T) {
	if os.Getenv("K1S_BENCH_EDGE") != "1" {
		t.Skip("set K1S_BENCH_EDGE=1 to run the edge start benchmark")
	}
	pods, runs := 30, 5
	fmt.Sscan(os.Getenv("K1S_BENCH_EDGE_PODS"), &pods)
	fmt.Sscan(os.Getenv("K1S_BENCH_EDGE_RUNS"), &runs)
	n := setUpTwoNodes(t)
	ctx := context.Background()
	c := n.server.Client(t)
	tokenBytes, err := os.ReadFile(filepath.Join(n.server.DataDir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	n.startEdgeAgent(t, strings.TrimSpace(string(tokenBytes)))
	waitNodeReady(t, c, agentNodeName, 90*time.Second)
	waitServiceAccount(t, c, "default")
	var names []string
	for i := range pods {
		name := fmt.Sprintf("bench-%02d", i)
		names = append(names, name)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeName: agentNodeName, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}},
			},
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		framework.WaitPod(t, c, "default", name, 180*time.Second, "running", framework.Running)
	}
	n.cutLink(t)
	allRunning := func() bool {
		conn, err := grpc.NewClient("unix://"+filepath.Join(n.agentRun, "containerd", "containerd.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false
		}
		defer conn.Close()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resp, err := runtimeapi.NewRuntimeServiceClient(conn).ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		}})
		if err != nil {
			return false
		}
		running := map[string]bool{}
		for _, ct := range resp.Containers {
			running[ct.Labels["io.kubernetes.pod.name"]] = true
		}
		for _, name := range names {
			if !running[name] {
				return false
			}
		}
		return true
	}
	var took []time.Duration
	for range runs {
		n.stopAgent(t, true)
		start := time.Now()
		n.startEdgeAgent(t, "")
		for !allRunning() {
			if time.Since(start) > 3*time.Minute {
				b, _ := os.ReadFile(n.agentLog)
				t.Fatalf("pods not all running after 3 min:\n%s", tail(b, 6000))
			}
			time.Sleep(50 * time.Millisecond)
		}
		took = append(took, time.Since(start))
		t.Logf("run %d: %d pods running %s after the agent started", len(took), pods, took[len(took)-1].Round(10*time.Millisecond))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("agent start, no server reachable → %d checkpointed pods running: min %s, median %s, max %s (%d runs)",
		pods, took[0].Round(10*time.Millisecond), took[len(took)/2].Round(10*time.Millisecond), took[len(took)-1].Round(10*time.Millisecond), len(took))
}
