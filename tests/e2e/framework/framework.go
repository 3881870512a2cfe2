// Package framework runs the built k1s binary for end-to-end tests: it
// starts `k1s server` as a child process on free ports and a temporary data
// directory, waits for it, and stops it by pid.
package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/k1s/k1s/internal/freeport"
)

// Binary is the k1s binary under test ($K1S_BIN).
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("K1S_BIN")
	if p == "" {
		t.Skip("K1S_BIN is not set: run the e2e tests with `make test-e2e`")
	}
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Server is a `k1s server` child process.
type Server struct {
	Bin        string
	DataDir    string
	Kubeconfig string
	Port       int
	Args       []string
	LogFile    string
	// Netns, when set, runs the server in that network namespace
	// (nsenter --net=/run/netns/<Netns>).
	Netns string
	// Host is the address the server is reached at (its --bind-address).
	// Default 127.0.0.1.
	Host string

	cmd  *exec.Cmd
	done chan error
}

// NewServer prepares a server on a new data directory; Start runs it.
func NewServer(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{
		Bin:        Binary(t),
		DataDir:    filepath.Join(dir, "data"),
		Kubeconfig: filepath.Join(dir, "kubeconfig.yaml"),
		Port:       FreePort(t),
		LogFile:    filepath.Join(dir, "k1s.log"),
	}
	// The etcd ports go through the config file, so every test also
	// exercises --config.
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("etcd-client-port: %d\netcd-peer-port: %d\n", FreePort(t), FreePort(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Args = []string{"server",
		"--config", config,
		"--data-dir", s.DataDir,
		"--write-kubeconfig", s.Kubeconfig,
		"--https-listen-port", fmt.Sprint(s.Port),
		"--bind-address", "127.0.0.1",
		// Control-plane tests; NewNodeServer runs the node agent too.
		"--disable-agent",
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			if log, err := os.ReadFile(s.LogFile); err == nil {
				t.Logf("k1s log (last 4 KiB):\n%s", tail(log, 4096))
			}
		}
	})
	return s
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Start runs the server and waits for /readyz.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.StartProcess(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(90 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// StartProcess starts the child without waiting.
func (s *Server) StartProcess() error {
	log, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(s.Bin, s.Args...)
	if s.Netns != "" {
		// nsenter, not `ip netns exec`: that remounts /sys and hides the
		// cgroup mounts runc needs. nsenter execs k1s: the pid is k1s's.
		s.cmd = exec.Command("nsenter", append([]string{"--net=/run/netns/" + s.Netns, s.Bin}, s.Args...)...)
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start k1s: %w", err)
	}
	s.done = make(chan error, 1)
	go func() {
		s.done <- s.cmd.Wait()
		log.Close()
	}()
	return nil
}

// WaitReady polls /readyz until it answers 200, the process exits, or timeout.
func (s *Server) WaitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("k1s server exited before ready: %v", err)
		default:
		}
		resp, err := client.Get(fmt.Sprintf("https://%s/readyz", net.JoinHostPort(s.host(), fmt.Sprint(s.Port))))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("k1s server not ready within %s", timeout)
}

func (s *Server) host() string {
	if s.Host == "" {
		return "127.0.0.1"
	}
	return s.Host
}

// Stop sends SIGTERM and waits for a clean exit.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("k1s server exited with %v after SIGTERM", err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("k1s server did not stop within 60s of SIGTERM")
		s.Kill()
	}
	s.cmd = nil
}

// Kill sends SIGKILL to the server's process group (by pid) and reaps it.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
	s.cmd = nil
}

// Wait waits for the process to exit on its own and returns its error.
func (s *Server) Wait(timeout time.Duration) (error, bool) {
	select {
	case err := <-s.done:
		s.cmd = nil
		return err, true
	case <-time.After(timeout):
		return nil, false
	}
}

// Client is an admin clientset from the written kubeconfig.
func (s *Server) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// Kubectl runs `k1s kubectl` against the server.
func (s *Server) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.Bin, append([]string{"kubectl"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Log returns the server's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogFile)
	return string(b)
}

// LastLine is the last non-empty line of out.
func LastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
