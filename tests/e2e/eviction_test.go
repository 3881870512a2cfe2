package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/k1s/k1s/internal/ociimage"
	"github.com/k1s/k1s/tests/e2e/framework"
)

const mi = int64(1) << 20

// TestEviction runs a node whose agent directory (nodefs, and containerd's
// root: imagefs) is a small loop-mounted ext4 filesystem. Pods filling
// their emptyDirs cross --eviction-hard=nodefs.available<100Mi: the node
// reports DiskPressure and gets the disk-pressure taint, refuses new pods,
// and evicts the BestEffort pod first, then the Burstable one (furthest
// above its ephemeral-storage request), never the Guaranteed one; once
// the disk is free again the condition and the taint go. Then image GC
// brings the filesystem from above --image-gc-high-threshold to below
// --image-gc-low-threshold by removing the least recently used unused
// image, never one in use nor the pause image.
func TestEviction(t *testing.T) {
	s := framework.NewNodeServer(t)
	agentDir := filepath.Join(s.DataDir, "agent")
	loopMount(t, agentDir, 600*mi, s)
	// The mount hides the air-gap images NewNodeServer copied there.
	images := filepath.Join(agentDir, "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(framework.ImagesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tar") {
			framework.CopyFile(t, filepath.Join(framework.ImagesDir(t), e.Name()), filepath.Join(images, e.Name()))
		}
	}
	s.Args = append(s.Args,
		"--eviction-hard=memory.available<100Mi,nodefs.available<100Mi",
		"--eviction-pressure-transition-period=15s",
		"--image-gc-high-threshold=70", "--image-gc-low-threshold=68",
		"--image-minimum-gc-age=1s", "--image-gc-period=5s")
	s.Start(t)
	s.WaitNodeReady(t, 90*time.Second)
	c := s.Client(t)
	ctx := context.Background()

	// Each pod writes its share into its emptyDir once told to (a file
	// the test drops into the volume), so the test can size a filler first.
	writer := func(name string, mb int, req corev1.ResourceList, limits corev1.ResourceList) *corev1.Pod {
		p := newPod(name, container("w", busybox, "sh", "-c",
			fmt.Sprintf("while [ ! -e /data/go ]; do sleep 0.2; done; dd if=/dev/zero of=/data/fill bs=1M count=%d; sync; touch /data/done; sleep 3600", mb)))
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: limits}
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.TerminationGracePeriodSeconds = new(int64)
		return p
	}
	guaranteedRes := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("400Mi")}
	pods := map[string]*corev1.Pod{
		"guaranteed": writer("guaranteed", 1, guaranteedRes, guaranteedRes),
		"burstable":  writer("burstable", 120, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("150Mi")}, nil),
		"besteffort": writer("besteffort", 20, nil, nil),
	}
	written := int64(1+120+20) * mi
	for _, p := range pods {
		create(t, c, p)
	}
	for name := range pods {
		pods[name] = framework.WaitPod(t, c, "default", name, 90*time.Second, "running", framework.Running)
	}
	if q := pods["besteffort"].Status.QOSClass; q != corev1.PodQOSBestEffort {
		t.Fatalf("besteffort pod's QoS class is %s", q)
	}

	// Leave 60Mi once every pod has written: below the 100Mi threshold
	// with the BestEffort pod's 20Mi freed, above it with the Burstable
	// pod's 120Mi freed too.
	filler := filepath.Join(agentDir, "filler")
	fill(t, filler, available(t, agentDir)-written-60*mi)
	// The manager evicts the next pod as soon as the last one is gone
	// while the signal stays under its threshold, so the order is read
	// from a watch, not from polls that may see both at once.
	order := watchEvictions(t, c)
	for _, p := range pods {
		dir := filepath.Join(agentDir, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "data")
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatalf("start writer %s: %v", p.Name, err)
		}
	}

	t.Run("DiskPressure, its taint, and new pods refused", func(t *testing.T) {
		waitNode(t, c, 60*time.Second, "DiskPressure=True and the disk-pressure taint", func(n *corev1.Node) bool {
			return conditionStatus(n, corev1.NodeDiskPressure) == corev1.ConditionTrue && hasTaint(n, corev1.TaintNodeDiskPressure)
		})
		refused := newPod("refused", container("c", busybox, "sleep", "3600"))
		create(t, c, refused)
		p := framework.WaitPod(t, c, "default", "refused", 30*time.Second, "refused", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if p.Status.Reason != "Evicted" || !strings.Contains(p.Status.Message, "DiskPressure") {
			t.Errorf("refused pod: reason %q message %q, want Evicted naming DiskPressure", p.Status.Reason, p.Status.Message)
		}
	})

	t.Run("BestEffort evicted first, then Burstable, Guaranteed kept", func(t *testing.T) {
		be := framework.WaitPod(t, c, "default", "besteffort", 60*time.Second, "evicted", evicted)
		if !strings.HasPrefix(be.Status.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 100Mi, available: ") {
			t.Errorf("eviction message %q", be.Status.Message)
		}
		if !hasPodCondition(be, corev1.DisruptionTarget, corev1.PodReasonTerminationByKubelet) {
			t.Errorf("evicted pod has no DisruptionTarget condition: %+v", be.Status.Conditions)
		}
		framework.WaitPod(t, c, "default", "burstable", 60*time.Second, "evicted", evicted)
		// Of the writers (the "refused" pod, rejected at admission, is
		// Evicted too).
		var got []string
		for _, name := range order() {
			if _, writer := pods[name]; writer {
				got = append(got, name)
			}
		}
		if len(got) < 2 || got[0] != "besteffort" || got[1] != "burstable" {
			t.Errorf("eviction order of the writers %v, want besteffort then burstable", got)
		}
		waitNode(t, c, 90*time.Second, "DiskPressure=False and no disk-pressure taint", func(n *corev1.Node) bool {
			return conditionStatus(n, corev1.NodeDiskPressure) == corev1.ConditionFalse && !hasTaint(n, corev1.TaintNodeDiskPressure)
		})
		if g, err := c.CoreV1().Pods("default").Get(ctx, "guaranteed", metav1.GetOptions{}); err != nil || !framework.Running(g) {
			t.Errorf("the Guaranteed pod was evicted or stopped: %v %+v", err, g.Status)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("image GC frees down to the low threshold, images in use kept", func(t *testing.T) {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		var tars []string
		for i := 0; i < 3; i++ {
			tars = append(tars, randomImage(t, fmt.Sprintf("k1s.local/gc-%d:1", i), 40*mi))
		}
		out, err := exec.Command(s.Bin, append([]string{"images", "import", "--container-runtime-endpoint", "unix://" + framework.RuntimeSocket}, tars...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
		if got := gcImages(t, s); len(got) != 3 {
			t.Fatalf("gc images present after import: %v", got)
		}
		// Usage 72%: over the high threshold (70%); freeing to 68% takes
		// less than one image.
		capacity, avail := fsSize(t, agentDir)
		fill(t, filler, avail-capacity*28/100)
		err = wait.PollUntilContextTimeout(ctx, time.Second, 60*time.Second, true, func(context.Context) (bool, error) {
			return len(gcImages(t, s)) < 3, nil
		})
		if err != nil {
			t.Fatalf("image GC removed nothing within 60s; images: %v", gcImages(t, s))
		}
		time.Sleep(6 * time.Second) // one more GC period: it must not go on
		capacity, avail = fsSize(t, agentDir)
		if used := 100 - avail*100/capacity; used > 68 {
			t.Errorf("usage %d%% after image GC, want at most the low threshold 68%%", used)
		}
		left := gcImages(t, s)
		if len(left) == 0 {
			t.Errorf("image GC removed every unused image; it should stop at the low threshold")
		}
		all := listImages(t, s)
		for _, want := range []string{busybox, "k1s.local/pause:3.10"} {
			if !strings.Contains(all, want) {
				t.Errorf("image GC removed %s (in use or pinned); images:\n%s", want, all)
			}
		}
		t.Logf("unused images left: %v", left)
	})

	t.Run("a pod over its emptyDir sizeLimit is evicted", func(t *testing.T) {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		limit := resource.MustParse("5Mi")
		p := newPod("oversize", container("w", busybox, "sh", "-c", "dd if=/dev/zero of=/data/f bs=1M count=10; sync; sleep 3600"))
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
		create(t, c, p)
		// Volume usage is sampled every minute (the stats provider's).
		got := framework.WaitPod(t, c, "default", "oversize", 150*time.Second, "evicted", evicted)
		if want := `Usage of EmptyDir volume "data" exceeds the limit "5Mi". `; got.Status.Message != want {
			t.Errorf("message %q, want %q", got.Status.Message, want)
		}
		if g, err := c.CoreV1().Pods("default").Get(ctx, "guaranteed", metav1.GetOptions{}); err != nil || !framework.Running(g) {
			t.Errorf("the Guaranteed pod was evicted or stopped: %v", err)
		}
	})
}

// watchEvictions records, from a watch on the default namespace's pods,
// the names of pods in the order they became Evicted; the returned
// function reads the record so far.
func watchEvictions(t *testing.T, c kubernetes.Interface) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch pods: %v", err)
	}
	var mu sync.Mutex
	var names []string
	seen := map[string]bool{}
	for i := range list.Items {
		if evicted(&list.Items[i]) {
			seen[list.Items[i].Name] = true
			names = append(names, list.Items[i].Name)
		}
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || !evicted(p) {
				continue
			}
			mu.Lock()
			if !seen[p.Name] {
				seen[p.Name] = true
				names = append(names, p.Name)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), names...)
	}
}

func evicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
}

func conditionStatus(n *corev1.Node, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func hasPodCondition(p *corev1.Pod, typ corev1.PodConditionType, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue && c.Reason == reason {
			return true
		}
	}
	return false
}

func waitNode(t *testing.T, c kubernetes.Interface, timeout time.Duration, what string, cond func(*corev1.Node) bool) {
	t.Helper()
	var last *corev1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = n
		return cond(n), nil
	})
	if err != nil {
		var conds []string
		if last != nil {
			for _, c := range last.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
			}
			t.Fatalf("node: %s not reached within %s; conditions %v taints %v", what, timeout, conds, last.Spec.Taints)
		}
		t.Fatalf("node: %s not reached within %s", what, timeout)
	}
}

