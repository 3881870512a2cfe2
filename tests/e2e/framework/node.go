package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// ImagesDir holds the test image tarballs ($K1S_IMAGES, built by
// `make test-images`).
func ImagesDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("K1S_IMAGES")
	if d == "" {
		t.Skip("K1S_IMAGES is not set: run the e2e tests with `make test-e2e`")
	}
	return d
}

// NewNodeServer prepares a server that also runs the node agent and the
// embedded containerd, with the test images in its air-gap directory. It
// needs root. Cleanup runs `k1s killall` so no container, mount, netns or
// chain outlives the test.
func NewNodeServer(t testing.TB) *Server {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the node agent needs root")
	}
	s := NewServer(t)
	var args []string
	for _, a := range s.Args {
		if a != "--disable-agent" {
			args = append(args, a)
		}
	}
	s.Args = append(args, "--node-name", NodeName)
	imagesDir := filepath.Join(s.DataDir, "agent", "images")
	if err := os.MkdirAll(imagesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := ImagesDir(t)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tar") {
			CopyFile(t, filepath.Join(src, e.Name()), filepath.Join(imagesDir, e.Name()))
		}
	}
	t.Cleanup(func() {
		s.KillAll(t)
		// The node's pod cgroups (--cgroup-root /), once its containers are gone.
		RemoveCgroupTree(t, "/kubepods")
	})
	return s
}

// NodeName is the node name e2e servers register.
const NodeName = "e2e-node"

// CopyFile copies the file from to the path to, failing t on error.
func CopyFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// KillAll stops the server and runs `k1s killall` for its data dir.
func (s *Server) KillAll(t testing.TB) {
	t.Helper()
	s.Kill()
	out, err := exec.Command(s.Bin, "killall", "--data-dir", s.DataDir).CombinedOutput()
	if err != nil {
		t.Errorf("k1s killall: %v\n%s", err, out)
	}
	// No shim the server extracted into its data dir may outlive killall
	// (killed processes take a moment to go).
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = processesRunningFrom(s.DataDir)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("still running after k1s killall: %s", strings.Join(left, "; "))
	}
}

// processesRunningFrom lists the live processes whose executable is under
// dir, as "pid exe".
func processesRunningFrom(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir+"/") {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // exited, not yet reaped
			}
		}
		out = append(out, e.Name()+" "+exe)
	}
	return out
}

// WaitNodeReady waits until the node reports Ready.
func (s *Server) WaitNodeReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	c := s.Client(t)
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready within %s", NodeName, timeout)
	}
}

// WaitPod waits until cond holds for the named pod and returns it.
func WaitPod(t testing.TB, c kubernetes.Interface, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %s not reached within %s; last status: %s", ns, name, what, timeout, describe(last))
	}
	return last
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s ip=%s", p.Status.Phase, p.Status.PodIP)
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d %+v]", cs.Name, cs.Ready, cs.RestartCount, cs.State)
	}
	return b.String()
}

// Running is true when every container of the pod runs.
func Running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}
