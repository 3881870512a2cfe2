package kuberuntime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/fakecri"
)

// addSandbox puts a sandbox of pod uid into the fake runtime.
func addSandbox(f *fakecri.Runtime, id, name, uid string, attempt uint32, createdAt int64, ready, hostNet bool, ips ...string) {
	netMode := runtimeapi.NamespaceMode_POD
	if hostNet {
		netMode = runtimeapi.NamespaceMode_NODE
	}
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	f.Sandboxes[id] = &fakecri.Sandbox{
		Cfg: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "shop", Uid: uid, Attempt: attempt},
			Labels:   map[string]string{labelPodUID: uid, labelPodName: name, labelPodNamespace: "shop", labelManagedBy: ManagedBy},
			Linux:    &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: netMode}}},
		},
		State: state, CreatedAt: createdAt, IPs: ips,
	}
}

// addContainer puts a container of pod uid into the fake runtime.
func addContainer(f *fakecri.Runtime, id, sandboxID, name, uid string, state runtimeapi.ContainerState, createdAt int64, ann map[string]string, mounts ...*runtimeapi.Mount) *fakecri.Container {
	c := &fakecri.Container{
		SandboxID: sandboxID,
		Cfg: &runtimeapi.ContainerConfig{
			Metadata:    &runtimeapi.ContainerMetadata{Name: name},
			Image:       &runtimeapi.ImageSpec{Image: "k1s.local/busybox:1.36"},
			Labels:      map[string]string{labelPodUID: uid, labelPodName: "web", labelPodNamespace: "shop", labelContainerName: name, labelManagedBy: ManagedBy},
			Annotations: ann,
			Mounts:      mounts,
		},
		State: state, CreatedAt: createdAt,
	}
	f.Containers[id] = c
	return c
}

func TestGetPodStatus(t *testing.T) {
	te := newTestEnv(t)
	rt := te.rt
	base := testStart.UnixNano()
	addSandbox(rt, "old", "web", "uid-1", 0, base+1, false, false, "10.42.0.2")
	addSandbox(rt, "new", "web", "uid-1", 1, base+5, true, true, "10.42.0.9", "fd00:42::9")
	addSandbox(rt, "theirs", "db", "uid-2", 0, base+9, true, false)
	addContainer(rt, "c-old", "old", "app", "uid-1", runtimeapi.ContainerState_CONTAINER_EXITED, base+2, map[string]string{annotationRestarts: "0"})
	c := addContainer(rt, "c-new", "new", "app", "uid-1", runtimeapi.ContainerState_CONTAINER_RUNNING, base+6, map[string]string{
		annotationHash: "abc", annotationRestarts: "1", annotationTermPath: "/dev/termination-log",
		annotationTermPolicy: "File", annotationGracePeriod: "45", annotationPreStop: `{"exec":{}}`,
	},
		&runtimeapi.Mount{ContainerPath: "/data", HostPath: "/var/lib/x"},
		&runtimeapi.Mount{ContainerPath: "/dev/termination-log", HostPath: "/pods/uid-1/containers/app/abc"})
	c.StartedAt = base + 7
	c.LogPath = "/var/log/pods/shop_web_uid-1/app/1.log"
	e := addContainer(rt, "c-init", "new", "init", "uid-1", runtimeapi.ContainerState_CONTAINER_EXITED, base+5, map[string]string{annotationInit: "true"})
	e.ExitCode, e.Reason, e.FinishedAt = 3, "Error", base+6
	addContainer(rt, "c-vanished", "new", "gone", "uid-1", runtimeapi.ContainerState_CONTAINER_RUNNING, base+8, nil)
	addContainer(rt, "c-theirs", "theirs", "db", "uid-2", runtimeapi.ContainerState_CONTAINER_RUNNING, base+9, nil)

	// A container removed between the list and its status is skipped: make
	// ContainerStatus of c-vanished fail by removing it under the lister.
	lister := &vanishing{Runtime: rt, vanish: "c-vanished"}
	te.m.runtime = lister

	st, err := te.m.GetPodStatus(context.Background(), "uid-1", "web", "shop")
	if err != nil {
		t.Fatal(err)
	}
	var sbs []string
	for _, sb := range st.Sandboxes {
		sbs = append(sbs, sb.ID)
	}
	if !cmp.Equal(sbs, []string{"new", "old"}) {
		t.Fatalf("sandboxes = %v, want newest first [new old]", sbs)
	}
	active := st.ActiveSandbox()
	if !active.Ready || active.Attempt != 1 || !active.HostNetwork || !cmp.Equal(active.IPs, []string{"10.42.0.9", "fd00:42::9"}) {
		t.Errorf("active sandbox = %+v", active)
	}
	if st.Sandboxes[1].Ready || st.Sandboxes[1].IPs != nil {
		t.Errorf("old sandbox = %+v: not ready, and only the newest is asked for IPs", st.Sandboxes[1])
	}
	if !cmp.Equal(st.IPs, []string{"10.42.0.9", "fd00:42::9"}) {
		t.Errorf("pod IPs = %v", st.IPs)
	}
	var names []string
	for _, c := range st.Containers {
		names = append(names, c.ID)
	}
	if !cmp.Equal(names, []string{"c-new", "c-init", "c-old"}) {
		t.Fatalf("containers = %v, want newest first without the vanished one and the other pod's", names)
	}
	want := &ContainerStatus{
		ID: "c-new", Name: "app", State: StateRunning,
		CreatedAt: time.Unix(0, base+6), StartedAt: time.Unix(0, base+7),
		Image: "k1s.local/busybox:1.36", ImageRef: "k1s.local/busybox:1.36",
		Hash: "abc", RestartCount: 1, LogPath: "/var/log/pods/shop_web_uid-1/app/1.log",
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
		TerminationMessageFile: "/pods/uid-1/containers/app/abc",
		PreStop:                `{"exec":{}}`, GracePeriod: ptr.To[int64](45),
	}
	if diff := cmp.Diff(want, st.Containers[0]); diff != "" {
		t.Errorf("container status (-want +got):\n%s", diff)
	}
	init := st.FindContainer("init")
	if !init.Init || init.State != StateExited || init.ExitCode != 3 || init.Reason != "Error" || !init.FinishedAt.Equal(time.Unix(0, base+6)) {
		t.Errorf("init container = %+v", init)
	}
	if got := st.Instances("app"); len(got) != 2 || got[0].ID != "c-new" || got[1].ID != "c-old" {
		t.Errorf("instances of app = %v", got)
	}
	if st.FindContainer("nope") != nil {
		t.Errorf("FindContainer of an unknown name")
	}
}