// loopMount mounts a new ext4 filesystem of size bytes (no reserved
// blocks) at dir; cleanup stops the node first (it holds files there),
// then unmounts and detaches the loop device.
func loopMount(t *testing.T, dir string, size int64, s *framework.Server) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "agent.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("mkfs.ext4", "-q", "-m", "0", img)
	dev := run("losetup", "--find", "--show", img)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", dev, dir).CombinedOutput(); err != nil {
		exec.Command("losetup", "-d", dev).Run()
		t.Fatalf("mount %s: %v\n%s", dev, err, out)
	}
	t.Cleanup(func() {
		s.KillAll(t)
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			// Lazily, so the loop device still goes.
			t.Errorf("umount %s: %v\n%s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v\n%s", dev, err, out)
		}
	})
}

func fsSize(t *testing.T, dir string) (capacity, available int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}

func available(t *testing.T, dir string) int64 { _, a := fsSize(t, dir); return a }

// fill makes path a file of size bytes (allocated, not sparse).
func fill(t *testing.T, path string, size int64) {
	t.Helper()
	if size <= 0 {
		t.Fatalf("filler size %d: the filesystem is fuller than the test expects", size)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Fatalf("fallocate %s: %v", path, err)
	}
}

// randomImage writes an image whose one layer holds size random bytes
// and returns the archive's path.
func randomImage(t *testing.T, name string, size int64) string {
	t.Helper()
	dir := t.TempDir()
	blob := filepath.Join(dir, "blob")
	f, err := os.Create(blob)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tar := filepath.Join(dir, "image.tar")
	out, err := os.Create(tar)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := ociimage.Write(out, ociimage.Image{Name: name, Config: ociimage.Config{Cmd: []string{"/blob"}},
		Entries: []ociimage.Entry{{Path: "/blob", Source: blob}}}); err != nil {
		t.Fatal(err)
	}
	return tar
}

func listImages(t *testing.T, s *framework.Server) string {
	t.Helper()
	out, err := exec.Command(s.Bin, "images", "list", "--container-runtime-endpoint", "unix://"+framework.RuntimeSocket).CombinedOutput()
	if err != nil {
		t.Fatalf("images list: %v\n%s", err, out)
	}
	return string(out)
}

func gcImages(t *testing.T, s *framework.Server) []string {
	var out []string
	for _, line := range strings.Split(listImages(t, s), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "k1s.local/gc-") {
			out = append(out, f[0])
		}
	}
	return out
}
