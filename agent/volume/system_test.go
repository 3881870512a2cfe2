package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
)

// requireMounts skips the test unless the process may mount.
func requireMounts(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	probe := t.TempDir()
	if err := unix.Mount("tmpfs", probe, "tmpfs", 0, "size=64k"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mount not permitted here")
		}
		t.Fatalf("probe mount: %v", err)
	}
	if err := unix.Unmount(probe, 0); err != nil {
		t.Fatalf("probe unmount: %v", err)
	}
}

func TestSystemMounter(t *testing.T) {
	requireMounts(t)
	m := SystemMounter{}
	dir := t.TempDir()
	target := filepath.Join(dir, "with space")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if mounted, err := m.IsMountPoint(target); err != nil || mounted {
		t.Fatalf("IsMountPoint before = %v, %v", mounted, err)
	}
	if err := m.MountTmpfs(target, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	if mounted, err := m.IsMountPoint(target); err != nil || !mounted {
		t.Fatalf("IsMountPoint after mount = %v, %v", mounted, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil || st.Type != unix.TMPFS_MAGIC || st.Blocks*uint64(st.Bsize) != 1<<20 {
		t.Errorf("statfs = type %x, %d blocks of %d, %v; want a 1MiB tmpfs", st.Type, st.Blocks, st.Bsize, err)
	}
	points, err := m.MountPoints(dir)
	if err != nil || len(points) != 1 || points[0] != target {
		t.Errorf("MountPoints = %q, %v; want [%q]", points, err, target)
	}
	if err := m.Unmount(target); err != nil {
		t.Fatal(err)
	}
	if mounted, _ := m.IsMountPoint(target); mounted {
		t.Errorf("still mounted after Unmount")
	}
	// Unmounting what is not mounted is not an error.
	if err := m.Unmount(target); err != nil {
		t.Errorf("second Unmount: %v", err)
	}
}

// TestRealVolumes runs the manager with real mounts: a memory emptyDir, a
// secret and a subPath bind, then tears the pod down.
func TestRealVolumes(t *testing.T) {
	requireMounts(t)
	dir := t.TempDir()
	objects := newFakeObjects()
	objects.setSecret("ns1", "creds", map[string][]byte{"k": []byte("v")})
	mgr, err := New(Config{PodsDir: filepath.Join(dir, "pods")}, Deps{
		Objects: objects, Mounter: SystemMounter{}, Clock: clocktesting.NewFakeClock(t0),
	})
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(dir, "pods", "uid1")
	t.Cleanup(func() {
		// Leave nothing mounted whatever happened.
		points, _ := SystemMounter{}.MountPoints(podDir)
		for i := len(points) - 1; i >= 0; i-- {
			_ = unix.Unmount(points[i], unix.MNT_DETACH)
		}
	})
	pod := newPod("uid1",
		corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("2Mi"))}}},
		corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
	)
	paths, err := mgr.SetUpPod(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mem", "sec"} {
		var st unix.Statfs_t
		if err := unix.Statfs(paths[name], &st); err != nil || st.Type != unix.TMPFS_MAGIC {
			t.Errorf("volume %s is not a tmpfs (%x, %v)", name, st.Type, err)
		}
	}
	if got := readFile(t, filepath.Join(paths["sec"], "k")); got != "v" {
		t.Errorf("secret k = %q", got)
	}
	// A second sync does not stack another tmpfs.
	if _, err := mgr.SetUpPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "mem", MountPath: "/logs", SubPath: "logs"}}}
	mounts, err := mgr.Mounts(pod, c, paths, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What is written through the pinned target lands in the volume.
	if err := os.WriteFile(filepath.Join(mounts[0].HostPath, "out"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(paths["mem"], "logs", "out")); got != "hello" {
		t.Errorf("subPath write not in the volume: %q", got)
	}
	points, _ := SystemMounter{}.MountPoints(podDir)
	if len(points) != 3 {
		t.Errorf("mounts = %q, want 2 tmpfs and 1 bind", points)
	}
	if err := mgr.TearDownPod(context.Background(), "uid1"); err != nil {
		t.Fatal(err)
	}
	if points, _ := (SystemMounter{}).MountPoints(podDir); len(points) != 0 {
		t.Errorf("mounts left after teardown: %q", points)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir left: %v", err)
	}
}
