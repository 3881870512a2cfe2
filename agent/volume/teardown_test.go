package volume

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestTearDownPod(t *testing.T) {
	e := newEnv(t)
	e.objects.setSecret("ns1", "creds", map[string][]byte{"k": []byte("v")})
	pod := newPod("uid1",
		corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
	)
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.2"}}
	paths := e.setUp(pod)
	c := &corev1.Container{Name: "app", TerminationMessagePath: "/dev/termination-log",
		VolumeMounts: []corev1.VolumeMount{{Name: "mem", MountPath: "/logs", SubPath: "logs"}}}
	if _, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{}); err != nil {
		t.Fatal(err)
	}
	podDir := e.podDir("uid1")
	subTarget := filepath.Join(podDir, "volume-subpaths", "mem", "app", "0")
	if mounted, _ := e.mounter.MountPoints(podDir); len(mounted) != 3 {
		t.Fatalf("mounts before teardown = %v, want 2 tmpfs and 1 bind", mounted)
	}

	// An unmount failure keeps the directory: removing it could reach into
	// a still-mounted volume.
	e.mounter.UnmountErr = errors.New("busy")
	if err := e.mgr.TearDownPod(context.Background(), "uid1"); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("TearDownPod error = %v, want busy", err)
	}
	if _, err := os.Stat(podDir); err != nil {
		t.Fatalf("pod dir removed despite the failed unmount: %v", err)
	}

	e.mounter.UnmountErr = nil
	if err := e.mgr.TearDownPod(context.Background(), "uid1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir still there: %v", err)
	}
	// The subPath bind (deepest) went first, then the volumes.
	if len(e.mounter.Unmounted) != 3 || e.mounter.Unmounted[0] != subTarget {
		t.Errorf("unmounted %v, want %s first", e.mounter.Unmounted, subTarget)
	}
	if left, _ := e.mounter.MountPoints(podDir); len(left) != 0 {
		t.Errorf("mounts left: %v", left)
	}
	// Tearing down twice is fine.
	if err := e.mgr.TearDownPod(context.Background(), "uid1"); err != nil {
		t.Errorf("second TearDownPod: %v", err)
	}
	// A pod set up again after teardown starts from scratch.
	paths = e.setUp(pod)
	if m, ok := e.mounter.Get(paths["mem"]); !ok || m.Type != "tmpfs" {
		t.Errorf("tmpfs not mounted again after teardown")
	}
}

func TestCleanupOrphans(t *testing.T) {
	e := newEnv(t)
	for _, uid := range []string{"keep", "orphan1", "orphan2"} {
		e.setUp(newPod(uid, corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}))
	}
	if err := e.mgr.CleanupOrphans(context.Background(), sets.New[types.UID]("keep")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(e.dir, "pods"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	if !reflect.DeepEqual(names, []string{"keep"}) {
		t.Errorf("pod dirs = %v, want [keep]", names)
	}
	if left, _ := e.mounter.MountPoints(filepath.Join(e.dir, "pods")); len(left) != 1 || !strings.Contains(left[0], "/keep/") {
		t.Errorf("mounts = %v, want only keep's", left)
	}
	// No pods dir at all is not an error.
	e2 := newEnv(t)
	if err := e2.mgr.CleanupOrphans(context.Background(), nil); err != nil {
		t.Errorf("CleanupOrphans without a pods dir: %v", err)
	}
}

func TestTearDownRefusesBadUID(t *testing.T) {
	e := newEnv(t)
	for _, uid := range []types.UID{"", "..", "a/b"} {
		if err := e.mgr.TearDownPod(context.Background(), uid); err == nil {
			t.Errorf("TearDownPod(%q) succeeded", uid)
		}
	}
}

func TestParseMountPoints(t *testing.T) {
	info := `22 1 8:1 / / rw - ext4 /dev/sda1 rw
30 22 0:40 / /var/lib/k1s/agent/pods/u1/volumes/kubernetes.io~secret/s rw - tmpfs tmpfs rw
31 22 0:41 / /var/lib/k1s/agent/pods/u1/volumes/kubernetes.io~empty-dir/with\040space rw - tmpfs tmpfs rw
32 22 0:42 / /var/lib/k1s/agent/pods/u10/volumes/x rw - tmpfs tmpfs rw
33 22 0:42 / /var/lib/k1s/agent/pods/u1 rw - tmpfs tmpfs rw
`
	got, err := parseMountPoints(bufio.NewScanner(strings.NewReader(info)), "/var/lib/k1s/agent/pods/u1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/var/lib/k1s/agent/pods/u1/volumes/kubernetes.io~secret/s",
		"/var/lib/k1s/agent/pods/u1/volumes/kubernetes.io~empty-dir/with space",
		"/var/lib/k1s/agent/pods/u1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mount points = %q, want %q", got, want)
	}
}
