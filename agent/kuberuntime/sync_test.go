package kuberuntime

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

const busybox = "k1s.local/busybox:1.36"

func TestSyncPodCreatesSandboxAndContainers(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(
		corev1.Container{Name: "app", Ports: []corev1.ContainerPort{
			{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
			{ContainerPort: 9090},
		}},
		corev1.Container{Name: "side", Ports: []corev1.ContainerPort{{ContainerPort: 7000, HostPort: 7000, Protocol: corev1.ProtocolSCTP}}},
	)
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"note": "hello"}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)

	res := te.sync(t, pod)
	if res.Err != nil || len(res.Waiting) != 0 || !res.Changed {
		t.Fatalf("SyncPod = %+v, want no error, nothing waiting, and Changed", res)
	}
	if len(te.rt.Sandboxes) != 1 {
		t.Fatalf("sandboxes = %d, want 1", len(te.rt.Sandboxes))
	}
	sb := te.rt.Sandboxes["sb-web-0"]
	if sb == nil {
		t.Fatalf("no sandbox sb-web-0 in %v", te.rt.Sandboxes)
	}
	logDir := filepath.Join(te.logDir, "shop_web_uid-1")
	want := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "uid-1", Attempt: 0},
		Hostname:     "web",
		LogDirectory: logDir,
		DnsConfig: &runtimeapi.DNSConfig{
			Servers:  []string{"10.43.0.10"},
			Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"},
			Options:  []string{"ndots:5"},
		},
		PortMappings: []*runtimeapi.PortMapping{
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
			{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
			{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 7000, HostPort: 7000},
		},
		Labels: map[string]string{
			"app":                         "web",
			"io.kubernetes.pod.name":      "web",
			"io.kubernetes.pod.namespace": "shop",
			"io.kubernetes.pod.uid":       "uid-1",
			"io.kubernetes.managed-by":    "k1s-agent",
		},
		Annotations: map[string]string{"note": "hello"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		}},
	}
	if diff := cmp.Diff(want, sb.Cfg, protocmp.Transform()); diff != "" {
		t.Errorf("sandbox config (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(logDir); err != nil || !fi.IsDir() {
		t.Errorf("pod log directory %s not created: %v", logDir, err)
	}

	for _, name := range []string{"app", "side"} {
		_, c := te.rt.ContainerNamed(t, name)
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("%s state = %v, want running", name, c.State)
		}
		if c.SandboxID != "sb-web-0" {
			t.Errorf("%s sandbox = %s, want sb-web-0", name, c.SandboxID)
		}
		spec := specOf(pod, name)
		wantAnn := map[string]string{
			"io.kubernetes.container.hash":                     strconv.FormatUint(HashContainer(spec), 16),
			"io.kubernetes.container.restartCount":             "0",
			"io.kubernetes.container.terminationMessagePath":   "",
			"io.kubernetes.container.terminationMessagePolicy": "",
			"io.kubernetes.pod.terminationGracePeriod":         "20",
		}
		if diff := cmp.Diff(wantAnn, c.Cfg.Annotations); diff != "" {
			t.Errorf("%s annotations (-want +got):\n%s", name, diff)
		}
		wantLabels := map[string]string{
			"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "shop", "io.kubernetes.pod.uid": "uid-1",
			"io.kubernetes.container.name": name, "io.kubernetes.managed-by": "k1s-agent",
		}
		if diff := cmp.Diff(wantLabels, c.Cfg.Labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", name, diff)
		}
		if c.Cfg.Metadata.GetName() != name || c.Cfg.Metadata.GetAttempt() != 0 {
			t.Errorf("%s metadata = %v", name, c.Cfg.Metadata)
		}
		if got := c.Cfg.Image; got.GetImage() != "sha256:"+busybox || got.GetUserSpecifiedImage() != busybox {
			t.Errorf("%s image = %v, want the image ID and the user's name", name, got)
		}
		if c.Cfg.LogPath != name+"/0.log" {
			t.Errorf("%s log path = %q, want %s/0.log", name, c.Cfg.LogPath, name)
		}
		if !te.events.has("Started") || !te.events.has("Created") {
			t.Errorf("events %v lack Created/Started", te.events.events)
		}
	}
	if got := te.rt.CallsOf("PullImage"); got != 0 || te.images.PullCount() != 0 {
		t.Errorf("pulled a present IfNotPresent image")
	}

	// A second pass over the running pod changes nothing, and says so
	// (the agent then does not read the pod's runtime status again).
	te.rt.ResetCalls()
	if res := te.sync(t, pod); res.Err != nil || len(res.Waiting) != 0 || res.Changed {
		t.Fatalf("second SyncPod = %+v, want nothing done", res)
	}
	for _, call := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer"} {
		if n := te.rt.CallsOf(call); n != 0 {
			t.Errorf("second pass called %s %d times", call, n)
		}
	}
}

