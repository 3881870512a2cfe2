package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkSchedulingCycle measures the scheduling algorithm alone
// (snapshot update, filtering, scoring, assume) for pods asking for
// 100m/128Mi on 1000 nodes: the ceiling of the scheduler's throughput
// without the apiserver. Run:
//
//	go test -run - -bench SchedulingCycle ./controllers/scheduler
func BenchmarkSchedulingCycle(b *testing.B) {
	cfg := Config{}
	cfg.SetDefaults()
	s := &Scheduler{cfg: cfg, cache: newSchedCache(), snap: newSnapshot(), nominator: newNominator(),
		par: newParallelizer(cfg.Parallelism), rnd: rand.New(rand.NewPCG(1, 2))}
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
