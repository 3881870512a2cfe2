package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/k1s/k1s/tests/e2e/framework"
)

const podLogsDir = "/var/log/pods"

// TestLowWrite: `k1s server --low-write --low-write-log-size 16Mi` mounts
// a 16 MiB tmpfs on the pod log directory, containers log into it and
// `kubectl logs` reads them, also after a server restart (the tmpfs
// outlives k1s like the containers). The bytes-per-hour figure is the
// benchmark's (tests/bench/lowwrite), not this test's.
func TestLowWrite(t *testing.T) {
	if isTmpfs(podLogsDir) {
		t.Skipf("%s is a tmpfs already (not mounted by this test): nothing to observe", podLogsDir)
	}
	// Registered before the server's cleanup, so it runs after k1s
	// killall, which unmounts the marked tmpfs.
	t.Cleanup(func() {
		if isTmpfs(podLogsDir) {
			t.Errorf("%s is still a tmpfs after k1s killall", podLogsDir)
			if err := unix.Unmount(podLogsDir, 0); err != nil {
				t.Errorf("unmount the pod log tmpfs: %v", err)
			}
		}
	})
	s := framework.NewNodeServer(t)
	s.Args = append(s.Args, "--low-write", "--low-write-log-size", "16Mi")
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()

	opts, ok := mountOptions(t, podLogsDir)
	if !ok || !isTmpfs(podLogsDir) {
		t.Fatalf("%s is not a tmpfs mount (mount options %q)", podLogsDir, opts)
	}
	if !strings.Contains(opts, "size=16384k") {
		t.Errorf("pod log tmpfs options %q, want size=16384k (--low-write-log-size 16Mi)", opts)
	}

	create(t, c, newPod("chatty", container("c", busybox, "sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done")))
	p := framework.WaitPod(t, c, "default", "chatty", 60*time.Second, "running", framework.Running)
	waitLogs := func(what string) {
		t.Helper()
		var out string
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ = s.Kubectl(ctx, "logs", "chatty")
			return strings.Contains(out, "line 0") && strings.Contains(out, "line 2"), nil
		}); err != nil {
			t.Fatalf("kubectl logs %s: %q", what, out)
		}
	}
	waitLogs("on the tmpfs")
	logs, _ := filepath.Glob(filepath.Join(podLogsDir, fmt.Sprintf("default_chatty_%s", p.UID), "c", "*.log"))
	if len(logs) == 0 {
		t.Fatalf("no log file of the container under %s", podLogsDir)
	}
	for _, l := range logs {
		if !isTmpfs(l) {
			t.Errorf("log file %s is not on a tmpfs", l)
		}
	}

	// A restart finds the tmpfs mounted and keeps it; the container and
	// its log carry on.
	s.Stop(t)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	if !isTmpfs(podLogsDir) {
		t.Fatalf("%s is no longer a tmpfs after the restart", podLogsDir)
	}
	if n := countMounts(t, podLogsDir); n != 1 {
		t.Errorf("%d mounts on %s after the restart, want 1", n, podLogsDir)
	}
	waitLogs("after a restart")
}

func isTmpfs(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// mountOptions returns the super options of the last mount on dir.
func mountOptions(t *testing.T, dir string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	opts, found := "", false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[4] != dir {
			continue
		}
		for i, x := range f {
			if x == "-" && i+3 < len(f) {
				opts, found = f[i+1]+" "+f[i+3], true
			}
		}
	}
	return opts, found
}

func countMounts(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			n++
		}
	}
	return n
}