func TestSyncPodHostNetwork(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "POD_IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
	}})
	pod.Spec.HostNetwork = true
	pod.Spec.HostPID = true
	if res := te.sync(t, pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	sb := te.rt.Sandboxes["sb-web-0"]
	if sb.Cfg.Hostname != "" {
		t.Errorf("hostname = %q, want none (the node's UTS namespace)", sb.Cfg.Hostname)
	}
	ns := sb.Cfg.Linux.SecurityContext.NamespaceOptions
	if ns.Network != runtimeapi.NamespaceMode_NODE || ns.Pid != runtimeapi.NamespaceMode_NODE || ns.Ipc != runtimeapi.NamespaceMode_POD {
		t.Errorf("namespace options = %v, want network and pid NODE, ipc POD", ns)
	}
	// ClusterFirst under the host network is the node's resolver (none here).
	if len(sb.Cfg.DnsConfig.Servers) != 0 || len(sb.Cfg.DnsConfig.Options) != 0 {
		t.Errorf("DNS = %v, want the host's (empty)", sb.Cfg.DnsConfig)
	}
	_, c := te.rt.ContainerNamed(t, "app")
	env := envMap(c.Cfg.Envs)
	if env["POD_IP"] != "192.168.5.10" || env["POD_IPS"] != "192.168.5.10,fd00::10" {
		t.Errorf("host network pod IP env = %v, want the node's addresses", env)
	}
	// The sandbox reports its host network: the next pass keeps it.
	te.rt.ResetCalls()
	te.sync(t, pod)
	if n := te.rt.CallsOf("RunPodSandbox"); n != 0 {
		t.Errorf("host network sandbox recreated %d times", n)
	}
}

func envMap(kvs []*runtimeapi.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}

func TestSyncPodInitContainersInOrder(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "app"})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "i1", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent},
		{Name: "i2", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent},
	}
	running := func() []string {
		var out []string
		for _, c := range te.status(t, pod).Containers {
			out = append(out, c.Name+"="+string(c.State))
		}
		sort.Strings(out)
		return out
	}
	te.sync(t, pod)
	if got := running(); !cmp.Equal(got, []string{"i1=running"}) {
		t.Fatalf("after first pass: %v, want only i1 running", got)
	}
	if st := te.status(t, pod).FindContainer("i1"); !st.Init {
		t.Errorf("i1 not marked as an init container: %+v", st)
	}
	te.sync(t, pod)
	if got := running(); !cmp.Equal(got, []string{"i1=running"}) {
		t.Fatalf("while i1 runs: %v", got)
	}
	id, _ := te.rt.ContainerNamed(t, "i1")
	te.rt.Exit(t, id, 0)
	te.sync(t, pod)
	if got := running(); !cmp.Equal(got, []string{"i1=exited", "i2=running"}) {
		t.Fatalf("after i1 succeeded: %v", got)
	}
	id, _ = te.rt.ContainerNamed(t, "i2")
	te.rt.Exit(t, id, 0)
	te.sync(t, pod)
	if got := running(); !cmp.Equal(got, []string{"app=running", "i1=exited", "i2=exited"}) {
		t.Fatalf("after i2 succeeded: %v", got)
	}
	if st := te.status(t, pod).FindContainer("app"); st.Init {
		t.Errorf("app marked as an init container")
	}
}

