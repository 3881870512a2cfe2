// Package benchenv owns the surroundings that tests/bench/proxy and
// tests/bench/dns share: the control plane a benchmark starts (`k1s
// server --disable-agent` on loopback), the network namespaces it makes,
// the processes it runs in them, cleanup on every way out (Cleanup, run
// at the end of main, on an error and on a second Ctrl-C, which then
// exits the process at once: SignalContext), building a comparison binary
// (GoBuild), and the figures' arithmetic (ProcStatusMB, CPUSeconds, Pct,
// Spread, Median, MS). It is for the benchmark commands alone; nothing
// else imports it.
package benchenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/k1s/k1s/internal/freeport"
)

// Cleaner runs what was registered, last first, each once: at the end of
// main, on an error, and on a second Ctrl-C. Safe for concurrent use.
type Cleaner struct {
	mu  sync.Mutex
	fns []func()
}

// Cleanup is the benchmark's one Cleaner: StartChild, NewNetns and
// ForwardAPI register with it, SignalContext runs it on a second signal,
// and main runs it on its way out.
var Cleanup Cleaner

// hurry is closed by a second Ctrl-C: processes are then killed at once.
var hurry = make(chan struct{})

// Add registers fn to be run by Run.
func (c *Cleaner) Add(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, fn)
}

// Run runs what was registered, last first, and forgets it.
func (c *Cleaner) Run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.fns) > 0 {
		fn := c.fns[len(c.fns)-1]
		c.fns = c.fns[:len(c.fns)-1]
		fn()
	}
}

// SignalContext is cancelled by the first SIGINT or SIGTERM; a second one
// cleans up and exits at once.
func SignalContext() context.Context {
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-ch
		fmt.Fprintf(os.Stderr, "bench: %v, cleaning up (again to kill the processes at once)\n", sig)
		cancel()
		<-ch
		close(hurry)
		Cleanup.Run()
		os.Exit(130)
	}()
	return ctx
}

// Sleep waits d or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ControlPlane is `k1s server --disable-agent` on loopback with a data
// directory of its own: no node, so it touches nothing of the host's
// network.
type ControlPlane struct {
	Kubeconfig string // the admin kubeconfig it writes (--write-kubeconfig)
	Port       int    // the apiserver's HTTPS port on 127.0.0.1
	Proc       *Child // the k1s server process
}

// StartControlPlane starts bin (k1s) as `server --disable-agent` with
// its data, kubeconfig and log (k1s-server.log) in dir and free ports,
// and returns once /readyz answers OK: an error if the server exits
// first, is not ready within 2 minutes, or ctx is done.
func StartControlPlane(ctx context.Context, bin, dir string) (*ControlPlane, error) {
	ports := make([]int, 3)
	for i := range ports {
		p, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	cp := &ControlPlane{Kubeconfig: filepath.Join(dir, "kubeconfig"), Port: ports[0]}
	proc, err := StartChild("k1s server", filepath.Join(dir, "k1s-server.log"), bin, "server",
		"--data-dir", filepath.Join(dir, "data"), "--write-kubeconfig", cp.Kubeconfig,
		"--https-listen-port", strconv.Itoa(ports[0]), "--bind-address", "127.0.0.1",
		"--etcd-client-port", strconv.Itoa(ports[1]), "--etcd-peer-port", strconv.Itoa(ports[2]),
		"--disable-agent")
	if err != nil {
		return nil, err
	}
	cp.Proc = proc
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for start := time.Now(); ; {
		if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", cp.Port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cp, nil
			}
		}
		if proc.Exited() {
			return nil, fmt.Errorf("k1s server exited: %s", proc.Tail())
		}
		if time.Since(start) > 2*time.Minute {
			return nil, fmt.Errorf("k1s server not ready within 2m: %s", proc.Tail())
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// Child is a process the benchmark started; Stop ends it (and its
// process group) by pid.
type Child struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
	stopOnce  sync.Once
}

// StartChild starts argv with its output in the file log. The child gets
// a process group of its own (a Ctrl-C on the terminal reaches the
// benchmark only, which stops it in order) and SIGKILL should the
// benchmark die first.
func StartChild(name, log string, argv ...string) (*Child, error) {
	return StartChildOut(name, log, nil, argv...)
}

// StartChildOut is StartChild with the child's standard output going to
// stdout instead of the log, when not nil.
func StartChildOut(name, log string, stdout *os.File, argv ...string) (*Child, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &Child{name: name, log: log, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	Cleanup.Add(c.Stop)
	return c, nil
}

// Pid is the process's id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Exited tells whether the process has ended.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to 15 s (not after a second Ctrl-C), then
// kills the process group.
func (c *Child) Stop() {
	c.stopOnce.Do(func() {
		if c.Exited() {
			return
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-hurry:
		case <-time.After(15 * time.Second):
			fmt.Fprintf(os.Stderr, "bench: %s (pid %d) did not stop in 15 s; killing it\n", c.name, c.Pid())
		}
		_ = syscall.Kill(-c.Pid(), syscall.SIGKILL)
		<-c.done
	})
}

// Tail is the end of the child's log, for error messages.
func (c *Child) Tail() string {
	b, _ := os.ReadFile(c.log)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return fmt.Sprintf("%s (log %s):\n%s", c.name, c.log, b)
}

// Netns is a network namespace the benchmark made (`ip netns add`); Del
// removes it, and with it every interface and nftables table in it.
type Netns struct{ Name string }

// NewNetns adds the namespace name with lo up; Cleanup deletes it.
func NewNetns(name string) (*Netns, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
	}
	n := &Netns{Name: name}
	Cleanup.Add(n.Del)
	if err := n.IP("link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	return n, nil
}

// Del deletes the namespace, if it is still there.
func (n *Netns) Del() {
	if _, err := os.Stat("/run/netns/" + n.Name); err == nil {
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: ip netns del %s: %v: %s\n", n.Name, err, out)
		}
	}
}

// IP runs `ip -n <ns> args...`.
func (n *Netns) IP(args ...string) error {
	if out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip -n %s %s: %v: %s", n.Name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Exec is argv run inside the namespace (`ip netns exec`, which execs:
// the pid is the program's).
func (n *Netns) Exec(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.Name}, argv...)
}

