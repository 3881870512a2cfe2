package scheduler

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkSchedulingCycle measures the scheduling algorithm alone
// (snapshot update, filtering, scoring, assume) for pods asking for
// 100m/128Mi on 1000 nodes: the ceiling of the scheduler's throughput
// without the apiserver. Run:
//
//	go test -run - -bench SchedulingCycle ./controllers/scheduler
func BenchmarkSchedulingCycle(b *testing.B) {
	s := newCycleScheduler()
	for i := 0; i < 1000; i++ {
		s.cache.addNode(makeNode(fmt.Sprintf("node-%04d", i), "400", "1600Gi", nodeLabels("zone", fmt.Sprintf("z%d", i%3))))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := makePod(fmt.Sprintf("p%d", i), requests("cpu", "100m", "memory", "128Mi"))
		pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
		s.cache.update(s.snap)
		node, fe, err := s.findNode(newPodInfo(pod), s.nominator.snapshot())
		if err != nil || fe != nil {
			b.Fatalf("pod %d: %v %v", i, err, fe)
		}
		ap := *pod
		ap.Spec.NodeName = node
		if err := s.cache.assume(newPodInfo(&ap)); err != nil {
			b.Fatal(err)
		}
	}
}

// newCycleScheduler returns a scheduler with the default configuration
// and no informers, client or queue: enough to run findNode on what its
// cache holds.
func newCycleScheduler() *Scheduler {
	cfg := Config{}
	cfg.SetDefaults()
	return &Scheduler{cfg: cfg, cache: newSchedCache(), snap: newSnapshot(), nominator: newNominator(),
		par: newParallelizer(cfg.Parallelism), rnd: rand.New(rand.NewPCG(1, 2))}
}

// TestCyclesReuseBuffers runs cycles of different outcomes one after the
// other on one scheduler, whose scratch slices carry over: each cycle's
// answer must be what it would be on its own.
func TestCyclesReuseBuffers(t *testing.T) {
	s := newCycleScheduler()
	for i := 0; i < 150; i++ {
		disk := "hdd"
		if i%10 == 0 {
			disk = "ssd"
		}
		s.cache.addNode(makeNode(fmt.Sprintf("node-%03d", i), "4", "16Gi", nodeLabels("disk", disk)))
	}
	s.cache.update(s.snap)
	cases := []struct {
		pod     *corev1.Pod
		wantErr string // "" when the pod must fit
		fits    func(node string) bool
	}{
		{pod: makePod("any", requests("cpu", "100m")), fits: func(string) bool { return true }},
		{pod: makePod("ssd", nodeSelector("disk", "ssd")), fits: func(n string) bool { return strings.HasSuffix(n, "0") }},
		{pod: makePod("nvme", nodeSelector("disk", "nvme")), wantErr: "0/150 nodes are available: 150 node(s) didn't match Pod's node affinity/selector."},
		{pod: makePod("big", requests("cpu", "5")), wantErr: "0/150 nodes are available: 150 Insufficient cpu."},
		{pod: makePod("ssd-again", nodeSelector("disk", "ssd")), fits: func(n string) bool { return strings.HasSuffix(n, "0") }},
		{pod: makePod("any-again"), fits: func(string) bool { return true }},
	}
	for _, tc := range cases {
		node, fe, err := s.findNode(newPodInfo(tc.pod), s.nominator.snapshot())
		if err != nil {
			t.Fatalf("%s: %v", tc.pod.Name, err)
		}
		switch {
		case tc.wantErr != "":
			if fe == nil || fe.fitError == nil {
				t.Fatalf("%s: placed on %q, want %q", tc.pod.Name, node, tc.wantErr)
			}
			if got := fe.fitError.Error(); got != tc.wantErr {
				t.Errorf("%s: %q, want %q", tc.pod.Name, got, tc.wantErr)
			}
		case fe != nil:
			t.Errorf("%s: not placed: %v", tc.pod.Name, fe.fitError)
		case !tc.fits(node):
			t.Errorf("%s: placed on %s, which it does not fit", tc.pod.Name, node)
		}
	}
}

func TestReuse(t *testing.T) {
	buf := []int{1, 2, 3, 4}
	got := reuse(&buf, 3)
	if len(got) != 3 || got[0] != 0 || got[2] != 0 || &got[0] != &buf[0] {
		t.Errorf("reuse within capacity: %v (same array %v)", got, &got[0] == &buf[0])
	}
	got = reuse(&buf, 6)
	if len(got) != 6 || cap(buf) < 6 || &got[0] != &buf[0] {
		t.Errorf("reuse beyond capacity: %v, buf cap %d", got, cap(buf))
	}
	for _, v := range got {
		if v != 0 {
			t.Fatalf("reuse beyond capacity not zeroed: %v", got)
		}
	}
}
