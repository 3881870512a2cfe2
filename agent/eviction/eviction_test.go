package eviction

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/internal/thresholds"
)

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

func mustThresholds(t *testing.T, hard, soft, grace, reclaim string) []Threshold {
	t.Helper()
	h, err := thresholds.ParseFlag("eviction-hard", hard)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ParseThresholds(h, soft, grace, reclaim)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		name                    string
		hard, soft, grace, recl string
		want                    []string
		wantErr                 string
	}{
		{name: "hard only", hard: "memory.available<100Mi,nodefs.available<10%", want: []string{"memory.available<100Mi", "nodefs.available<10%"}},
		{name: "soft with grace", soft: "memory.available<1Gi", grace: "memory.available=1m30s", want: []string{"memory.available<1Gi (grace 1m30s)"}},
		{name: "soft without grace", soft: "memory.available<1Gi", wantErr: "--eviction-soft-grace-period: the soft threshold memory.available has no grace period"},
		{name: "bad grace", soft: "memory.available<1Gi", grace: "memory.available=soon", wantErr: "--eviction-soft-grace-period: memory.available=soon is not a non-negative duration"},
		{name: "grace unknown signal", grace: "disk.free=1m", wantErr: `--eviction-soft-grace-period: unsupported eviction signal "disk.free"`},
		{name: "bad soft", soft: "memory.available=1Gi", wantErr: "--eviction-soft:"},
		{name: "bad min reclaim", recl: "memory.available=lots", wantErr: "--eviction-minimum-reclaim:"},
		{name: "min reclaim applies", hard: "nodefs.available<10%", recl: "nodefs.available=5%", want: []string{"nodefs.available<10%"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := thresholds.ParseFlag("eviction-hard", tt.hard)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseThresholds(h, tt.soft, tt.grace, tt.recl)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, th := range got {
				s = append(s, th.String())
				if tt.recl != "" && th.MinReclaim == nil {
					t.Errorf("%s has no minimum reclaim", th)
				}
			}
			if strings.Join(s, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", s, tt.want)
			}
		})
	}
}

func summary(memAvail, memWS, fsAvail, fsCap, imgAvail, imgCap uint64, pods ...statsapi.PodStats) *statsapi.Summary {
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory:  &statsapi.MemoryStats{AvailableBytes: u64(memAvail), WorkingSetBytes: u64(memWS)},
		Fs:      &statsapi.FsStats{AvailableBytes: u64(fsAvail), CapacityBytes: u64(fsCap), InodesFree: u64(1000), Inodes: u64(1000)},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{AvailableBytes: u64(imgAvail), CapacityBytes: u64(imgCap)}},
		Rlimit:  &statsapi.RlimitStats{MaxPID: i64(1000), NumOfRunningProcesses: i64(990)},
	}, Pods: pods}
	return s
}

