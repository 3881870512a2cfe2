package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

const (
	busybox = "k1s.local/busybox:1.36"
	testapp = "k1s.local/testapp:1"
)

func container(name, image string, command ...string) corev1.Container {
	return corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullNever, Command: command}
}

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      framework.NodeName,
			Containers:                    containers,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
		},
	}
}

func create(t *testing.T, c kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
}

// TestNode runs the whole node: one k1s server with the agent and
// containerd, pods with real containers, then a restart.
func TestNode(t *testing.T) {
	s := framework.NewNodeServer(t)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()

	t.Run("the node's labels, the control-plane role among them", func(t *testing.T) {
		want := map[string]string{
			corev1.LabelHostname:                    framework.NodeName,
			corev1.LabelOSStable:                    "linux",
			"node-role.kubernetes.io/control-plane": "true",
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			n, err := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for k, v := range want {
				if n.Labels[k] != v {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			n, _ := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
			t.Fatalf("node labels %v, want %v among them", n.GetLabels(), want)
		}
	})

	t.Run("two containers: logs, exec, port-forward, pod IP", func(t *testing.T) {
		create(t, c, newPod("two",
			corev1.Container{Name: "web", Image: testapp, ImagePullPolicy: corev1.PullNever, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}},
			container("shell", busybox, "sh", "-c", "echo hello from shell; exec sleep 3600")))
		p := framework.WaitPod(t, c, "default", "two", 60*time.Second, "both containers running", framework.Running)
		if p.Status.PodIP == "" || !strings.HasPrefix(p.Status.PodIP, "10.42.") {
			t.Fatalf("pod IP %q, want one from 10.42.0.0/16", p.Status.PodIP)
		}
		// The pod's runc shim is k1s's own, started from the data dir
		// and running on one processor (it re-executes itself when
		// containerd starts it with GOMAXPROCS=4).
		assertShimsOneProc(t, s.DataDir)
		// Logs.
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ := s.Kubectl(ctx, "logs", "two", "-c", "shell")
			return strings.Contains(out, "hello from shell"), nil
		}); err != nil {
			out, _ := s.Kubectl(ctx, "logs", "two", "-c", "shell")
			t.Fatalf("kubectl logs: %q", out)
		}
		// Exec returns the command's exit code.
		out, err := s.Kubectl(ctx, "exec", "two", "-c", "shell", "--", "sh", "-c", "echo in-exec; exit 3")
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(out, "in-exec") {
			t.Fatalf("kubectl exec: err %v, output %q; want exit code 3 and the output", err, out)
		}
		// The pod's lo is up (containerd brings it up, not the CNI
		// loopback plugin): one container reaches the other on 127.0.0.1.
		out, err = s.Kubectl(ctx, "exec", "two", "-c", "shell", "--", "wget", "-q", "-O", "-", "http://127.0.0.1:8080/healthz")
		if err != nil || strings.TrimSpace(out) != "ok" {
			t.Fatalf("GET 127.0.0.1:8080/healthz inside the pod: err %v, output %q", err, out)
		}
		// The pod IP answers from the host.
		body := httpGet(t, fmt.Sprintf("http://%s:8080/", p.Status.PodIP))
		if !strings.Contains(body, "two") {
			t.Fatalf("GET pod IP: %q, want the pod's hostname", body)
		}
		// Port-forward reaches the HTTP server.
		port := framework.FreePort(t)
		pf := exec.Command(s.Bin, "kubectl", "port-forward", "pod/two", fmt.Sprintf("%d:8080", port))
		pf.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig)
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
		var got string
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			got = tryGet(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
			return strings.TrimSpace(got) == "ok", nil
		}); err != nil {
			t.Fatalf("port-forward: GET /healthz = %q", got)
		}
	})

	t.Run("a Ready condition changed by someone else is put right", func(t *testing.T) {
		// As the node-lifecycle controller does to a node that stopped
		// reporting: the agent posts the pod's real status again.
		p := framework.WaitPod(t, c, "default", "two", 30*time.Second, "ready", podReady)
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
				p.Status.Conditions[i].Reason = "NodeNotReady"
			}
		}
		if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitPod(t, c, "default", "two", 15*time.Second, "Ready again", podReady)
	})

	t.Run("init containers run in order; a failing one blocks and is retried", func(t *testing.T) {
		p := newPod("inits", container("app", busybox, "sh", "-c", "cat /work/order; exec sleep 3600"))
		p.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		mount := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
		p.Spec.InitContainers = []corev1.Container{
			container("first", busybox, "sh", "-c", "echo first >> /work/order"),
			container("second", busybox, "sh", "-c", "echo second >> /work/order"),
		}
		p.Spec.InitContainers[0].VolumeMounts = mount
		p.Spec.InitContainers[1].VolumeMounts = mount
		p.Spec.Containers[0].VolumeMounts = mount
		create(t, c, p)
		framework.WaitPod(t, c, "default", "inits", 60*time.Second, "running", framework.Running)
		out, _ := s.Kubectl(ctx, "logs", "inits", "-c", "app")
		if strings.TrimSpace(out) != "first\nsecond" {
			t.Fatalf("init containers ran out of order: %q", out)
		}

		bad := newPod("bad-init", container("app", busybox, "sleep", "3600"))
		bad.Spec.InitContainers = []corev1.Container{container("fail", busybox, "sh", "-c", "exit 1")}
		create(t, c, bad)
		got := framework.WaitPod(t, c, "default", "bad-init", 60*time.Second, "init retried", func(p *corev1.Pod) bool {
			return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].RestartCount >= 1
		})
		if got.Status.Phase != corev1.PodPending || got.Status.ContainerStatuses[0].State.Waiting == nil ||
			got.Status.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
			t.Fatalf("app container must wait while init fails: phase %s, %+v", got.Status.Phase, got.Status.ContainerStatuses)
		}
	})

	t.Run("restart policies, back-off and phases", func(t *testing.T) {
		always := newPod("crash", container("c", busybox, "sh", "-c", "echo boom; exit 2"))
		create(t, c, always)
		p := framework.WaitPod(t, c, "default", "crash", 90*time.Second, "CrashLoopBackOff after restarts", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount >= 2 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CrashLoopBackOff"
		})
		cs := p.Status.ContainerStatuses[0]
		if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 2 {
			t.Fatalf("lastState: %+v, want terminated with exit code 2", cs.LastTerminationState)
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Fatalf("a crash-looping pod with restartPolicy Always is Running, got %s", p.Status.Phase)
		}

		onFailure := newPod("onfailure", container("c", busybox, "sh", "-c", "exit 0"))
		onFailure.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		create(t, c, onFailure)
		p = framework.WaitPod(t, c, "default", "onfailure", 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Fatalf("OnFailure restarted a successful container")
		}

		never := newPod("never", container("c", busybox, "sh", "-c", "exit 7"))
		never.Spec.RestartPolicy = corev1.RestartPolicyNever
		create(t, c, never)
		p = framework.WaitPod(t, c, "default", "never", 60*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 7 || term.Reason != "Error" || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Fatalf("Never: %+v", p.Status.ContainerStatuses[0])
		}
	})

	t.Run("delete with a grace period runs preStop and leaves nothing behind", func(t *testing.T) {
		hostDir := t.TempDir()
		p := newPod("graceful", container("c", busybox, "sh", "-c", "trap 'echo term >> /host/marker; exit 0' TERM; while true; do sleep 1; done"))
		p.Spec.Volumes = []corev1.Volume{
			{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
		}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mem", MountPath: "/mem"}, {Name: "host", MountPath: "/host"}}
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo prestop >> /host/marker"}}}}
		create(t, c, p)
		running := framework.WaitPod(t, c, "default", "graceful", 60*time.Second, "running", framework.Running)
		uid := string(running.UID)
		start := time.Now()
		if err := c.CoreV1().Pods("default").Delete(ctx, "graceful", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](10)}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Pods("default").Get(ctx, "graceful", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("pod not removed after delete")
		}
		if d := time.Since(start); d > 12*time.Second {
			t.Fatalf("a pod that handles SIGTERM took %s to go, more than its 10s grace period", d)
		}
		marker, _ := os.ReadFile(filepath.Join(hostDir, "marker"))
		if strings.TrimSpace(string(marker)) != "prestop\nterm" {
			t.Errorf("want the preStop hook, then SIGTERM; the container recorded %q", marker)
		}
		// Nothing of the pod remains: no pod dir, no mount, no netns of it.
		podDir := filepath.Join(s.DataDir, "agent", "pods", uid)
		if _, err := os.Stat(podDir); !os.IsNotExist(err) {
			t.Errorf("pod directory %s still exists", podDir)
		}
		mounts, _ := os.ReadFile("/proc/mounts")
		if strings.Contains(string(mounts), uid) {
			t.Errorf("a mount of the pod remains")
		}
		if out, _ := exec.Command(s.Bin, "kubectl", "get", "--raw", "/api/v1/nodes/"+framework.NodeName+"/proxy/pods").CombinedOutput(); strings.Contains(string(out), uid) {
			t.Errorf("the agent still lists the deleted pod")
		}
	})

	t.Run("missing images: Never and IfNotPresent fail with clear events", func(t *testing.T) {
		create(t, c, newPod("never-pull", container("c", "k1s.local/absent:1")))
		framework.WaitPod(t, c, "default", "never-pull", 30*time.Second, "ErrImageNeverPull", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ErrImageNeverPull"
		})
		ifp := newPod("if-not-present", container("c", "k1s.local/absent:1"))
		ifp.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		create(t, c, ifp)
		framework.WaitPod(t, c, "default", "if-not-present", 60*time.Second, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && (cs[0].State.Waiting.Reason == "ErrImagePull" || cs[0].State.Waiting.Reason == "ImagePullBackOff")
		})
		evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=never-pull"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs.Items {
			if e.Reason == "ErrImageNeverPull" && strings.Contains(e.Message, "is not present with pull policy of Never") {
				found = true
			}
		}
		if !found {
			t.Errorf("no ErrImageNeverPull event with a clear message: %+v", evs.Items)
		}
		// A bad manifest never reaches the agent.
		bad := newPod("bad", corev1.Container{Name: "Bad_Name", Image: busybox})
		if _, err := c.CoreV1().Pods("default").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("invalid pod: want 422, got %v", err)
		}
	})

	t.Run("agent API refuses unauthenticated and unauthorized callers", func(t *testing.T) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Get("https://127.0.0.1:10250/pods")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET /pods: %d, want 401", resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:10250/pods", nil)
		req.Header.Set("Authorization", "Bearer not-a-token")
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("bad token GET /pods: %d, want 401", resp.StatusCode)
		}
		// A real service-account token without rights on nodes/proxy: 403.
		if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		out, err := s.Kubectl(ctx, "create", "token", "nobody")
		if err != nil {
			t.Fatalf("create token: %v %s", err, out)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(out))
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("unauthorized service account GET /pods: %d %s, want 403", resp.StatusCode, body)
		}
	})

	t.Run("a static pod runs and gets a mirror pod", func(t *testing.T) {
		manifest := `apiVersion: v1
kind: Pod
metadata: {name: static-web}
spec:
  containers:
  - {name: web, image: k1s.local/testapp:1, imagePullPolicy: Never}
`
		dir := filepath.Join(s.DataDir, "agent", "pod-manifests")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "static-web.yaml"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		name := "static-web-" + framework.NodeName
		p := framework.WaitPod(t, c, "default", name, 90*time.Second, "mirror pod running", framework.Running)
		if p.Annotations["kubernetes.io/config.mirror"] == "" {
			t.Fatalf("pod %s is not a mirror pod: %v", name, p.Annotations)
		}
	})

	t.Run("hostPort, hostNetwork, resolv.conf, environment and security context", func(t *testing.T) {
		hostPort := framework.FreePort(t)
		hp := newPod("hostport", corev1.Container{Name: "web", Image: testapp, ImagePullPolicy: corev1.PullNever,
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: int32(hostPort)}}})
		create(t, c, hp)
		framework.WaitPod(t, c, "default", "hostport", 60*time.Second, "running", framework.Running)
		if body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", hostPort)); !strings.Contains(body, "hostport") {
			t.Errorf("hostPort %d on loopback: %q", hostPort, body)
		}

		netPort := framework.FreePort(t)
		hn := newPod("hostnet", corev1.Container{Name: "web", Image: testapp, ImagePullPolicy: corev1.PullNever,
			Args: []string{"-port", fmt.Sprint(netPort)}})
		hn.Spec.HostNetwork = true
		create(t, c, hn)
		p := framework.WaitPod(t, c, "default", "hostnet", 60*time.Second, "running", framework.Running)
		if p.Status.PodIP != p.Status.HostIP {
			t.Errorf("hostNetwork pod IP %s, want the host IP %s", p.Status.PodIP, p.Status.HostIP)
		}
		if body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", netPort)); strings.TrimSpace(body) != "ok" {
			t.Errorf("hostNetwork pod on loopback port %d: %q", netPort, body)
		}

		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "env-cm"}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sc := newPod("security", container("c", busybox, "sh", "-c", "id -u; id -g; echo $MY_POD $COLOR $GREETING; cat /etc/resolv.conf; touch /ro-test 2>&1 || echo read-only; exec sleep 3600"))
		sc.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: "MY_POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "color"}}},
			{Name: "GREETING", Value: "hi-$(COLOR)"},
		}
		sc.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](1234), RunAsGroup: ptr.To[int64](5678), ReadOnlyRootFilesystem: ptr.To(true),
		}
		create(t, c, sc)
		framework.WaitPod(t, c, "default", "security", 60*time.Second, "running", framework.Running)
		var out string
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ = s.Kubectl(ctx, "logs", "security")
			return strings.Contains(out, "nameserver"), nil
		})
		for _, want := range []string{"1234\n5678", "security blue hi-blue", "nameserver 10.43.0.10", "search default.svc.cluster.local svc.cluster.local cluster.local", "options ndots:5", "read-only"} {
			if !strings.Contains(out, want) {
				t.Errorf("container output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("readiness and liveness probes", func(t *testing.T) {
		probe := func(path string) *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 1, FailureThreshold: 2}
		}
		ready := newPod("ready-later", corev1.Container{Name: "web", Image: testapp, ImagePullPolicy: corev1.PullNever,
			Args: []string{"-ready-after", "4"}, ReadinessProbe: probe("/ready")})
		create(t, c, ready)
		p := framework.WaitPod(t, c, "default", "ready-later", 60*time.Second, "running", framework.Running)
		if p.Status.ContainerStatuses[0].Ready && time.Since(p.Status.StartTime.Time) < 3*time.Second {
			t.Errorf("container Ready before its readiness probe could pass")
		}
		framework.WaitPod(t, c, "default", "ready-later", 30*time.Second, "Ready", func(p *corev1.Pod) bool {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return true
				}
			}
			return false
		})

		sick := newPod("sick", corev1.Container{Name: "web", Image: testapp, ImagePullPolicy: corev1.PullNever,
			Args: []string{"-fail-health"}, LivenessProbe: probe("/healthz")})
		create(t, c, sick)
		got := framework.WaitPod(t, c, "default", "sick", 60*time.Second, "restarted by its liveness probe", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
		})
		if lt := got.Status.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil {
			t.Errorf("no lastState after a liveness restart: %+v", got.Status.ContainerStatuses[0])
		}
	})

	t.Run("stopping and restarting k1s leaves containers running", func(t *testing.T) {
		before := framework.WaitPod(t, c, "default", "two", 10*time.Second, "running", framework.Running)
		s.Stop(t)
		// While k1s is down, the pod still answers.
		if body := httpGet(t, fmt.Sprintf("http://%s:8080/", before.Status.PodIP)); !strings.Contains(body, "two") {
			t.Fatalf("pod does not answer while k1s is stopped: %q", body)
		}
		s.Start(t)
		s.WaitNodeReady(t, 60*time.Second)
		c = s.Client(t)
		after := framework.WaitPod(t, c, "default", "two", 30*time.Second, "running", framework.Running)
		for i, cs := range after.Status.ContainerStatuses {
			old := before.Status.ContainerStatuses[i]
			if cs.ContainerID != old.ContainerID || cs.RestartCount != old.RestartCount {
				t.Errorf("container %s changed across the restart: %s/%d → %s/%d", cs.Name, old.ContainerID, old.RestartCount, cs.ContainerID, cs.RestartCount)
			}
		}
	})

	// The apiserver keeps default/kubernetes's Endpoints every 10 s; the
	// deprecation warning each request draws is not logged.
	if n := strings.Count(s.Log(), "v1 Endpoints is deprecated"); n > 0 {
		t.Errorf("the server's log holds %d Endpoints deprecation warnings", n)
	}
}

func tryGet(url string) string {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	var body string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		body = tryGet(url)
		return body != "", nil
	})
	return body
}

// assertShimsOneProc checks that there is a runc shim started from
// dataDir and that every such shim has GOMAXPROCS=1 in its environment.
func assertShimsOneProc(t *testing.T, dataDir string) {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range procs {
		cmdline, err := os.ReadFile(f)
		if err != nil {
			continue // gone
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if !strings.HasPrefix(argv0, dataDir+"/") || filepath.Base(argv0) != "containerd-shim-runc-v2" {
			continue
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(f), "environ"))
		if err != nil {
			continue
		}
		found++
		vars := strings.Split(string(env), "\x00")
		if !slices.Contains(vars, "GOMAXPROCS=1") {
			t.Errorf("shim %s runs without GOMAXPROCS=1: %q", filepath.Dir(f), slices.DeleteFunc(vars, func(v string) bool { return !strings.HasPrefix(v, "GOMAXPROCS=") }))
		}
	}
	if found == 0 {
		t.Errorf("no runc shim started from %s is running", dataDir)
	}
}