func TestSyncPodRestartBackOff(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "app"})
	te.sync(t, pod)

	id0, _ := te.rt.ContainerNamed(t, "app")
	te.rt.Exit(t, id0, 1)
	if res := te.sync(t, pod); len(res.Waiting) != 0 {
		t.Fatalf("first restart waited: %+v", res.Waiting)
	}
	id1, c1 := te.rt.ContainerNamed(t, "app")
	if id1 == id0 || c1.Cfg.Metadata.Attempt != 1 || c1.Cfg.Annotations[annotationRestarts] != "1" || c1.Cfg.LogPath != "app/1.log" {
		t.Fatalf("restarted container: id %s attempt %d restarts %q log %q, want attempt 1 and app/1.log",
			id1, c1.Cfg.Metadata.Attempt, c1.Cfg.Annotations[annotationRestarts], c1.Cfg.LogPath)
	}

	// It fails again at once: back off 10s.
	te.rt.Exit(t, id1, 1)
	te.rt.ResetCalls()
	res := te.sync(t, pod)
	w, ok := res.Waiting["app"]
	if !ok || w.Reason != ReasonCrashLoopBackOff {
		t.Fatalf("waiting = %+v, want CrashLoopBackOff", res.Waiting)
	}
	if want := "back-off 10s restarting failed container=app pod=web_shop(uid-1)"; w.Message != want {
		t.Errorf("message = %q, want %q", w.Message, want)
	}
	if res.Err != nil {
		t.Errorf("back-off is not an error: %v", res.Err)
	}
	if te.rt.CallsOf("CreateContainer") != 0 {
		t.Errorf("created a container while backing off")
	}
	if !te.events.has("BackOff") {
		t.Errorf("no BackOff event in %v", te.events.events)
	}

	te.clock.Step(9 * time.Second)
	if res := te.sync(t, pod); res.Waiting["app"].Reason != ReasonCrashLoopBackOff {
		t.Fatalf("after 9s: %+v, want still backing off", res.Waiting)
	}
	te.clock.Step(2 * time.Second)
	if res := te.sync(t, pod); len(res.Waiting) != 0 {
		t.Fatalf("after 11s: %+v, want a restart", res.Waiting)
	}
	id2, c2 := te.rt.ContainerNamed(t, "app")
	if c2.Cfg.Metadata.Attempt != 2 {
		t.Fatalf("attempt = %d, want 2", c2.Cfg.Metadata.Attempt)
	}
	// One dead instance is kept for logs --previous; older ones go.
	if got, want := te.rt.ContainerNames(), []string{id1, id2}; !cmp.Equal(got, want) {
		t.Errorf("containers = %v, want %v", got, want)
	}

	// The next failure doubles the back-off.
	te.rt.Exit(t, id2, 1)
	te.clock.Step(15 * time.Second)
	res = te.sync(t, pod)
	if w := res.Waiting["app"]; w.Reason != ReasonCrashLoopBackOff || !strings.HasPrefix(w.Message, "back-off 20s ") {
		t.Fatalf("15s after the third failure: %+v, want a 20s back-off", res.Waiting)
	}
	te.clock.Step(6 * time.Second)
	if res := te.sync(t, pod); len(res.Waiting) != 0 {
		t.Fatalf("21s after the third failure: %+v, want a restart", res.Waiting)
	}
	if _, c := te.rt.ContainerNamed(t, "app"); c.Cfg.Metadata.Attempt != 3 {
		t.Errorf("attempt = %d, want 3", c.Cfg.Metadata.Attempt)
	}
}

func TestSyncPodSandboxRecreatedKeepsRestartCount(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "app"})
	te.sync(t, pod)
	id0, _ := te.rt.ContainerNamed(t, "app")
	// The sandbox dies (e.g. its pause process was killed) and takes the
	// container with it.
	te.rt.Sandboxes["sb-web-0"].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	te.rt.Exit(t, id0, 137)

	te.rt.ResetCalls()
	if res := te.sync(t, pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod = %+v", res)
	}
	if !te.events.has("SandboxChanged") {
		t.Errorf("no SandboxChanged event: %v", te.events.events)
	}
	if te.rt.CallsOf("StopPodSandbox") != 1 {
		t.Errorf("old sandbox not stopped")
	}
	if _, ok := te.rt.Sandboxes["sb-web-1"]; !ok {
		t.Fatalf("no sandbox of attempt 1: %v", te.rt.Sandboxes)
	}
	_, c := te.rt.ContainerNamed(t, "app")
	if c.SandboxID != "sb-web-1" {
		t.Fatalf("container runs in %s, want sb-web-1", c.SandboxID)
	}
	// As upstream, the restart count goes on across sandboxes, so the API
	// count does not drop to 0 and the new log does not reuse 0.log.
	if c.Cfg.Annotations[annotationRestarts] != "1" || c.Cfg.LogPath != "app/1.log" {
		t.Errorf("restart count %q, log %q; want 1 and app/1.log", c.Cfg.Annotations[annotationRestarts], c.Cfg.LogPath)
	}
}