// vanishing removes one container after it was listed.
type vanishing struct {
	*fakecri.Runtime
	vanish string
}

func (v *vanishing) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	out, err := v.Runtime.ListContainers(ctx, f)
	v.Lock()
	delete(v.Containers, v.vanish)
	v.Unlock()
	return out, err
}

func TestGetPodStatusErrors(t *testing.T) {
	for _, method := range []string{"ListPodSandbox", "ListContainers"} {
		te := newTestEnv(t)
		te.rt.Inject(method, errBoom)
		_, err := te.m.GetPodStatus(context.Background(), "uid-1", "web", "shop")
		if err == nil || !strings.Contains(err.Error(), "of pod shop/web: boom") {
			t.Errorf("%s failing: err = %v", method, err)
		}
	}
	te := newTestEnv(t)
	st, err := te.m.GetPodStatus(context.Background(), "uid-1", "web", "shop")
	if err != nil || st.ActiveSandbox() != nil || len(st.Containers) != 0 || st.UID != "uid-1" {
		t.Errorf("unknown pod: %+v, %v", st, err)
	}
}

func TestListPods(t *testing.T) {
	te := newTestEnv(t)
	rt := te.rt
	base := testStart.UnixNano()
	addSandbox(rt, "sb1", "web", "uid-1", 0, base, false, false)
	addSandbox(rt, "sb2", "web", "uid-1", 1, base+1, true, false)
	addSandbox(rt, "sb3", "db", "uid-2", 0, base+2, true, false)
	addContainer(rt, "c1", "sb2", "app", "uid-1", runtimeapi.ContainerState_CONTAINER_RUNNING, base, nil)
	addContainer(rt, "c2", "sb1", "app", "uid-1", runtimeapi.ContainerState_CONTAINER_EXITED, base, nil)
	addContainer(rt, "c3", "sb3", "db", "uid-2", runtimeapi.ContainerState_CONTAINER_CREATED, base, nil)
	// A container whose sandbox is already gone still belongs to its pod.
	addContainer(rt, "c4", "gone", "x", "uid-3", runtimeapi.ContainerState_CONTAINER_UNKNOWN, base, nil)
	// Not ours: no managed-by label.
	addSandbox(rt, "foreign", "other", "uid-9", 0, base, true, false)
	delete(rt.Sandboxes["foreign"].Cfg.Labels, labelManagedBy)

	pods, err := te.m.ListPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID]*RunningPod{
		"uid-1": {UID: "uid-1", Name: "web", Namespace: "shop", Sandboxes: map[string]bool{"sb1": false, "sb2": true},
			Containers: map[string]ContainerState{"c1": StateRunning, "c2": StateExited}},
		"uid-2": {UID: "uid-2", Name: "db", Namespace: "shop", Sandboxes: map[string]bool{"sb3": true},
			Containers: map[string]ContainerState{"c3": StateCreated}},
		"uid-3": {UID: "uid-3", Name: "web", Namespace: "shop", Sandboxes: map[string]bool{},
			Containers: map[string]ContainerState{"c4": StateUnknown}},
	}
	if diff := cmp.Diff(want, pods); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}

	rt.Inject("ListContainers", errBoom)
	if _, err := te.m.ListPods(context.Background()); err == nil || !strings.Contains(err.Error(), "list containers: boom") {
		t.Errorf("err = %v", err)
	}
}
