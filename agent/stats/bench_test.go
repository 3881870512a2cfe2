package stats

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCgroupRead reads every cgroup under the memory hierarchy's
// k8s.io (containers of the flat layout) or kubepods, as one collection
// does for the pods' containers.
func BenchmarkCgroupRead(b *testing.B) {
	h, err := newHostCgroups()
	if err != nil || h.v2 {
		b.Skip("needs cgroup v1")
	}
	var refs []cgroupRef
	for _, parent := range []string{"k8s.io", "kubepods"} {
		entries, _ := os.ReadDir(filepath.Join(h.mounts["memory"], parent))
		for _, e := range entries {
			if e.IsDir() {
				refs = append(refs, h.named("/"+parent+"/"+e.Name()))
			}
		}
	}
	if len(refs) == 0 {
		b.Skip("no container cgroups here")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range refs {
			if _, err := h.read(r, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(refs)), "cgroups/op")
}