func TestSyncPodImagePolicies(t *testing.T) {
	const missing = "k1s.local/missing:1"
	tests := []struct {
		name    string
		image   string
		policy  corev1.PullPolicy
		pullErr error
		// reasons of successive passes; "" means the container started.
		passes    []string
		pulls     int
		msgSubstr string
	}{
		{name: "Never, absent", image: missing, policy: corev1.PullNever, passes: []string{ReasonErrImageNeverPull, ReasonErrImageNeverPull},
			msgSubstr: `Container image "k1s.local/missing:1" is not present with pull policy of Never`},
		{name: "Never, present", image: busybox, policy: corev1.PullNever, passes: []string{""}},
		{name: "IfNotPresent, present", image: busybox, policy: corev1.PullIfNotPresent, passes: []string{""}},
		{name: "IfNotPresent, absent, pull works", image: missing, policy: corev1.PullIfNotPresent, passes: []string{""}, pulls: 1},
		{name: "IfNotPresent, absent, pull fails then backs off", image: missing, policy: corev1.PullIfNotPresent, pullErr: errBoom,
			passes: []string{ReasonErrImagePull, ReasonImagePullBackOff, ReasonImagePullBackOff}, pulls: 1, msgSubstr: `Back-off pulling image "k1s.local/missing:1"`},
		{name: "Always, present, pull fails", image: busybox, policy: corev1.PullAlways, pullErr: errBoom,
			passes: []string{ReasonErrImagePull}, pulls: 1, msgSubstr: "imagePullPolicy is Always"},
		{name: "Always, present, pull works", image: busybox, policy: corev1.PullAlways, passes: []string{""}, pulls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t, busybox)
			te.images.PullErr = tt.pullErr
			pod := testPod(corev1.Container{Name: "app", Image: tt.image, ImagePullPolicy: tt.policy})
			var last Waiting
			for i, want := range tt.passes {
				res := te.sync(t, pod)
				got := res.Waiting["app"]
				if got.Reason != want {
					t.Fatalf("pass %d: reason %q (%s), want %q", i, got.Reason, got.Message, want)
				}
				if want != "" && res.Err == nil && want != ReasonImagePullBackOff {
					t.Errorf("pass %d: no error for %s", i, want)
				}
				last = got
			}
			if tt.msgSubstr != "" && !strings.Contains(last.Message, tt.msgSubstr) {
				t.Errorf("message %q lacks %q", last.Message, tt.msgSubstr)
			}
			if got := te.images.PullCount(); got != tt.pulls {
				t.Errorf("pulls = %d, want %d", got, tt.pulls)
			}
			started := tt.passes[len(tt.passes)-1] == ""
			if got := te.rt.CallsOf("CreateContainer") > 0; got != started {
				t.Errorf("container created = %v, want %v", got, started)
			}
			if started {
				_, c := te.rt.ContainerNamed(t, "app")
				wantRef := "sha256:" + tt.image
				if tt.pulls > 0 {
					wantRef = "sha256:pulled-" + tt.image
				}
				if c.Cfg.Image.Image != wantRef {
					t.Errorf("image ref = %q, want %q", c.Cfg.Image.Image, wantRef)
				}
			}
		})
	}
}

