package kuberuntime

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/k1s/k1s/internal/fakecri"
)

// resizingRuntime is the fake CRI runtime with what in-place resize
// needs: containers report their cgroup settings, which
// UpdateContainerResources changes.
type resizingRuntime struct {
	*fakecri.Runtime
	mu      sync.Mutex
	res     map[string]*runtimeapi.LinuxContainerResources
	updates []string
}

func (r *resizingRuntime) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.Runtime.CreateContainer(ctx, sb, cfg, sbCfg)
	if err == nil {
		r.mu.Lock()
		r.res[id] = cfg.GetLinux().GetResources()
		r.mu.Unlock()
	}
	return id, err
}

func (r *resizingRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := r.Runtime.ContainerStatus(ctx, id, verbose)
	if err == nil {
		r.mu.Lock()
		resp.Status.Resources = &runtimeapi.ContainerResources{Linux: r.res[id]}
		r.mu.Unlock()
	}
	return resp, err
}

func (r *resizingRuntime) UpdateContainerResources(_ context.Context, id string, res *runtimeapi.ContainerResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res[id] = res.GetLinux()
	r.updates = append(r.updates, id)
	return nil
}

// TestSyncPodResize: a running container whose resources change is
// updated in place (UpdateContainerResources, no restart) once; a change
// of a resource whose resize policy is RestartContainer restarts it.
func TestSyncPodResize(t *testing.T) {
	te := newTestEnv(t, busybox)
	rt := &resizingRuntime{Runtime: te.rt, res: map[string]*runtimeapi.LinuxContainerResources{}}
	m, err := New(Config{
		NodeName: "node1", NodeIPs: []net.IP{net.ParseIP("192.168.5.10")},
		PodLogsDir: te.logDir, ResolvConf: filepath.Join(t.TempDir(), "missing"),
	}, rt, te.images, te.volumes, te.env, te.events, te.clock)
	if err != nil {
		t.Fatal(err)
	}
	sync := func(pod *corev1.Pod) SyncResult {
		t.Helper()
		st, err := m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		return m.SyncPod(context.Background(), pod, st, nil, Probes{})
	}
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	pod := testPod(corev1.Container{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("100m", "20Mi"), Limits: rl("200m", "40Mi")}})
	sync(pod)
	id, _ := te.rt.ContainerNamed(t, "a")

	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("150m", "20Mi"), Limits: rl("300m", "60Mi")}
	te.rt.ResetCalls()
	if res := sync(pod); res.Err != nil || !res.Changed {
		t.Fatalf("SyncPod = %+v", res)
	}
	if n := te.rt.CallsOf("CreateContainer"); n != 0 || len(rt.updates) != 1 || rt.updates[0] != id {
		t.Fatalf("creates %d, updates %v; want the running container %s updated in place", n, rt.updates, id)
	}
	got := rt.res[id]
	if got.CpuShares != 153 || got.CpuQuota != 30000 || got.CpuPeriod != 100000 || got.MemoryLimitInBytes != 60<<20 {
		t.Errorf("cgroups after the resize: shares %d quota %d/%d memory %d", got.CpuShares, got.CpuQuota, got.CpuPeriod, got.MemoryLimitInBytes)
	}
	if res := sync(pod); res.Changed || len(rt.updates) != 1 {
		t.Errorf("a second sync resized again: %+v, updates %v", res, rt.updates)
	}

	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	pod.Spec.Containers[0].Resources.Limits = rl("300m", "80Mi")
	pod.Spec.Containers[0].Resources.Requests = rl("150m", "30Mi")
	sync(pod)
	newID, _ := te.rt.ContainerNamed(t, "a")
	if newID == id || len(rt.updates) != 1 {
		t.Errorf("memory resize under RestartContainer: container %s (was %s), updates %v; want a restart", newID, id, rt.updates)
	}
	if rt.res[newID].MemoryLimitInBytes != 80<<20 {
		t.Errorf("restarted container's memory limit %d, want %d", rt.res[newID].MemoryLimitInBytes, 80<<20)
	}
}

// TestSpecChanged: the container hash leaves resources out (a resize is
// not a new spec), and a container created under the former hash, which
// had them in, is not replaced for it.
func TestSpecChanged(t *testing.T) {
	c := &corev1.Container{Name: "a", Image: "busybox", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}
	hash := func(h uint64) string { return strconv.FormatUint(h, 16) }
	resized := c.DeepCopy()
	resized.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("96Mi")
	newImage := c.DeepCopy()
	newImage.Image = "busybox:2"
	tests := []struct {
		name string
		spec *corev1.Container
		hash string
		want bool
	}{
		{"same spec", c, hash(HashContainer(c)), false},
		{"resized", resized, hash(HashContainer(c)), false},
		{"new image", newImage, hash(HashContainer(c)), true},
		{"created under the former hash", c, hash(legacyHashContainer(c)), false},
		{"no hash recorded", newImage, "", false},
	}
	for _, tt := range tests {
		if got := specChanged(tt.spec, tt.hash); got != tt.want {
			t.Errorf("%s: specChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}
