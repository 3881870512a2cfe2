package eviction

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k1s/k1s/internal/thresholds"
)

func TestNodeSummary(t *testing.T) {
	root := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		}}}
	vol := filepath.Join(root, "vol", "data")
	logs := filepath.Join(root, "logs", "c")
	for _, d := range []string{vol, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(vol, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "0.log"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	n := NewNodeSummary(NodeSummaryConfig{
		NodeName: "n", RootDir: root,
		ImageFsDir:   func(context.Context) (string, error) { return root, nil },
		PodVolumeDir: func(_ *corev1.Pod, v string) string { return filepath.Join(root, "vol", v) },
		PodLogDir:    func(*corev1.Pod) string { return filepath.Join(root, "logs") },
		Pods:         func() []*corev1.Pod { return []*corev1.Pod{pod} },
	}, nil)
	s, err := n.Get(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	obs := observe(s)
	for _, sig := range []thresholds.Signal{thresholds.MemoryAvailable, thresholds.NodeFsAvailable, thresholds.NodeFsInodesFree,
		thresholds.ImageFsAvailable, thresholds.ImageFsInodesFree, thresholds.PIDAvailable} {
		o, ok := obs[sig]
		if !ok {
			t.Errorf("no observation of %s", sig)
			continue
		}
		if o.capacity.Sign() <= 0 || o.available.Cmp(o.capacity) > 0 {
			t.Errorf("%s: available %s of capacity %s", sig, o.available.String(), o.capacity.String())
		}
	}
	if len(s.Pods) != 1 || len(s.Pods[0].VolumeStats) != 1 || s.Pods[0].VolumeStats[0].Name != "data" {
		t.Fatalf("pod stats %+v, want one disk-backed emptyDir", s.Pods)
	}
	if used := *s.Pods[0].VolumeStats[0].UsedBytes; used < 1<<20 {
		t.Errorf("emptyDir usage %d, want at least the 1MiB written", used)
	}
	if l := s.Pods[0].Containers[0].Logs; l == nil || *l.UsedBytes < 64<<10 {
		t.Errorf("log usage %+v, want at least 64KiB", l)
	}
	if e := s.Pods[0].EphemeralStorage; e == nil || *e.UsedBytes < (1<<20)+(64<<10) {
		t.Errorf("ephemeral storage %+v, want volume + logs", e)
	}
}
