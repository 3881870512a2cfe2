package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// configArg is the --config file the framework gave the server (it
// holds the etcd ports).
func configArg(t *testing.T, s *framework.Server) string {
	t.Helper()
	for i, a := range s.Args {
		if a == "--config" && i+1 < len(s.Args) {
			return s.Args[i+1]
		}
	}
	t.Fatal("the server has no --config")
	return ""
}

// snapshotCmd runs `k1s etcd-snapshot args...` for s's data dir.
func snapshotCmd(t *testing.T, s *framework.Server, args ...string) string {
	t.Helper()
	// The subcommand, its flags, then the rest (names: flags after a
	// name would be taken for names).
	full := []string{"etcd-snapshot", args[0], "--data-dir", s.DataDir, "--config", configArg(t, s), "--node-name", framework.NodeName}
	full = append(full, args[1:]...)
	out, err := exec.Command(s.Bin, full...).CombinedOutput()
	if err != nil {
		t.Fatalf("k1s %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func snapshotNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		// Snapshots being written: temporary names, hidden ones too.
		if !strings.HasSuffix(e.Name(), ".part") && !strings.HasSuffix(e.Name(), ".tmp") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestEtcdSnapshotRestore: a snapshot saved while ConfigMaps are created
// at ~100/s, the server stopped and brought back from it with
// --cluster-reset --cluster-reset-restore-path (which exits as k3s's
// does); started again, every ConfigMap acknowledged before the snapshot
// began is there, one created after it is not, the node is Ready and a
// pod runs. Then ls, prune and delete on the files.
func TestEtcdSnapshotRestore(t *testing.T) {
	s := framework.NewNodeServer(t)
	s.Args = append(s.Args, "--etcd-disable-snapshots")
	s.Start(t)
	s.WaitNodeReady(t, 90*time.Second)
	// client-go's default 5 requests/s would hold the writer back.
	restCfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	restCfg.QPS, restCfg.Burst = 1000, 1000
	var c kubernetes.Interface = kubernetes.NewForConfigOrDie(restCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// The writer: a create started every 10 ms (100/s, each in its own
	// goroutine, at most 32 in flight, so a slow answer does not slow the
	// rate), each acknowledged create recorded with the time it was
	// acknowledged.
	type ack struct {
		name string
		at   time.Time
	}
	var mu sync.Mutex
	var acked []ack
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		var inflight sync.WaitGroup
		defer inflight.Wait()
		slots := make(chan struct{}, 32)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			select {
			case slots <- struct{}{}:
			default:
				continue // 32 in flight: skip this tick
			}
			inflight.Add(1)
			go func(i int) {
				defer inflight.Done()
				defer func() { <-slots }()
				name := fmt.Sprintf("w-%05d", i)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}
				if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err == nil {
					mu.Lock()
					acked = append(acked, ack{name, time.Now()})
					mu.Unlock()
				}
			}(i)
		}
	}()
	time.Sleep(3 * time.Second)
	began := time.Now()
	out := snapshotCmd(t, s, "save", "--name", "e2e")
	time.Sleep(time.Second)
	close(stop)
	<-writerDone
	var before []string
	mu.Lock()
	for _, a := range acked {
		if a.at.Before(began) {
			before = append(before, a.name)
		}
	}
	total := len(acked)
	mu.Unlock()
	t.Logf("%d creates acknowledged, %d before the snapshot began; %s", total, len(before), strings.TrimSpace(out))
	if len(before) < 100 {
		t.Fatalf("only %d creates before the snapshot: the writer did not run near 100/s", len(before))
	}
	snapDir := filepath.Join(s.DataDir, "server", "db", "snapshots")
	files := snapshotNames(t, snapDir)
	if len(files) != 1 || !strings.HasPrefix(files[0], "e2e-"+framework.NodeName+"-") {
		t.Fatalf("snapshot files = %v, want one e2e-%s-<unix time>", files, framework.NodeName)
	}
	snapshot := filepath.Join(snapDir, files[0])
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-snapshot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	s.Stop(t)
	reset := exec.CommandContext(ctx, s.Bin, append(slices.Clone(s.Args), "--cluster-reset", "--cluster-reset-restore-path", snapshot)...)
	resetOut, err := reset.CombinedOutput()
	if err != nil {
		t.Fatalf("k1s server --cluster-reset: %v\n%s", err, resetOut)
	}
	if !strings.Contains(string(resetOut), "restart without --cluster-reset flag now") {
		t.Errorf("--cluster-reset did not ask for a restart without the flag:\n%s", resetOut)
	}
	dbEntries, _ := os.ReadDir(filepath.Join(s.DataDir, "server", "db"))
	var movedAside, flag bool
	for _, e := range dbEntries {
		movedAside = movedAside || strings.HasPrefix(e.Name(), "etcd-old-")
		flag = flag || e.Name() == "reset-flag"
	}
	if !movedAside || !flag {
		t.Errorf("db dir after the reset = %v, want etcd-old-<time> and reset-flag", dbEntries)
	}
	// A second reset is refused until reset-flag is deleted.
	again, err := exec.CommandContext(ctx, s.Bin, append(slices.Clone(s.Args), "--cluster-reset")...).CombinedOutput()
	if err == nil || !strings.Contains(string(again), "cluster-reset was successfully performed") {
		t.Errorf("a second --cluster-reset = %v:\n%s", err, again)
	}

	s.Start(t)
	s.WaitNodeReady(t, 2*time.Minute)
	c = s.Client(t)
	list, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	var missing []string
	for _, n := range before {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d ConfigMaps acknowledged before the snapshot are missing after the restore: %v", len(missing), missing[:min(len(missing), 10)])
	}
	if have["after-snapshot"] {
		t.Errorf("a ConfigMap created after the snapshot is there: the data was not restored")
	}
	if _, err := os.Stat(filepath.Join(s.DataDir, "server", "db", "reset-flag")); !os.IsNotExist(err) {
		t.Errorf("reset-flag is still there after a normal start: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "after-restore"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	framework.WaitPod(t, c, "default", "after-restore", 2*time.Minute, "Running", framework.Running)

	// ls, prune and delete on the files.
	for range 2 {
		time.Sleep(1100 * time.Millisecond) // names are to the second
		snapshotCmd(t, s, "save", "--name", "e2e")
	}
	ls := snapshotCmd(t, s, "ls")
	n := 0
	for _, line := range strings.Split(ls, "\n") {
		if strings.HasPrefix(line, "e2e-"+framework.NodeName+"-") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("ls lists %d e2e snapshots, want 3:\n%s", n, ls)
	}
	// Each file has its ETCDSnapshotFile (k3s's), as `kubectl get` shows.
	waitSnapshotFiles(ctx, t, s, func() []string { return snapshotNames(t, snapDir) })
	snapshotCmd(t, s, "prune", "--name", "e2e", "--snapshot-retention", "1")
	left := snapshotNames(t, snapDir)
	if len(left) != 1 || left[0] == files[0] {
		t.Errorf("after prune: %v, want the newest e2e snapshot alone", left)
	}
	snapshotCmd(t, s, "delete", left[0])
	if left := snapshotNames(t, snapDir); len(left) != 0 {
		t.Errorf("after delete: %v", left)
	}
	waitSnapshotFiles(ctx, t, s, func() []string { return nil })
}

// waitSnapshotFiles waits until the ETCDSnapshotFile objects of the node
// name exactly the snapshot files want returns (read on each try).
func waitSnapshotFiles(ctx context.Context, t *testing.T, s *framework.Server, files func() []string) {
	t.Helper()
	var got, want []string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		var out string
		out, err = s.Kubectl(ctx, "get", "etcdsnapshotfiles", "-l", "etcd.k3s.cattle.io/snapshot-storage-node="+framework.NodeName, "-o", "jsonpath={.items[*].spec.snapshotName}")
		got, want = strings.Fields(out), files()
		slices.Sort(got)
		slices.Sort(want)
		if err == nil && slices.Equal(got, want) {
			return
		}
	}
	t.Errorf("ETCDSnapshotFiles of %s name %v (%v), want %v", framework.NodeName, got, err, want)
}

// TestEtcdSnapshotSchedule: scheduled snapshots (every 2 s here, through
// the schedule's @every form) appear, compressed, the retention keeps
// the newest two, and the ETCDSnapshotFile objects follow the files.
func TestEtcdSnapshotSchedule(t *testing.T) {
	s := framework.NewServer(t)
	s.Args = append(s.Args, "--etcd-snapshot-schedule-cron", "@every 2s", "--etcd-snapshot-retention", "2", "--etcd-snapshot-compress", "--node-name", framework.NodeName)
	s.Start(t)
	dir := filepath.Join(s.DataDir, "server", "db", "snapshots")
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(seen) < 4 {
		names := snapshotNames(t, dir)
		if len(names) > 2 {
			t.Fatalf("%d snapshots kept with retention 2: %v", len(names), names)
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "etcd-snapshot-") || !strings.HasSuffix(n, ".zip") {
				t.Fatalf("scheduled snapshot %s, want etcd-snapshot-<node>-<unix time>.zip", n)
			}
			seen[n] = true
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(seen) < 4 {
		t.Fatalf("saw %d scheduled snapshots in 60s, want 4: %v", len(seen), seen)
	}
	if names := snapshotNames(t, dir); len(names) != 2 {
		t.Errorf("kept %v, want 2", names)
	}
	// The kept ones have their ETCDSnapshotFiles, the pruned ones none.
	waitSnapshotFiles(context.Background(), t, s, func() []string { return snapshotNames(t, dir) })
}
