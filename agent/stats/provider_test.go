package stats

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	info "github.com/google/cadvisor/lib/model"
	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCgroups serves cgroup samples from maps.
type fakeCgroups struct {
	stats map[string]*info.ContainerStats // by cgroup name
	pids  map[int]string                  // process → cgroup name
	procs map[string]uint64
}

func (f *fakeCgroups) ref(name string) cgroupRef {
	return cgroupRef{name: name, dirs: map[string]string{"memory": "/fake" + name}}
}
func (f *fakeCgroups) root() cgroupRef             { return f.ref("/") }
func (f *fakeCgroups) named(name string) cgroupRef { return f.ref(path.Clean(name)) }
func (f *fakeCgroups) ofPid(pid int) (cgroupRef, error) {
	n, ok := f.pids[pid]
	if !ok {
		return cgroupRef{}, fmt.Errorf("no process %d", pid)
	}
	return f.ref(n), nil
}
func (f *fakeCgroups) read(ref cgroupRef, netPid int) (*info.ContainerStats, error) {
	st, ok := f.stats[ref.name]
	if !ok {
		return nil, fmt.Errorf("no cgroup %s", ref.name)
	}
	out := *st
	if netPid == 0 {
		out.Network = nil
	}
	return &out, nil
}
func (f *fakeCgroups) processes(ref cgroupRef) (uint64, bool) {
	n, ok := f.procs[ref.name]
	return n, ok
}

// fakeHost is a machine with fixed filesystems.
type fakeHost struct {
	fs  map[string]fsInfo
	dus map[string][2]uint64
	mem uint64
}

func (h fakeHost) statfs(dir string) (fsInfo, error) {
	if f, ok := h.fs[dir]; ok {
		return f, nil
	}
	return fsInfo{}, fmt.Errorf("no filesystem at %s", dir)
}
func (h fakeHost) du(dir string) (uint64, uint64, error) {
	if d, ok := h.dus[dir]; ok {
		return d[0], d[1], nil
	}
	return 0, 0, fmt.Errorf("no directory %s", dir)
}
func (fakeHost) rlimit() (int64, int64, error) { return 4194304, 321, nil }
func (h fakeHost) memoryCapacity() uint64      { return h.mem }
func (fakeHost) numCores() int                 { return 2 }
func (fakeHost) bootTime() time.Time           { return time.Unix(1000, 0) }
func (fakeHost) selfPid() int                  { return 1 }

// fakeRuntime is a CRI runtime with fixed sandboxes and containers.
type fakeRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	pids       map[string]int
	logs       map[string]string
	layers     []*runtimeapi.ContainerStats
	statusCall int
}

func verbose(pid int) map[string]string {
	return map[string]string{"info": fmt.Sprintf(`{"pid":%d}`, pid)}
}

func (r *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.sandboxes, nil
}
func (r *fakeRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.statusCall++
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: id}, Info: verbose(r.pids[id])}, nil
}
func (r *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.containers, nil
}
func (r *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.statusCall++
	return &runtimeapi.ContainerStatusResponse{
		Status: &runtimeapi.ContainerStatus{Id: id, StartedAt: time.Unix(2000, 0).UnixNano(), LogPath: r.logs[id], Image: &runtimeapi.ImageSpec{Image: "busybox"}},
		Info:   verbose(r.pids[id]),
	}, nil
}
func (r *fakeRuntime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return r.layers, nil
}
func (r *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/images"}, UsedBytes: &runtimeapi.UInt64Value{Value: 700}, InodesUsed: &runtimeapi.UInt64Value{Value: 70},
	}}}, nil
}

func sample(cpu, usage, inactive, rss uint64, ifaces ...info.InterfaceStats) *info.ContainerStats {
	st := &info.ContainerStats{Cpu: &info.CpuStats{}, Memory: &info.MemoryStats{Usage: usage, WorkingSet: usage - inactive, RSS: rss, TotalInactiveFile: inactive}}
	st.Cpu.Usage.Total = cpu
	st.Memory.ContainerData.Pgfault = 10
	st.Memory.ContainerData.Pgmajfault = 1
	if len(ifaces) > 0 {
		st.Network = &info.NetworkStats{Interfaces: ifaces}
	}
	return st
}

func u(v uint64) *uint64 { return &v }