func TestSyncPodImagePullBackOffExpires(t *testing.T) {
	te := newTestEnv(t)
	te.images.PullErr = errBoom
	pod := testPod(corev1.Container{Name: "app", Image: "k1s.local/missing:1"})
	reason := func() string { return te.sync(t, pod).Waiting["app"].Reason }
	steps := []struct {
		advance time.Duration
		want    string
		pulls   int
	}{
		{0, ReasonErrImagePull, 1},
		{9 * time.Second, ReasonImagePullBackOff, 1},
		{2 * time.Second, ReasonErrImagePull, 2}, // 11s: retried
		{15 * time.Second, ReasonImagePullBackOff, 2},
		{6 * time.Second, ReasonErrImagePull, 3}, // 21s after: back-off was 20s
	}
	for i, s := range steps {
		te.clock.Step(s.advance)
		if got := reason(); got != s.want {
			t.Fatalf("step %d: %q, want %q", i, got, s.want)
		}
		if got := te.images.PullCount(); got != s.pulls {
			t.Fatalf("step %d: %d pulls, want %d", i, got, s.pulls)
		}
	}
	// A successful pull clears the back-off.
	te.images.PullErr = nil
	te.clock.Step(41 * time.Second)
	if got := reason(); got != "" {
		t.Fatalf("after a good pull: %q", got)
	}
}

func TestSyncPodRuntimeFailures(t *testing.T) {
	tests := []struct {
		name      string
		inject    string
		postStart bool
		want      string
		wantEvent string
	}{
		{name: "sandbox fails", inject: "RunPodSandbox", want: ReasonContainerCreating, wantEvent: "FailedCreatePodSandBox"},
		{name: "create fails", inject: "CreateContainer", want: ReasonCreateError, wantEvent: "Failed"},
		{name: "start fails", inject: "StartContainer", want: ReasonRunError, wantEvent: "Failed"},
		{name: "postStart exec fails", inject: "ExecSync:sb-web-0-app-0", postStart: true, want: ReasonPostStartError, wantEvent: "FailedPostStartHook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t, busybox)
			te.rt.Inject(tt.inject, errBoom)
			c := corev1.Container{Name: "app"}
			if tt.postStart {
				c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"touch", "/ready"}}}}
			}
			pod := testPod(c)
			pod.Spec.InitContainers = nil
			res := te.sync(t, pod)
			if got := res.Waiting["app"].Reason; got != tt.want {
				t.Fatalf("reason = %q (%+v), want %q", got, res.Waiting, tt.want)
			}
			if res.Err == nil {
				t.Errorf("no error")
			}
			if !te.events.has(tt.wantEvent) {
				t.Errorf("no %s event in %v", tt.wantEvent, te.events.events)
			}
			if tt.postStart {
				if len(te.rt.Execs) != 1 || !cmp.Equal(te.rt.Execs[0].Cmd, []string{"touch", "/ready"}) {
					t.Errorf("execs = %+v", te.rt.Execs)
				}
				if _, ok := te.rt.Stops["sb-web-0-app-0"]; !ok {
					t.Errorf("container with a failed postStart hook was not stopped")
				}
			}
			// The next pass succeeds.
			if tt.name != "postStart exec fails" {
				te.clock.Step(time.Minute)
				if res := te.sync(t, pod); len(res.Waiting) != 0 {
					t.Errorf("retry: %+v", res.Waiting)
				}
			}
		})
	}
}

func TestSyncPodSandboxFailureMarksEveryContainer(t *testing.T) {
	te := newTestEnv(t, busybox)
	te.rt.Inject("RunPodSandbox", errBoom)
	pod := testPod(corev1.Container{Name: "a"}, corev1.Container{Name: "b"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Image: busybox}}
	res := te.sync(t, pod)
	for _, n := range []string{"i", "a", "b"} {
		if res.Waiting[n].Reason != ReasonContainerCreating {
			t.Errorf("%s: %+v, want ContainerCreating", n, res.Waiting[n])
		}
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "Failed to create pod sandbox: boom") {
		t.Errorf("err = %v", res.Err)
	}
	if len(te.rt.Containers) != 0 {
		t.Errorf("containers created without a sandbox")
	}
}

