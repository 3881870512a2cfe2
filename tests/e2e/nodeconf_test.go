package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// TestNodeConformance covers, with real containers, what the upstream
// [Conformance] specs of the node agent check: init containers and
// sidecars, ephemeral containers, status.observedGeneration,
// activeDeadlineSeconds changed on a running pod, envFrom prefixes and
// default limits in the downward API, a privileged container and a
// namespaced sysctl.
func TestNodeConformance(t *testing.T) {
	s := framework.NewNodeServer(t)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")

	t.Run("init containers and sidecars", func(t *testing.T) {
		sidecar := container("side", busybox, "sh", "-c", "sleep 2; touch /tmp/started; exec sleep 3600")
		sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		sidecar.StartupProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/started"}}},
			PeriodSeconds: 1, FailureThreshold: 30,
		}
		pod := newPod("inits", container("app", busybox, "sleep", "3600"))
		pod.Spec.InitContainers = []corev1.Container{
			container("init1", busybox, "true"),
			sidecar,
			container("init2", busybox, "true"),
		}
		create(t, c, pod)
		p := framework.WaitPod(t, c, "default", "inits", 90*time.Second, "running and ready", func(p *corev1.Pod) bool {
			return framework.Running(p) && condition(p, corev1.PodReady) == corev1.ConditionTrue
		})
		if got := condition(p, corev1.PodInitialized); got != corev1.ConditionTrue {
			t.Errorf("Initialized = %s, want True", got)
		}
		for _, cs := range p.Status.InitContainerStatuses {
			switch cs.Name {
			case "side":
				if cs.State.Running == nil || cs.Started == nil || !*cs.Started || !cs.Ready {
					t.Errorf("sidecar status %+v, want running, started and ready", cs)
				}
			default:
				if !cs.Ready || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
					t.Errorf("init container %s: ready %v state %+v, want ready and completed", cs.Name, cs.Ready, cs.State)
				}
			}
		}
		// init2 started only once the sidecar's startup probe passed.
		var sideStarted, init2Started time.Time
		for _, cs := range p.Status.InitContainerStatuses {
			switch {
			case cs.Name == "side":
				sideStarted = cs.State.Running.StartedAt.Time
			case cs.Name == "init2" && cs.State.Terminated != nil:
				init2Started = cs.State.Terminated.StartedAt.Time
			}
		}
		if !init2Started.After(sideStarted.Add(time.Second)) {
			t.Errorf("init2 started at %v, the sidecar at %v: init2 did not wait for the sidecar's startup", init2Started, sideStarted)
		}
		deleteAndWait(t, c, "inits")
	})

	t.Run("a failing init container keeps the app containers waiting with PodInitializing", func(t *testing.T) {
		pod := newPod("init-fails", container("app", busybox, "sleep", "3600"))
		pod.Spec.InitContainers = []corev1.Container{container("init1", busybox, "false"), container("init2", busybox, "true")}
		create(t, c, pod)
		p := framework.WaitPod(t, c, "default", "init-fails", 60*time.Second, "init1 restarted", func(p *corev1.Pod) bool {
			return len(p.Status.InitContainerStatuses) == 2 && p.Status.InitContainerStatuses[0].RestartCount >= 1
		})
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", p.Status.Phase)
		}
		for _, cs := range append([]corev1.ContainerStatus{p.Status.InitContainerStatuses[1]}, p.Status.ContainerStatuses...) {
			if cs.State.Waiting == nil || cs.State.Waiting.Reason != "PodInitializing" {
				t.Errorf("%s state %+v, want waiting PodInitializing", cs.Name, cs.State)
			}
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodInitialized && (cond.Status != corev1.ConditionFalse || cond.Message != "containers with incomplete status: [init1 init2]") {
				t.Errorf("Initialized condition %+v", cond)
			}
		}
		deleteAndWait(t, c, "init-fails")
	})

	t.Run("a Never pod with a sidecar completes once its container exits", func(t *testing.T) {
		sidecar := container("side", busybox, "sleep", "3600")
		sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		pod := newPod("sidecar-job", container("app", busybox, "sh", "-c", "sleep 2"))
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.InitContainers = []corev1.Container{sidecar}
		create(t, c, pod)
		framework.WaitPod(t, c, "default", "sidecar-job", 90*time.Second, "Succeeded", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded
		})
		deleteAndWait(t, c, "sidecar-job")
	})

	t.Run("ephemeral container in the target's process namespace", func(t *testing.T) {
		create(t, c, newPod("target", container("app", busybox, "sleep", "3601")))
		p := framework.WaitPod(t, c, "default", "target", 60*time.Second, "running", framework.Running)
		if p.Generation != 1 {
			t.Errorf("generation %d, want 1", p.Generation)
		}
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debugger", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "while true; do echo polo; sleep 1; done"},
				Stdin:   true, TTY: true, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			},
			TargetContainerName: "app",
		}}
		if _, err := pods.UpdateEphemeralContainers(ctx, "target", p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("add an ephemeral container: %v", err)
		}
		p = framework.WaitPod(t, c, "default", "target", 60*time.Second, "ephemeral container running", func(p *corev1.Pod) bool {
			return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil &&
				p.Status.ObservedGeneration == p.Generation
		})
		if p.Generation != 2 {
			t.Errorf("generation %d after adding an ephemeral container, want 2", p.Generation)
		}
		out, err := s.Kubectl(ctx, "exec", "target", "-c", "debugger", "--", "ps")
		if err != nil || !strings.Contains(out, "sleep 3601") {
			t.Errorf("ps in the ephemeral container: err %v, output %q; want the target's sleep 3601", err, out)
		}
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ := s.Kubectl(ctx, "logs", "target", "-c", "debugger")
			return strings.Contains(out, "polo"), nil
		}); err != nil {
			t.Errorf("logs of the ephemeral container never said polo")
		}
		deleteAndWait(t, c, "target")
	})

	t.Run("observedGeneration follows spec updates, activeDeadlineSeconds fails the pod", func(t *testing.T) {
		create(t, c, newPod("deadline", container("app", busybox, "sleep", "3600")))
		framework.WaitPod(t, c, "default", "deadline", 60*time.Second, "running", framework.Running)
		patch := []byte(`{"spec":{"activeDeadlineSeconds":600}}`)
		if _, err := pods.Patch(ctx, "deadline", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitPod(t, c, "default", "deadline", 20*time.Second, "observedGeneration 2", func(p *corev1.Pod) bool {
			return p.Generation == 2 && p.Status.ObservedGeneration == 2
		})
		patch = []byte(`{"spec":{"activeDeadlineSeconds":5}}`)
		if _, err := pods.Patch(ctx, "deadline", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitPod(t, c, "default", "deadline", 60*time.Second, "Failed with DeadlineExceeded", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded"
		})
		deleteAndWait(t, c, "deadline")
	})

	t.Run("in-place resize through pods/resize", func(t *testing.T) {
		app := container("app", busybox, "sleep", "3600")
		app.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}
		create(t, c, newPod("resize", app))
		framework.WaitPod(t, c, "default", "resize", 60*time.Second, "running", framework.Running)
		patch := []byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m","memory":"32Mi"},"limits":{"cpu":"300m","memory":"96Mi"}}}]}}`)
		if _, err := pods.Patch(ctx, "resize", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
			t.Fatalf("patch pods/resize: %v", err)
		}
		p := framework.WaitPod(t, c, "default", "resize", 30*time.Second, "resized", func(p *corev1.Pod) bool {
			r := p.Status.ContainerStatuses[0].Resources
			return p.Status.ObservedGeneration == p.Generation && r != nil && r.Limits.Memory().Value() == 96<<20 && condition(p, corev1.PodResizeInProgress) == ""
		})
		if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 0 || cs.Resources.Limits.Cpu().MilliValue() != 300 || cs.Resources.Requests.Cpu().MilliValue() != 150 {
			t.Errorf("container status after the resize: restarts %d resources %v; want no restart, 150m/300m", cs.RestartCount, cs.Resources)
		}
		// The container's own cgroup says the new memory limit (v2 or v1).
		out, err := s.Kubectl(ctx, "exec", "resize", "--", "sh", "-c", "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes")
		if err != nil || strings.TrimSpace(out) != fmt.Sprint(96<<20) {
			t.Errorf("memory limit in the container's cgroup: err %v, %q; want %d", err, out, 96<<20)
		}
		deleteAndWait(t, c, "resize")
	})

	t.Run("envFrom prefixes, default limits, privileged container, sysctl", func(t *testing.T) {
		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "prefixes"}, Data: map[string]string{"data-1": "value-1"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The process's own environment: busybox sh drops the variables
		// whose names are not shell identifiers from what it passes on.
		app := container("app", busybox, "sh", "-c", "cat /proc/1/environ; echo; sysctl kernel.shm_rmid_forced")
		app.EnvFrom = []corev1.EnvFromSource{
			{Prefix: "1-", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "prefixes"}}},
			{Prefix: "p-", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "prefixes"}}},
		}
		app.Env = []corev1.EnvVar{
			{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "MEMORY_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
		}
		app.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		pod := newPod("envs", app)
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}
		create(t, c, pod)
		framework.WaitPod(t, c, "default", "envs", 60*time.Second, "Succeeded", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded
		})
		out, err := s.Kubectl(ctx, "logs", "envs")
		if err != nil {
			t.Fatal(err)
		}
		node, err := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cpu, mem := node.Status.Allocatable.Cpu(), node.Status.Allocatable.Memory()
		for _, want := range []string{
			"1-data-1=value-1\x00", "p-data-1=value-1\x00",
			fmt.Sprintf("CPU_LIMIT=%d\x00", (cpu.MilliValue()+999)/1000), fmt.Sprintf("MEMORY_LIMIT=%d\x00", mem.Value()),
			"kernel.shm_rmid_forced = 1",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%q", want, out)
			}
		}
		deleteAndWait(t, c, "envs")
	})

	t.Run("admission refuses a pod bound here whose host port or CPU does not fit; a StatefulSet's refused pod is recreated", func(t *testing.T) {
		withPort := func(name string) *corev1.Pod {
			ctr := container("app", busybox, "sleep", "3600")
			ctr.Ports = []corev1.ContainerPort{{Name: "conflict", ContainerPort: 21017, HostPort: 21017}}
			return newPod(name, ctr)
		}
		create(t, c, withPort("holder"))
		framework.WaitPod(t, c, "default", "holder", 60*time.Second, "running", framework.Running)

		rejected := func(name, reason string) {
			t.Helper()
			p := framework.WaitPod(t, c, "default", name, 30*time.Second, "Failed with reason "+reason, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodFailed
			})
			if p.Status.Reason != reason || !strings.HasPrefix(p.Status.Message, "Pod was rejected: ") {
				t.Errorf("pod %s: reason %q message %q, want %s and \"Pod was rejected: …\"", name, p.Status.Reason, p.Status.Message, reason)
			}
			if _, ctrs := framework.RuntimeObjects(t, map[string]string{"io.kubernetes.pod.uid": string(p.UID)}); ctrs != 0 {
				t.Errorf("pod %s was refused but %d of its containers were created", name, ctrs)
			}
		}
		create(t, c, withPort("port-clash"))
		rejected("port-clash", "NodePorts")

		big := container("app", busybox, "sleep", "3600")
		big.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
		create(t, c, newPod("too-big", big))
		rejected("too-big", "OutOfcpu")

		// As the StatefulSet conformance spec: its pod is refused, the
		// controller deletes and recreates it until the port is free.
		tmpl := withPort("")
		ss := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "clash"},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "clash"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "clash"}}, Spec: tmpl.Spec},
			},
		}
		if _, err := c.AppsV1().StatefulSets("default").Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		first := framework.WaitPod(t, c, "default", "clash-0", 30*time.Second, "created", func(*corev1.Pod) bool { return true })
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "clash-0", metav1.GetOptions{})
			return err == nil && p.UID != first.UID, nil
		}); err != nil {
			t.Fatalf("the StatefulSet's refused pod was not recreated: %v", err)
		}
		deleteAndWait(t, c, "holder")
		p := framework.WaitPod(t, c, "default", "clash-0", 90*time.Second, "running once the port is free", framework.Running)
		if p.UID == first.UID {
			t.Errorf("clash-0 runs with its first UID")
		}
		_ = c.AppsV1().StatefulSets("default").Delete(ctx, "clash", metav1.DeleteOptions{})
		for _, name := range []string{"port-clash", "too-big"} {
			_ = pods.Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
}

func condition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// deleteAndWait deletes a pod of the default namespace and waits until
// it is gone.
func deleteAndWait(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	}); err != nil {
		p, _ := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		b, _ := json.Marshal(p.Status)
		t.Fatalf("pod %s not deleted: %s", name, b)
	}
}