// fixture: pod "new" has a pod-level cgroup (kubepods/burstable/poduid-a),
// pod "old" runs in the flat /k8s.io/<id> layout with two containers.
func fixture(t *testing.T) (*Provider, *fakeCgroups, *clocktesting.FakeClock) {
	t.Helper()
	dir := t.TempDir()
	cg := &fakeCgroups{
		stats: map[string]*info.ContainerStats{
			"/":                                sample(50e9, 4000, 1000, 2000, info.InterfaceStats{Name: "eth0", RxBytes: 5, TxBytes: 6}),
			"/self":                            sample(3e9, 300, 100, 150),
			"/kubepods":                        sample(20e9, 2000, 500, 1000),
			"/kubepods/burstable/poduid-a":     sample(10e9, 1000, 200, 600),
			"/kubepods/burstable/poduid-a/sbA": sample(1e6, 100, 0, 50, info.InterfaceStats{Name: "eth0", RxBytes: 11, TxBytes: 22}),
			"/kubepods/burstable/poduid-a/cA":  sample(9e9, 800, 150, 500),
			"/k8s.io/sbB":                      sample(2e6, 100, 0, 40, info.InterfaceStats{Name: "eth0", RxBytes: 33, TxBytes: 44}),
			"/k8s.io/cB1":                      sample(3e9, 500, 100, 300),
			"/k8s.io/cB2":                      sample(4e9, 700, 300, 200),
		},
		pids:  map[int]string{1: "/self", 10: "/kubepods/burstable/poduid-a/sbA", 11: "/kubepods/burstable/poduid-a/cA", 20: "/k8s.io/sbB", 21: "/k8s.io/cB1", 22: "/k8s.io/cB2"},
		procs: map[string]uint64{"/kubepods/burstable/poduid-a": 3},
	}
	rt := &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{
			{Id: "sbA", CreatedAt: time.Unix(1500, 0).UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Name: "new", Namespace: "ns", Uid: "uid-a"}},
			{Id: "sbB", CreatedAt: time.Unix(1600, 0).UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Name: "old", Namespace: "ns", Uid: "uid-b"}},
		},
		containers: []*runtimeapi.Container{
			{Id: "cA", PodSandboxId: "sbA", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}},
			{Id: "cB1", PodSandboxId: "sbB", Metadata: &runtimeapi.ContainerMetadata{Name: "one"}},
			{Id: "cB2", PodSandboxId: "sbB", Metadata: &runtimeapi.ContainerMetadata{Name: "two"}},
		},
		pids: map[string]int{"sbA": 10, "cA": 11, "sbB": 20, "cB1": 21, "cB2": 22},
		logs: map[string]string{"cA": "/logs/ns_new_uid-a/app/0.log"},
		layers: []*runtimeapi.ContainerStats{{
			Attributes:    &runtimeapi.ContainerAttributes{Id: "cA"},
			WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 40}, InodesUsed: &runtimeapi.UInt64Value{Value: 4}},
		}},
	}
	host := fakeHost{
		mem: 10000,
		fs: map[string]fsInfo{
			dir:       {capacity: 1000, available: 600, used: 400, inodes: 100, inodesFree: 90},
			"/images": {capacity: 5000, available: 3000, used: 2000, inodes: 500, inodesFree: 400},
		},
		dus: map[string][2]uint64{"/logs/ns_new_uid-a/app": {8, 2}},
	}
	clk := clocktesting.NewFakeClock(time.Unix(3000, 0))
	cfg := Config{NodeName: "n1", RootDir: dir}
	cfg.SetDefaults()
	p := newProvider(cfg, Deps{Runtime: rt, Images: rt, Clock: clk}, cg, host)
	// Pod cgroups are looked for on disk: point the fake's at directories
	// that exist.
	p.cgExists = func(ref cgroupRef) bool { _, ok := cg.stats[ref.name]; return ok }
	return p, cg, clk
}