// Do runs fn on an OS thread switched into the namespace: sockets fn
// opens belong to the namespace for good, and processes it starts are in
// it. It runs on a goroutine of its own so that, should switching back
// fail, that thread ends with it (Go does not reuse a thread left locked).
func (n *Netns) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + n.Name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", n.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back from %s: %w", n.Name, err)) // the thread stays locked and ends
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Nft runs the nft command inside the namespace and returns its output.
func (n *Netns) Nft(args ...string) (string, error) {
	var out []byte
	err := n.Do(func() error {
		var err error
		out, err = exec.Command("nft", args...).Output()
		return err
	})
	return string(out), err
}

// ForwardAPI makes the apiserver on the host's 127.0.0.1:port reachable
// at 127.0.0.1:port inside the namespace, so the admin kubeconfig works
// unchanged there: a listener made in the namespace, each connection
// relayed by the benchmark to the host's loopback. Both implementations
// reach the apiserver through it alike. stop closes it all; Cleanup calls
// it too.
func ForwardAPI(n *Netns, port int) (stop func(), err error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var ln net.Listener
	if err := n.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return nil, fmt.Errorf("listen in %s: %w", n.Name, err)
	}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	stop = func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for c := range conns {
			c.Close()
		}
	}
	Cleanup.Add(stop)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				out, err := net.Dial("tcp", addr) // from a thread in the host's namespace
				if err != nil {
					in.Close()
					return
				}
				mu.Lock()
				if closed {
					mu.Unlock()
					in.Close()
					out.Close()
					return
				}
				conns[in], conns[out] = true, true
				mu.Unlock()
				go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
				in.Close()
				out.Close()
				mu.Lock()
				delete(conns, in)
				delete(conns, out)
				mu.Unlock()
			}()
		}
	}()
	return stop, nil
}

// ProcStatusMB reads a VmRSS-like line of /proc/<pid>/status, in MB.
func ProcStatusMB(pid int, key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

const clockTick = 100 // USER_HZ

// CPUSeconds is the CPU time of the process and of the children it has
// waited for (the nft commands a proxy runs).
func CPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return 0
	}
	var total float64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, _ := strconv.ParseFloat(f[i], 64)
		total += v
	}
	return total / clockTick
}

// Pct is the p-quantile of sorted durations.
func Pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p)]
}

// Spread formats the minimum, median and maximum of vs.
func Spread(vs []float64, format string) string {
	if len(vs) == 0 {
		return "-"
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	f := func(v float64) string { return fmt.Sprintf(format, v) }
	if len(s) == 1 {
		return f(s[0])
	}
	return f(s[0]) + " / " + f(s[len(s)/2]) + " / " + f(s[len(s)-1])
}

// Median of vs (the upper one of an even count, as Spread shows).
func Median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// GoBuild builds pkg with `nice -n 19 go build` (CGO off, missing
// requirements and sums resolved through the Go module proxy) in the
// scratch module dir whose go.mod it writes, then moves the binary to out.
func GoBuild(ctx context.Context, dir, gomod, pkg, out string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	fmt.Printf("building %s into %s (nice -n 19; this takes minutes)\n", pkg, out)
	// Stripped, as upstream's release builds and bin/k1s.
	cmd := exec.CommandContext(ctx, "nice", "-n", "19", "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out+".tmp", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	return os.Rename(out+".tmp", out)
}