func TestKillPod(t *testing.T) {
	preStop := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/drain"}}}}
	tests := []struct {
		name           string
		specGrace      *int64
		deletionGrace  *int64
		override       *int64
		skeleton       bool // the agent knows only the pod's name and UID
		execDelay      time.Duration
		wantTimeout    int64
		wantPreStopRun bool
	}{
		{name: "spec grace", specGrace: ptr.To[int64](20), wantTimeout: 20, wantPreStopRun: true},
		{name: "default grace", wantTimeout: 30, wantPreStopRun: true},
		{name: "deletion grace wins", specGrace: ptr.To[int64](20), deletionGrace: ptr.To[int64](5), wantTimeout: 5, wantPreStopRun: true},
		{name: "override wins", specGrace: ptr.To[int64](20), deletionGrace: ptr.To[int64](5), override: ptr.To[int64](3), wantTimeout: 3, wantPreStopRun: true},
		{name: "zero grace skips preStop", specGrace: ptr.To[int64](20), override: ptr.To[int64](0), wantTimeout: 0},
		{name: "preStop time comes off the grace", specGrace: ptr.To[int64](20), execDelay: 15 * time.Second, wantTimeout: 5, wantPreStopRun: true},
		{name: "at least 2s after preStop", specGrace: ptr.To[int64](20), execDelay: 19 * time.Second, wantTimeout: 2, wantPreStopRun: true},
		{name: "unknown pod uses the recorded grace", specGrace: ptr.To[int64](20), skeleton: true, wantTimeout: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t, busybox)
			pod := testPod(corev1.Container{Name: "a", Lifecycle: preStop}, corev1.Container{Name: "b"}, corev1.Container{Name: "done"})
			pod.Spec.TerminationGracePeriodSeconds = tt.specGrace
			te.sync(t, pod)
			idA, _ := te.rt.ContainerNamed(t, "a")
			idB, _ := te.rt.ContainerNamed(t, "b")
			idDone, _ := te.rt.ContainerNamed(t, "done")
			te.rt.Exit(t, idDone, 0)
			te.rt.ExecDelay = tt.execDelay
			te.rt.Trail = nil

			st := te.status(t, pod)
			target := pod.DeepCopy()
			target.DeletionGracePeriodSeconds = tt.deletionGrace
			if tt.skeleton {
				target = &corev1.Pod{ObjectMeta: *pod.ObjectMeta.DeepCopy()}
			}
			if err := te.m.KillPod(context.Background(), target, st, tt.override); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{idA, idB} {
				got, ok := te.rt.Stops[id]
				if !ok {
					t.Fatalf("%s not stopped", id)
				}
				want := tt.wantTimeout
				if id == idB && tt.execDelay > 0 {
					want = *tt.specGrace // b has no hook
				}
				if got != want {
					t.Errorf("%s stopped with %ds, want %ds", id, got, want)
				}
			}
			if _, ok := te.rt.Stops[idDone]; ok {
				t.Errorf("exited container stopped again")
			}
			ran := false
			for i, e := range te.rt.Trail {
				if e == "exec:"+idA {
					ran = true
					if !containsAfter(te.rt.Trail, i, "stop:"+idA) {
						t.Errorf("preStop did not run before the stop: %v", te.rt.Trail)
					}
				}
				if e == "exec:"+idB {
					t.Errorf("exec in a container without a preStop hook")
				}
			}
			if ran != tt.wantPreStopRun {
				t.Errorf("preStop ran = %v, want %v (trail %v)", ran, tt.wantPreStopRun, te.rt.Trail)
			}
			if ran && !cmp.Equal(te.rt.Execs[0].Cmd, []string{"/bin/drain"}) {
				t.Errorf("preStop command = %v", te.rt.Execs[0].Cmd)
			}
			if te.rt.Sandboxes["sb-web-0"].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Errorf("sandbox not stopped")
			}
		})
	}
}

func containsAfter(list []string, i int, s string) bool {
	for _, e := range list[i+1:] {
		if e == s {
			return true
		}
	}
	return false
}

func TestKillPodReportsStopFailures(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "a"})
	te.sync(t, pod)
	te.rt.Inject("StopContainer", errBoom)
	te.rt.Inject("StopPodSandbox", errBoom)
	err := te.m.KillPod(context.Background(), pod, te.status(t, pod), nil)
	if err == nil || !strings.Contains(err.Error(), "stop container a (killing pod): boom") || !strings.Contains(err.Error(), "stop sandbox sb-web-0: boom") {
		t.Errorf("err = %v, want both failures", err)
	}
}