func TestObserveAndMet(t *testing.T) {
	const Mi = 1 << 20
	ts := mustThresholds(t, "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,pid.available<5%", "", "", "nodefs.available=5%")
	tests := []struct {
		name    string
		s       *statsapi.Summary
		reclaim bool
		want    []thresholds.Signal
	}{
		{name: "nothing", s: summary(500*Mi, 500*Mi, 500*Mi, 1000*Mi, 500*Mi, 1000*Mi), want: nil},
		{name: "memory", s: summary(50*Mi, 950*Mi, 500*Mi, 1000*Mi, 500*Mi, 1000*Mi), want: []thresholds.Signal{thresholds.MemoryAvailable}},
		{name: "nodefs", s: summary(500*Mi, 500*Mi, 90*Mi, 1000*Mi, 500*Mi, 1000*Mi), want: []thresholds.Signal{thresholds.NodeFsAvailable}},
		{name: "nodefs over threshold but within min reclaim", s: summary(500*Mi, 500*Mi, 120*Mi, 1000*Mi, 500*Mi, 1000*Mi), reclaim: true, want: []thresholds.Signal{thresholds.NodeFsAvailable}},
		{name: "nodefs over threshold without reclaim", s: summary(500*Mi, 500*Mi, 120*Mi, 1000*Mi, 500*Mi, 1000*Mi), want: nil},
		{name: "imagefs", s: summary(500*Mi, 500*Mi, 500*Mi, 1000*Mi, 100*Mi, 1000*Mi), want: []thresholds.Signal{thresholds.ImageFsAvailable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Node.Rlimit.NumOfRunningProcesses = i64(10)
			obs := observe(tt.s)
			var got []thresholds.Signal
			for _, i := range met(ts, allIndexes(ts), obs, tt.reclaim) {
				got = append(got, ts[i].Signal)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("met %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("met %v, want %v", got, tt.want)
				}
			}
		})
	}
	obs := observe(summary(1, 1, 1, 1, 1, 1))
	if o := obs[thresholds.PIDAvailable]; o.available.Value() != 10 || o.capacity.Value() != 1000 {
		t.Errorf("pid.available = %s of %s, want 10 of 1000", o.available.String(), o.capacity.String())
	}
	if o := obs[thresholds.MemoryAvailable]; o.capacity.Value() != 2 {
		t.Errorf("memory capacity = %s, want available + working set", o.capacity.String())
	}
}

func pod(name string, prio int32, req map[corev1.ResourceName]string, qos corev1.PodQOSClass) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:   corev1.PodSpec{Priority: &prio, Containers: []corev1.Container{{Name: "c"}}, Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		Status: corev1.PodStatus{QOSClass: qos}}
	if req != nil {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{}
		for k, v := range req {
			p.Spec.Containers[0].Resources.Requests[k] = resource.MustParse(v)
		}
	}
	return p
}

func podStats(name string, memWS, disk uint64) statsapi.PodStats {
	return statsapi.PodStats{PodRef: statsapi.PodReference{Name: name, Namespace: "default", UID: name},
		Memory:      &statsapi.MemoryStats{WorkingSetBytes: u64(memWS)},
		VolumeStats: []statsapi.VolumeStats{{Name: "data", FsStats: statsapi.FsStats{UsedBytes: u64(disk), InodesUsed: u64(1)}}},
		Containers:  []statsapi.ContainerStats{{Name: "c", Rootfs: &statsapi.FsStats{UsedBytes: u64(0)}, Logs: &statsapi.FsStats{UsedBytes: u64(0)}}}}
}

func names(pods []*corev1.Pod) string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name)
	}
	return strings.Join(s, ",")
}

