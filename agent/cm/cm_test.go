package cm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/thresholds"
)

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func pod(uid string, cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + uid, Namespace: "ns", UID: types.UID(uid)}, Spec: corev1.PodSpec{Containers: cs}}
}

// rc renders a ResourceConfig for comparison; "-" for unset.
func rcString(rc *ResourceConfig) map[string]int64 {
	out := map[string]int64{}
	if rc.CPUShares != nil {
		out["shares"] = int64(*rc.CPUShares)
	}
	if rc.CPUQuota != nil {
		out["quota"] = *rc.CPUQuota
	}
	if rc.CPUPeriod != nil {
		out["period"] = int64(*rc.CPUPeriod)
	}
	if rc.Memory != nil {
		out["memory"] = *rc.Memory
	}
	if rc.PidsLimit != nil {
		out["pids"] = *rc.PidsLimit
	}
	return out
}

func TestResourceConfigForPod(t *testing.T) {
	withInit := pod("i", ctr("app", rl("100m", "100Mi"), rl("200m", "200Mi")))
	withInit.Spec.InitContainers = []corev1.Container{ctr("init", rl("500m", "50Mi"), rl("1", "300Mi"))}
	withOverhead := pod("o", ctr("app", rl("1", "1Gi"), rl("1", "1Gi")))
	withOverhead.Spec.Overhead = rl("250m", "120Mi")
	podLevel := pod("l", ctr("app", nil, nil), ctr("side", nil, nil))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("500m", "256Mi"), Limits: rl("1", "512Mi")}
	tests := []struct {
		name string
		pod  *corev1.Pod
		pids int64
		want map[string]int64
	}{
		{name: "best effort", pod: pod("b", ctr("app", nil, nil)), want: map[string]int64{"shares": 2}},
		{name: "guaranteed, two containers summed", pod: pod("g", ctr("a", rl("500m", "128Mi"), rl("500m", "128Mi")), ctr("b", rl("250m", "64Mi"), rl("250m", "64Mi"))),
			want: map[string]int64{"shares": 768, "quota": 75000, "period": 100000, "memory": 192 << 20}},
		{name: "burstable without limits: shares only", pod: pod("u", ctr("app", rl("100m", "64Mi"), nil)),
			want: map[string]int64{"shares": 102}},
		{name: "burstable, one container unlimited: no pod quota or memory limit", pod: pod("v", ctr("a", rl("100m", ""), rl("200m", "100Mi")), ctr("b", nil, nil)),
			want: map[string]int64{"shares": 102}},
		{name: "burstable, all limited", pod: pod("w", ctr("a", rl("100m", "50Mi"), rl("200m", "100Mi")), ctr("b", rl("100m", "50Mi"), rl("300m", "100Mi"))),
			want: map[string]int64{"shares": 204, "quota": 50000, "period": 100000, "memory": 200 << 20}},
		{name: "init container's larger request and limit count", pod: withInit,
			want: map[string]int64{"shares": 512, "quota": 100000, "period": 100000, "memory": 300 << 20}},
		{name: "pod overhead added", pod: withOverhead,
			want: map[string]int64{"shares": 1280, "quota": 125000, "period": 100000, "memory": (1 << 30) + (120 << 20)}},
		{name: "pod-level resources", pod: podLevel,
			want: map[string]int64{"shares": 512, "quota": 100000, "period": 100000, "memory": 512 << 20}},
		{name: "tiny cpu limit is at least 1 ms", pod: pod("t", ctr("a", rl("1m", "10Mi"), rl("1m", "10Mi"))),
			want: map[string]int64{"shares": 2, "quota": 1000, "period": 100000, "memory": 10 << 20}},
		{name: "pids limit", pod: pod("p", ctr("a", nil, nil)), pids: 100, want: map[string]int64{"shares": 2, "pids": 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rcString(ResourceConfigForPod(tt.pod, tt.pids))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodCgroupName(t *testing.T) {
	g := pod("g", ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
	b := pod("b", ctr("a", rl("1", ""), nil))
	e := pod("e", ctr("a", nil, nil))
	tests := []struct {
		root string
		pod  *corev1.Pod
		want string
	}{
		{"/", g, "/kubepods/podg"},
		{"/", b, "/kubepods/burstable/podb"},
		{"/", e, "/kubepods/besteffort/pode"},
		{"/k1s-node2", b, "/k1s-node2/kubepods/burstable/podb"},
		{"/k1s-node2/", e, "/k1s-node2/kubepods/besteffort/pode"},
	}
	for _, tt := range tests {
		if got := PodCgroupName(tt.root, tt.pod); got != tt.want {
			t.Errorf("PodCgroupName(%q, %s) = %q, want %q", tt.root, tt.pod.UID, got, tt.want)
		}
	}
}

func TestShares(t *testing.T) {
	for milli, want := range map[int64]uint64{0: 2, 1: 2, 2: 2, 100: 102, 1000: 1024, 300000: 262144} {
		if got := MilliCPUToShares(milli); got != want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", milli, got, want)
		}
	}
}

func TestAllocatable(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	hard, err := thresholds.ParseFlag("eviction-hard", "memory.available<100Mi,nodefs.available<10Gi")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                 string
		kube, system         corev1.ResourceList
		hard                 []thresholds.Threshold
		wantCPU, wantMem     string
		wantStorage, wantPod string
	}{
		{name: "nothing reserved", wantCPU: "4", wantMem: "8Gi", wantStorage: "100Gi", wantPod: "110"},
		{name: "kube and system reserved, hard eviction", kube: rl("500m", "1Gi"), system: rl("250m", "512Mi"), hard: hard,
			wantCPU: "3250m", wantMem: "6556Mi", wantStorage: "90Gi", wantPod: "110"},
		{name: "never below zero", kube: rl("8", "16Gi"), wantCPU: "0", wantMem: "0", wantStorage: "100Gi", wantPod: "110"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Allocatable(capacity, tt.kube, tt.system, tt.hard)
			for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tt.wantCPU, corev1.ResourceMemory: tt.wantMem,
				corev1.ResourceEphemeralStorage: tt.wantStorage, corev1.ResourcePods: tt.wantPod} {
				q := got[name]
				if w := resource.MustParse(want); q.Cmp(w) != 0 {
					t.Errorf("%s = %s, want %s", name, q.String(), want)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{CgroupsPerQOS: true}},
		{name: "static cpu manager", cfg: Config{CgroupsPerQOS: true, CPUManagerPolicy: "static"}, wantErr: `--cpu-manager-policy: "static" is not supported`},
		{name: "relative root", cfg: Config{CgroupRoot: "k1s"}, wantErr: "--cgroup-root:"},
		{name: "pods without per-QoS cgroups", cfg: Config{EnforceNodeAllocatable: []string{"pods"}}, wantErr: "--enforce-node-allocatable: \"pods\" needs --cgroups-per-qos=true"},
		{name: "system-reserved enforcement", cfg: Config{CgroupsPerQOS: true, EnforceNodeAllocatable: []string{"pods", "system-reserved"}}, wantErr: "--system-reserved-cgroup"},
		{name: "none with others", cfg: Config{CgroupsPerQOS: true, EnforceNodeAllocatable: []string{"none", "pods"}}, wantErr: `"none" may not be combined`},
		{name: "unknown level", cfg: Config{CgroupsPerQOS: true, EnforceNodeAllocatable: []string{"nodes"}}, wantErr: `"nodes" is not one of`},
		{name: "pids", cfg: Config{PodPidsLimit: -5}, wantErr: "--pod-max-pids: -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.setDefaults()
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseReserved(t *testing.T) {
	got, err := ParseReserved("kube-reserved", "cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000")
	if err != nil {
		t.Fatal(err)
	}
	if c := got[corev1.ResourceCPU]; c.MilliValue() != 200 || len(got) != 4 {
		t.Errorf("reserved %v", got)
	}
	for value, wantErr := range map[string]string{
		"gpu=1":       `--kube-reserved: resource "gpu"`,
		"cpu=lots":    "--kube-reserved: cpu=lots",
		"memory=-1Gi": "--kube-reserved: memory=-1Gi must not be negative",
		"cpu":         `--kube-reserved: "cpu" is not signal=value`,
	} {
		if _, err := ParseReserved("kube-reserved", value); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseReserved(%q) error %v, want %q", value, err, wantErr)
		}
	}
}

// fakeDriver is an in-memory cgroup tree.
type fakeDriver struct {
	set  map[string]map[string]int64 // cgroup → rcString
	busy sets.Set[string]            // cgroups with processes
}

func newFakeDriver() *fakeDriver {
	return &fakeDriver{set: map[string]map[string]int64{}, busy: sets.New[string]()}
}

func (f *fakeDriver) Exists(name string) bool { _, ok := f.set[name]; return ok }
func (f *fakeDriver) Ensure(name string, rc *ResourceConfig) error {
	if _, ok := f.set[name]; !ok {
		f.set[name] = map[string]int64{}
	}
	return f.Set(name, rc)
}
func (f *fakeDriver) Set(name string, rc *ResourceConfig) error {
	if _, ok := f.set[name]; !ok {
		return errors.New("no such cgroup " + name)
	}
	for k, v := range rcString(rc) {
		f.set[name][k] = v
	}
	return nil
}
func (f *fakeDriver) Children(name string) ([]string, error) {
	var out []string
	for k := range f.set {
		if rest, ok := strings.CutPrefix(k, name+"/"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out, nil
}
func (f *fakeDriver) Remove(name string) error {
	if f.busy.Has(name) {
		return errors.New("device or resource busy")
	}
	for k := range f.set {
		if k == name || strings.HasPrefix(k, name+"/") {
			delete(f.set, k)
		}
	}
	return nil
}

func TestManager(t *testing.T) {
	ctx := context.Background()
	d := newFakeDriver()
	capacity := rl("4", "8Gi")
	m, err := newWithDriver(Config{CgroupRoot: "/k1s-n1", CgroupsPerQOS: true, KubeReserved: rl("1", "1Gi"), PodPidsLimit: 512}, capacity, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int64{
		"/k1s-n1/kubepods":            {"shares": 3072, "memory": 7 << 30},
		"/k1s-n1/kubepods/besteffort": {"shares": 2},
		"/k1s-n1/kubepods/burstable":  {},
	}
	if diff := cmp.Diff(want, d.set); diff != "" {
		t.Fatalf("after Start (-want +got):\n%s", diff)
	}
	g := pod("g", ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
	b1 := pod("b1", ctr("a", rl("500m", ""), nil))
	b2 := pod("b2", ctr("a", rl("250m", ""), nil))
	e := pod("e", ctr("a", nil, nil))
	active := []*corev1.Pod{g, b1, b2, e}
	for _, p := range active {
		if err := m.EnsurePod(ctx, p, active); err != nil {
			t.Fatal(err)
		}
		if got, want := m.CgroupParent(p), PodCgroupName("/k1s-n1", p); got != want {
			t.Errorf("cgroup parent %q, want %q", got, want)
		}
	}
	want["/k1s-n1/kubepods/podg"] = map[string]int64{"shares": 1024, "quota": 100000, "period": 100000, "memory": 1 << 30, "pids": 512}
	// Limits a pod does not have are written as none (quota -1, memory 0).
	want["/k1s-n1/kubepods/burstable/podb1"] = map[string]int64{"shares": 512, "quota": -1, "period": 100000, "memory": 0, "pids": 512}
	want["/k1s-n1/kubepods/burstable/podb2"] = map[string]int64{"shares": 256, "quota": -1, "period": 100000, "memory": 0, "pids": 512}
	want["/k1s-n1/kubepods/besteffort/pode"] = map[string]int64{"shares": 2, "quota": -1, "period": 100000, "memory": 0, "pids": 512}
	want["/k1s-n1/kubepods/burstable"] = map[string]int64{"shares": 768}
	if diff := cmp.Diff(want, d.set); diff != "" {
		t.Fatalf("after EnsurePod (-want +got):\n%s", diff)
	}

	// b1 and e are gone; e's cgroup still has a process; something not a
	// pod's under kubepods is never touched.
	d.set["/k1s-n1/kubepods/besteffort/pode/c1"] = map[string]int64{}
	d.busy.Insert("/k1s-n1/kubepods/besteffort/pode")
	d.set["/k1s-n1/kubepods/system"] = map[string]int64{}
	active = []*corev1.Pod{g, b2}
	if err := m.Cleanup(ctx, active, sets.New[types.UID]("g", "b2")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"/k1s-n1/kubepods/podg", "/k1s-n1/kubepods/burstable/podb2", "/k1s-n1/kubepods/besteffort/pode", "/k1s-n1/kubepods/system"} {
		if !d.Exists(name) {
			t.Errorf("%s removed", name)
		}
	}
	if d.Exists("/k1s-n1/kubepods/burstable/podb1") {
		t.Error("orphaned podb1 cgroup kept")
	}
	if s := d.set["/k1s-n1/kubepods/burstable"]["shares"]; s != 256 {
		t.Errorf("burstable shares %d after b1 left, want 256", s)
	}
	d.busy.Delete("/k1s-n1/kubepods/besteffort/pode")
	if err := m.Cleanup(ctx, active, sets.New[types.UID]("g", "b2")); err != nil {
		t.Fatal(err)
	}
	if d.Exists("/k1s-n1/kubepods/besteffort/pode") || d.Exists("/k1s-n1/kubepods/besteffort/pode/c1") {
		t.Error("orphaned pode cgroup kept once empty")
	}
}

func TestManagerWithoutQOSCgroups(t *testing.T) {
	d := newFakeDriver()
	for root, want := range map[string]string{"/": "", "/edge": "/edge"} {
		m, err := newWithDriver(Config{CgroupRoot: root, EnforceNodeAllocatable: []string{}}, rl("1", "1Gi"), d)
		if err != nil {
			t.Fatal(err)
		}
		p := pod("x", ctr("a", nil, nil))
		if err := m.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := m.EnsurePod(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
		if got := m.CgroupParent(p); got != want {
			t.Errorf("root %q: cgroup parent %q, want %q", root, got, want)
		}
	}
	if len(d.set) != 0 {
		t.Errorf("cgroups made with --cgroups-per-qos=false: %v", d.set)
	}
}

func TestCgroupfsSetV1(t *testing.T) {
	dir := t.TempDir()
	c := &cgroupfs{v1: map[string]string{}}
	for _, s := range []string{"cpu", "memory", "pids"} {
		c.v1[s] = filepath.Join(dir, s)
	}
	c.v1["cpuacct"] = c.v1["cpu"]
	rc := ResourceConfigForPod(pod("g", ctr("a", rl("250m", "64Mi"), rl("250m", "64Mi"))), 42)
	if err := c.Ensure("/kubepods/podg", rc); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cpu/kubepods/podg/cpu.shares":               "256",
		"cpu/kubepods/podg/cpu.cfs_period_us":        "100000",
		"cpu/kubepods/podg/cpu.cfs_quota_us":         "25000",
		"memory/kubepods/podg/memory.limit_in_bytes": "67108864",
		"pids/kubepods/podg/pids.max":                "42",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", file, b, err, want)
		}
	}
	if !c.Exists("/kubepods/podg") || c.Exists("/kubepods/podx") {
		t.Error("Exists wrong")
	}
	if got, _ := c.Children("/kubepods"); !cmp.Equal(got, []string{"podg"}) {
		t.Errorf("children %v", got)
	}
	// Unlimited values are written as the kernel's "no limit".
	if err := c.Set("/kubepods/podg", &ResourceConfig{CPUQuota: ptr.To[int64](0), Memory: ptr.To[int64](0), PidsLimit: ptr.To[int64](-1)}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cpu/kubepods/podg/cpu.cfs_quota_us":         "-1",
		"memory/kubepods/podg/memory.limit_in_bytes": "-1",
		"pids/kubepods/podg/pids.max":                "max",
	} {
		if b, _ := os.ReadFile(filepath.Join(dir, file)); string(b) != want {
			t.Errorf("%s = %q, want %q", file, b, want)
		}
	}
}

func TestCgroupfsSetV2(t *testing.T) {
	dir := t.TempDir()
	c := &cgroupfs{unified: dir}
	rc := ResourceConfigForPod(pod("b", ctr("a", rl("500m", "64Mi"), rl("1", "128Mi"))), 0)
	if err := c.Ensure("/kubepods/burstable/podb", rc); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cgroup.subtree_control":                    "+cpu +memory +pids",
		"kubepods/burstable/cgroup.subtree_control": "+cpu +memory +pids",
		"kubepods/burstable/podb/cpu.weight":        "59", // 512 shares, by runc's conversion
		"kubepods/burstable/podb/cpu.max":           "100000 100000",
		"kubepods/burstable/podb/memory.max":        "134217728",
	} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", file, b, err, want)
		}
	}
}

func TestParseOOMRecord(t *testing.T) {
	tests := []struct {
		name   string
		record string
		want   OOMEvent
		ok     bool
	}{
		{name: "a pod's container over its limit",
			record: "6,2001,123456,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/k1s-n1/kubepods/burstable/pod1234-ab/c0ffee,task_memcg=/k1s-n1/kubepods/burstable/pod1234-ab/c0ffee,task=testapp,pid=4242,uid=0\n",
			want:   OOMEvent{Process: "testapp", Pid: 4242, Cgroup: "/k1s-n1/kubepods/burstable/pod1234-ab/c0ffee", PodUID: "1234-ab", ContainerID: "c0ffee"}, ok: true},
		{name: "a guaranteed pod's",
			record: "6,2002,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/kubepods/podu1,task_memcg=/kubepods/podu1/cid,task=sh,pid=7,uid=0",
			want:   OOMEvent{Process: "sh", Pid: 7, Cgroup: "/kubepods/podu1/cid", PodUID: "u1", ContainerID: "cid"}, ok: true},
		{name: "another node's pod", record: "6,2003,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/k1s-n2/kubepods/podu1/cid,task=sh,pid=7,uid=0",
			want: OOMEvent{Process: "sh", Pid: 7, Cgroup: "/k1s-n2/kubepods/podu1/cid"}, ok: true},
		{name: "the node out of memory", record: "6,2004,1,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=java,pid=99,uid=1000",
			want: OOMEvent{System: true, Process: "java", Pid: 99, Cgroup: "/user.slice"}, ok: true},
		{name: "another message", record: "6,2005,1,-;Memory cgroup out of memory: Killed process 4242 (testapp)"},
		{name: "garbage", record: "no separator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseOOMRecord(tt.record, "/k1s-n1/kubepods/")
			if tt.name == "a guaranteed pod's" {
				got, ok = parseOOMRecord(tt.record, "/kubepods/")
			}
			if ok != tt.ok || got != tt.want {
				t.Errorf("parse = %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestManagerResize(t *testing.T) {
	ctx := context.Background()
	d := newFakeDriver()
	m, err := newWithDriver(Config{CgroupsPerQOS: true}, rl("4", "8Gi"), d)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := pod("r", ctr("a", rl("100m", "32Mi"), rl("200m", "64Mi")))
	name := "/kubepods/burstable/podr"
	if err := m.EnsurePod(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	check := func(step string, want map[string]int64) {
		t.Helper()
		if diff := cmp.Diff(want, d.set[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}
	check("created", map[string]int64{"shares": 102, "quota": 20000, "period": 100000, "memory": 64 << 20, "pids": -1})
	// cpu up, memory down: before the containers change, the pod cgroup
	// holds the larger of each; after, exactly the new resources.
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("150m", "32Mi"), Limits: rl("300m", "48Mi")}
	if err := m.EnsurePod(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	check("before the containers", map[string]int64{"shares": 153, "quota": 30000, "period": 100000, "memory": 64 << 20, "pids": -1})
	m.PodSynced(ctx, p)
	check("after the containers", map[string]int64{"shares": 153, "quota": 30000, "period": 100000, "memory": 48 << 20, "pids": -1})
	// Nothing changed: nothing written.
	d.set[name]["memory"] = 1
	if err := m.EnsurePod(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	m.PodSynced(ctx, p)
	if d.set[name]["memory"] != 1 {
		t.Error("an unchanged pod's cgroup was written again")
	}
}