func TestRemovePod(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "a"}, corev1.Container{Name: "b"})
	te.sync(t, pod)
	other := testPod(corev1.Container{Name: "x"})
	other.Name, other.UID = "other", "uid-2"
	te.sync(t, other)
	st := te.status(t, pod)
	if err := te.m.KillPod(context.Background(), pod, st, nil); err != nil {
		t.Fatal(err)
	}
	te.rt.Inject("RemoveContainer", errBoom)
	err := te.m.RemovePod(context.Background(), te.status(t, pod))
	if err == nil || !strings.Contains(err.Error(), "remove container") {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	if err := te.m.RemovePod(context.Background(), te.status(t, pod)); err != nil {
		t.Fatal(err)
	}
	if st := te.status(t, pod); len(st.Containers) != 0 || len(st.Sandboxes) != 0 {
		t.Errorf("left behind: %+v", st)
	}
	if st := te.status(t, other); len(st.Containers) != 1 || len(st.Sandboxes) != 1 {
		t.Errorf("other pod touched: %+v", st)
	}
}

// TestSyncPodSidecars runs a pod with a regular init container and two
// sidecars through SyncPod: each starts in its turn, the app container
// once the last sidecar runs, a sidecar that exits is restarted beside
// it, and KillPod stops the app container first, then the sidecars in
// reverse order.
func TestSyncPodSidecars(t *testing.T) {
	te := newTestEnv(t, busybox)
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	pod := testPod(corev1.Container{Name: "a"})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "i1", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent},
		{Name: "s1", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: always},
		{Name: "s2", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: always},
	}
	running := func() []string {
		var out []string
		for _, c := range te.status(t, pod).Containers {
			if c.State == StateRunning {
				out = append(out, c.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	te.sync(t, pod)
	if got := running(); !slices.Equal(got, []string{"i1"}) {
		t.Fatalf("after the first sync %v run, want [i1]", got)
	}
	i1, _ := te.rt.ContainerNamed(t, "i1")
	te.rt.Exit(t, i1, 0)
	for _, want := range [][]string{{"s1"}, {"s1", "s2"}, {"a", "s1", "s2"}} {
		te.sync(t, pod)
		if got := running(); !slices.Equal(got, want) {
			t.Fatalf("running %v, want %v", got, want)
		}
	}
	s1, _ := te.rt.ContainerNamed(t, "s1")
	te.rt.Exit(t, s1, 1)
	te.sync(t, pod)
	if got := running(); !slices.Equal(got, []string{"a", "s1", "s2"}) {
		t.Fatalf("after s1 exited, running %v, want it restarted", got)
	}

	te.rt.Trail = nil
	if err := te.m.KillPod(context.Background(), pod, te.status(t, pod), nil); err != nil {
		t.Fatal(err)
	}
	var order []string
	st := te.status(t, pod)
	for _, e := range te.rt.Trail {
		if id, ok := strings.CutPrefix(e, "stop:"); ok {
			if cs := findByID(st, id); cs != nil {
				order = append(order, cs.Name)
			}
		}
	}
	if want := []string{"a", "s2", "s1"}; !slices.Equal(order, want) {
		t.Errorf("stop order %v, want %v", order, want)
	}
}

// TestSyncPodEphemeralContainers: an ephemeral container added to a
// running pod starts in its target container's process namespace and is
// never restarted once it exited.
func TestSyncPodEphemeralContainers(t *testing.T) {
	te := newTestEnv(t, busybox)
	pod := testPod(corev1.Container{Name: "a"})
	te.sync(t, pod)
	target, _ := te.rt.ContainerNamed(t, "a")

	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent, Stdin: true, TTY: true},
		TargetContainerName:      "a",
	}}
	if res := te.sync(t, pod); res.Err != nil || !res.Changed {
		t.Fatalf("SyncPod = %+v", res)
	}
	id, c := te.rt.ContainerNamed(t, "debug")
	ns := c.Cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != target {
		t.Errorf("pid namespace %v target %q, want TARGET %q", ns.GetPid(), ns.GetTargetId(), target)
	}
	if !c.Cfg.Tty || !c.Cfg.Stdin {
		t.Errorf("tty %v stdin %v, want both", c.Cfg.Tty, c.Cfg.Stdin)
	}
	te.rt.Exit(t, id, 0)
	te.rt.ResetCalls()
	if res := te.sync(t, pod); res.Changed {
		t.Errorf("SyncPod after the ephemeral container exited changed something: %+v", res)
	}
	if n := te.rt.CallsOf("CreateContainer"); n != 0 {
		t.Errorf("ephemeral container restarted (%d creates)", n)
	}
}