func TestRanking(t *testing.T) {
	const Mi = 1 << 20
	tests := []struct {
		name   string
		signal thresholds.Signal
		pods   []*corev1.Pod
		stats  []statsapi.PodStats
		want   string
	}{
		{
			name:   "memory: over request first, then priority, then usage above request",
			signal: thresholds.MemoryAvailable,
			pods: []*corev1.Pod{
				pod("guaranteed", 0, map[corev1.ResourceName]string{"memory": "200Mi"}, corev1.PodQOSGuaranteed),
				pod("besteffort-small", 0, nil, corev1.PodQOSBestEffort),
				pod("besteffort-big", 0, nil, corev1.PodQOSBestEffort),
				pod("burstable-over", 100, map[corev1.ResourceName]string{"memory": "10Mi"}, corev1.PodQOSBurstable),
			},
			stats: []statsapi.PodStats{podStats("guaranteed", 150*Mi, 0), podStats("besteffort-small", 5*Mi, 0), podStats("besteffort-big", 50*Mi, 0), podStats("burstable-over", 100*Mi, 0)},
			want:  "besteffort-big,besteffort-small,burstable-over,guaranteed",
		},
		{
			name:   "disk: pods over their ephemeral-storage request first",
			signal: thresholds.NodeFsAvailable,
			pods: []*corev1.Pod{
				pod("guaranteed", 0, map[corev1.ResourceName]string{"memory": "64Mi", "ephemeral-storage": "100Mi"}, corev1.PodQOSGuaranteed),
				pod("burstable", 0, map[corev1.ResourceName]string{"ephemeral-storage": "100Mi"}, corev1.PodQOSBurstable),
				pod("besteffort", 0, nil, corev1.PodQOSBestEffort),
			},
			stats: []statsapi.PodStats{podStats("guaranteed", 0, 50*Mi), podStats("burstable", 0, 60*Mi), podStats("besteffort", 0, 20*Mi)},
			want:  "besteffort,burstable,guaranteed", // burstable is 40Mi under its request, guaranteed 50Mi
		},
		{
			name:   "pids: lower priority, then more processes",
			signal: thresholds.PIDAvailable,
			pods:   []*corev1.Pod{pod("high", 1000, nil, ""), pod("few", 0, nil, ""), pod("many", 0, nil, "")},
			stats: func() []statsapi.PodStats {
				h, f, m := podStats("high", 0, 0), podStats("few", 0, 0), podStats("many", 0, 0)
				h.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(500)}
				f.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(2)}
				m.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(50)}
				return []statsapi.PodStats{h, f, m}
			}(),
			want: "many,few,high",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &statsapi.Summary{Pods: tt.stats}
			rankFuncs(false)[tt.signal](tt.pods, podStatsFunc(s))
			if got := names(tt.pods); got != tt.want {
				t.Errorf("order %s, want %s", got, tt.want)
			}
		})
	}
}

type fakeSummary struct {
	mu sync.Mutex
	s  *statsapi.Summary
}

func (f *fakeSummary) Get(context.Context, bool) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s, nil
}

type fakeGC struct{ images, containers int }

func (g *fakeGC) DeleteUnusedImages(context.Context) error        { g.images++; return nil }
func (g *fakeGC) DeleteAllUnusedContainers(context.Context) error { g.containers++; return nil }