func TestSummary(t *testing.T) {
	p, _, _ := fixture(t)
	s, err := p.Get(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	if n.NodeName != "n1" || *n.CPU.UsageCoreNanoSeconds != 50e9 || n.CPU.UsageNanoCores != nil {
		t.Errorf("node cpu: %+v (no rate before a second sample)", n.CPU)
	}
	if *n.Memory.WorkingSetBytes != 3000 || *n.Memory.AvailableBytes != 7000 || *n.Memory.UsageBytes != 4000 || *n.Memory.RSSBytes != 2000 || *n.Memory.PageFaults != 10 {
		t.Errorf("node memory: ws %d avail %d usage %d", *n.Memory.WorkingSetBytes, *n.Memory.AvailableBytes, *n.Memory.UsageBytes)
	}
	if n.Network == nil || *n.Network.RxBytes != 5 {
		t.Errorf("node network: %+v", n.Network)
	}
	if *n.Fs.CapacityBytes != 1000 || *n.Fs.AvailableBytes != 600 || *n.Fs.InodesFree != 90 || *n.Fs.InodesUsed != 10 {
		t.Errorf("nodefs: %+v", n.Fs)
	}
	if im := n.Runtime.ImageFs; *im.CapacityBytes != 5000 || *im.UsedBytes != 700 || *im.InodesUsed != 70 {
		t.Errorf("imagefs: %+v", im)
	}
	if *n.Rlimit.MaxPID != 4194304 || *n.Rlimit.NumOfRunningProcesses != 321 {
		t.Errorf("rlimit: %+v", n.Rlimit)
	}
	var sys []string
	for _, c := range n.SystemContainers {
		sys = append(sys, c.Name)
	}
	if diff := cmp.Diff([]string{"kubelet", "pods"}, sys); diff != "" {
		t.Errorf("system containers (-want +got):\n%s", diff)
	}
	if len(s.Pods) != 2 {
		t.Fatalf("pods: %d", len(s.Pods))
	}
	a, b := s.Pods[0], s.Pods[1]
	if a.PodRef != (statsapi.PodReference{Name: "new", Namespace: "ns", UID: "uid-a"}) || !a.StartTime.Time.Equal(time.Unix(1500, 0)) {
		t.Errorf("pod ref: %+v %v", a.PodRef, a.StartTime)
	}
	// Pod-level cgroup: the pod's own numbers, not the containers' sum.
	if *a.CPU.UsageCoreNanoSeconds != 10e9 || *a.Memory.WorkingSetBytes != 800 || *a.ProcessStats.ProcessCount != 3 {
		t.Errorf("pod with a cgroup: cpu %d ws %d", *a.CPU.UsageCoreNanoSeconds, *a.Memory.WorkingSetBytes)
	}
	if a.Network == nil || *a.Network.RxBytes != 11 || *a.Network.TxBytes != 22 {
		t.Errorf("pod network: %+v", a.Network)
	}
	ca := a.Containers[0]
	if ca.Name != "app" || *ca.Memory.WorkingSetBytes != 650 || !ca.StartTime.Time.Equal(time.Unix(2000, 0)) {
		t.Errorf("container: %+v", ca)
	}
	if *ca.Rootfs.UsedBytes != 40 || *ca.Rootfs.CapacityBytes != 5000 || *ca.Logs.UsedBytes != 8 || *ca.Logs.CapacityBytes != 1000 {
		t.Errorf("container fs: rootfs %+v logs %+v", ca.Rootfs, ca.Logs)
	}
	if *a.EphemeralStorage.UsedBytes != 48 || *a.EphemeralStorage.InodesUsed != 6 {
		t.Errorf("ephemeral storage: used %d inodes %d", *a.EphemeralStorage.UsedBytes, *a.EphemeralStorage.InodesUsed)
	}
	// Flat layout: the containers' sum.
	if *b.CPU.UsageCoreNanoSeconds != 7e9 || *b.Memory.WorkingSetBytes != 800 || *b.Memory.UsageBytes != 1200 || len(b.Containers) != 2 {
		t.Errorf("pod without a cgroup: cpu %d ws %d usage %d", *b.CPU.UsageCoreNanoSeconds, *b.Memory.WorkingSetBytes, *b.Memory.UsageBytes)
	}
	if b.Network == nil || *b.Network.RxBytes != 33 {
		t.Errorf("flat pod network: %+v", b.Network)
	}
}

func TestCPURate(t *testing.T) {
	p, cg, clk := fixture(t)
	ctx := context.Background()
	if _, err := p.Get(ctx, true); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	cg.stats["/"].Cpu.Usage.Total += 5e9                               // half a core
	cg.stats["/kubepods/burstable/poduid-a/cA"].Cpu.Usage.Total += 2e9 // 0.2 core
	cg.stats["/k8s.io/cB1"].Cpu.Usage.Total += 1e9                     // 0.1 core
	s, err := p.Get(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := *s.Node.CPU.UsageNanoCores; got != 5e8 {
		t.Errorf("node usageNanoCores %d, want 5e8", got)
	}
	if got := *s.Pods[0].Containers[0].CPU.UsageNanoCores; got != 2e8 {
		t.Errorf("container usageNanoCores %d, want 2e8", got)
	}
	if got := *s.Pods[1].CPU.UsageNanoCores; got != 1e8 {
		t.Errorf("flat pod usageNanoCores %d, want 1e8 (sum of containers)", got)
	}
	// A sample too close to the last keeps its rate and window.
	clk.Step(100 * time.Millisecond)
	cg.stats["/"].Cpu.Usage.Total += 1e9
	s, _ = p.Get(ctx, true)
	if got := *s.Node.CPU.UsageNanoCores; got != 5e8 {
		t.Errorf("close sample: usageNanoCores %d, want the previous 5e8", got)
	}
	clk.Step(900 * time.Millisecond)
	s, _ = p.Get(ctx, true)
	if got := *s.Node.CPU.UsageNanoCores; got != 1e9 {
		t.Errorf("after 1s: usageNanoCores %d, want 1e9", got)
	}
	// Cached: no new collection within the housekeeping interval.
	calls := s
	if s2, _ := p.Get(ctx, false); s2 != calls {
		t.Error("Get(false) collected again within the housekeeping interval")
	}
}

func TestCPURateFunc(t *testing.T) {
	for _, tc := range []struct {
		prev, cur uint64
		window    time.Duration
		want      uint64
	}{
		{0, 1e9, time.Second, 1e9},
		{1e9, 4e9, 15 * time.Second, 2e8},
		{5, 4, time.Second, 0}, // counter reset
		{0, 1e9, 0, 0},
	} {
		if got := cpuRate(tc.prev, tc.cur, tc.window); got != tc.want {
			t.Errorf("cpuRate(%d, %d, %v) = %d, want %d", tc.prev, tc.cur, tc.window, got, tc.want)
		}
	}
}

func TestCPUAndMemoryOnly(t *testing.T) {
	p, _, _ := fixture(t)
	s, err := p.GetCPUAndMemoryStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.Fs != nil || s.Node.Network != nil || s.Node.CPU == nil || s.Node.Memory == nil {
		t.Errorf("node: %+v", s.Node)
	}
	for _, ps := range s.Pods {
		if ps.Network != nil || ps.EphemeralStorage != nil || ps.CPU == nil {
			t.Errorf("pod %s: %+v", ps.PodRef.Name, ps)
		}
		for _, c := range ps.Containers {
			if c.Rootfs != nil || c.Logs != nil || c.Memory == nil {
				t.Errorf("container %s: %+v", c.Name, c)
			}
		}
	}
}

func TestProcessCache(t *testing.T) {
	p, _, clk := fixture(t)
	rt := p.runtime.(*fakeRuntime)
	ctx := context.Background()
	_, _ = p.Get(ctx, true)
	first := rt.statusCall
	clk.Step(10 * time.Second)
	_, _ = p.Get(ctx, true)
	if rt.statusCall != first {
		t.Errorf("verbose status read again for known containers: %d calls, then %d", first, rt.statusCall)
	}
	// A container that went away is forgotten.
	rt.containers = rt.containers[:1]
	clk.Step(10 * time.Second)
	_, _ = p.Get(ctx, true)
	if _, ok := p.procs["cB1"]; ok {
		t.Error("process of a removed container still cached")
	}
	if !strings.HasPrefix(p.cfg.PodsDir, p.cfg.RootDir) {
		t.Errorf("pods dir %s not under the root dir", p.cfg.PodsDir)
	}
}

// TestVolumes: volumes under the pods directory and claim-backed local
// volumes are measured, and count toward ephemeral storage only when
// they are not claims.
func TestVolumes(t *testing.T) {
	p, _, _ := fixture(t)
	host := p.host.(fakeHost)
	empty := filepath.Join(p.cfg.PodsDir, "uid-a", "volumes", "kubernetes.io~empty-dir", "cache")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	host.fs[empty] = fsInfo{capacity: 1000, available: 600, inodes: 100, inodesFree: 90}
	host.dus[empty] = [2]uint64{100, 3}
	host.fs["/srv/pv1"] = fsInfo{capacity: 9000, available: 8000, inodes: 900, inodesFree: 800}
	host.dus["/srv/pv1"] = [2]uint64{500, 7}
	p.host = host
	p.pvcs = func(context.Context) map[string][]PVCVolume {
		return map[string][]PVCVolume{"uid-a": {{Name: "data", Namespace: "ns", Claim: "claim-1", Path: "/srv/pv1"}}}
	}
	ctx := context.Background()
	p.walkVolumes(ctx)
	s, err := p.Get(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Pods[0]
	got := map[string]statsapi.VolumeStats{}
	for _, v := range a.VolumeStats {
		got[v.Name] = v
	}
	if v := got["cache"]; v.UsedBytes == nil || *v.UsedBytes != 100 || *v.InodesUsed != 3 || *v.CapacityBytes != 1000 || v.PVCRef != nil {
		t.Errorf("emptyDir volume: %+v", v)
	}
	if v := got["data"]; v.UsedBytes == nil || *v.UsedBytes != 500 || *v.CapacityBytes != 9000 || v.PVCRef == nil || *v.PVCRef != (statsapi.PVCReference{Name: "claim-1", Namespace: "ns"}) {
		t.Errorf("claim volume: %+v", v)
	}
	// rootfs 40 + logs 8 + emptyDir 100; the claim's 500 is not ephemeral.
	if *a.EphemeralStorage.UsedBytes != 148 || *a.EphemeralStorage.InodesUsed != 9 {
		t.Errorf("ephemeral storage: %d bytes, %d inodes", *a.EphemeralStorage.UsedBytes, *a.EphemeralStorage.InodesUsed)
	}
}