func TestSynchronize(t *testing.T) {
	const Mi = 1 << 20
	clk := clocktesting.NewFakeClock(time.Now())
	be := pod("besteffort", 0, nil, corev1.PodQOSBestEffort)
	bu := pod("burstable", 0, map[corev1.ResourceName]string{"ephemeral-storage": "100Mi"}, corev1.PodQOSBurstable)
	static := pod("static", 0, nil, corev1.PodQOSBestEffort)
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	fs := &fakeSummary{s: summary(500*Mi, 500*Mi, 50*Mi, 1000*Mi, 50*Mi, 1000*Mi,
		podStats("besteffort", 0, 30*Mi), podStats("burstable", 0, 40*Mi), podStats("static", 0, 300*Mi))}
	gc := &fakeGC{}
	type kill struct {
		name  string
		grace int64
		st    corev1.PodStatus
	}
	var killed []kill
	m, err := New(Config{Thresholds: mustThresholds(t, "nodefs.available<10%", "", "", ""), PressureTransitionPeriod: time.Minute}, Deps{
		Summary: fs, ImageGC: gc, ContainerGC: gc, Clock: clk,
		ActivePods: func() []*corev1.Pod { return []*corev1.Pod{bu, static, be} },
		KillPod: func(p *corev1.Pod, grace int64, update func(*corev1.PodStatus)) error {
			var st corev1.PodStatus
			update(&st)
			killed = append(killed, kill{p.Name, grace, st})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mm := m.(*manager)
	ctx := context.Background()
	if ok, _ := m.Admit(be); !ok {
		t.Fatal("pod refused without pressure")
	}
	evicted, err := mm.synchronize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(evicted) != 1 || evicted[0].Name != "besteffort" || len(killed) != 1 {
		t.Fatalf("evicted %v (%v), want besteffort alone (static pods are never evicted)", evicted, killed)
	}
	if gc.images != 1 || gc.containers != 1 {
		t.Errorf("image GC ran %d, container GC %d times before evicting; want once each", gc.images, gc.containers)
	}
	k := killed[0]
	if k.grace != 1 || k.st.Phase != corev1.PodFailed || k.st.Reason != "Evicted" ||
		!strings.HasPrefix(k.st.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: ") {
		t.Errorf("kill = %+v", k)
	}
	if len(k.st.Conditions) != 1 || k.st.Conditions[0].Type != corev1.DisruptionTarget || k.st.Conditions[0].Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("conditions = %+v, want DisruptionTarget TerminationByKubelet", k.st.Conditions)
	}
	if !m.IsUnderDiskPressure() || m.IsUnderMemoryPressure() || m.IsUnderPIDPressure() {
		t.Error("want DiskPressure only")
	}
	for _, p := range []*corev1.Pod{be, bu} {
		if ok, msg := m.Admit(p); ok || msg != "The node had condition: [DiskPressure]. " {
			t.Errorf("Admit(%s) under disk pressure = %v %q", p.Name, ok, msg)
		}
	}
	if ok, _ := m.Admit(static); !ok {
		t.Error("a static pod is refused under pressure")
	}

	// Recovered: the condition stays for the transition period.
	fs.mu.Lock()
	fs.s = summary(500*Mi, 500*Mi, 500*Mi, 1000*Mi, 500*Mi, 1000*Mi)
	fs.mu.Unlock()
	clk.Step(30 * time.Second)
	if ev, _ := mm.synchronize(ctx); len(ev) != 0 || !m.IsUnderDiskPressure() {
		t.Fatalf("evicted %v after recovery; pressure %v (want kept for the transition period)", ev, m.IsUnderDiskPressure())
	}
	clk.Step(31 * time.Second)
	if _, _ = mm.synchronize(ctx); m.IsUnderDiskPressure() {
		t.Error("DiskPressure still reported after the transition period")
	}
}

func TestSoftGraceAndMemoryAdmission(t *testing.T) {
	const Mi = 1 << 20
	clk := clocktesting.NewFakeClock(time.Now())
	fs := &fakeSummary{s: summary(50*Mi, 950*Mi, 500*Mi, 1000*Mi, 500*Mi, 1000*Mi, podStats("b", 10*Mi, 0))}
	b := pod("b", 0, map[corev1.ResourceName]string{"memory": "1Mi"}, corev1.PodQOSBurstable)
	grace := int64(30)
	b.Spec.TerminationGracePeriodSeconds = &grace
	var kills []int64
	m, err := New(Config{Thresholds: mustThresholds(t, "", "memory.available<100Mi", "memory.available=1m", ""), MaxPodGracePeriodSeconds: 10}, Deps{
		Summary: fs, Clock: clk, ActivePods: func() []*corev1.Pod { return []*corev1.Pod{b} },
		KillPod: func(_ *corev1.Pod, g int64, _ func(*corev1.PodStatus)) error { kills = append(kills, g); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	mm := m.(*manager)
	if ev, _ := mm.synchronize(context.Background()); len(ev) != 0 {
		t.Fatal("evicted before the soft grace period")
	}
	if !m.IsUnderMemoryPressure() {
		t.Fatal("no MemoryPressure while a soft threshold is met")
	}
	be := pod("be", 0, nil, corev1.PodQOSBestEffort)
	if ok, _ := m.Admit(be); ok {
		t.Error("BestEffort pod admitted under memory pressure")
	}
	if ok, _ := m.Admit(b); !ok {
		t.Error("Burstable pod refused under memory pressure alone")
	}
	be.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	if ok, _ := m.Admit(be); !ok {
		t.Error("BestEffort pod tolerating memory-pressure refused")
	}
	clk.Step(61 * time.Second)
	if ev, _ := mm.synchronize(context.Background()); len(ev) != 1 || len(kills) != 1 || kills[0] != 10 {
		t.Fatalf("evicted %v with grace %v, want b with min(max-pod-grace 10, pod 30)", ev, kills)
	}
}
