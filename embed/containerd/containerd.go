package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/registries"
)

// systemPath is appended to the child's PATH so runc (/usr/sbin) and the
// tools containerd runs (mount helpers, iptables for CNI) are found even
// when k1s was started with a short PATH.
const systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Containerd supervises containerd as a child process of k1s: `<k1s>
// containerd --config <file>`. Containers outlive it: their shims are not
// its children, and a restarted containerd reconnects to them.
type Containerd struct {
	cfg     Config
	reg     *registries.Registry // nil: no registry configured
	assets  fs.FS
	stateFS StateFS
	ready   chan struct{}
}

// New validates cfg (after filling defaults) and resolves the executable.
// It starts nothing.
func New(cfg Config) (*Containerd, error) {
	cfg.SetDefaults()
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the k1s executable to run containerd: %w", err)
		}
		cfg.Executable = exe
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var reg *registries.Registry
	if cfg.PrivateRegistry != "" {
		var err error
		if reg, err = registries.Load(cfg.PrivateRegistry); err != nil {
			return nil, err
		}
	}
	return &Containerd{cfg: cfg, reg: reg, assets: bundled, stateFS: newMachineStateFS(), ready: make(chan struct{})}, nil
}

// Config returns the configuration with defaults filled in.
func (c *Containerd) Config() Config { return c.cfg }

// Endpoint is the CRI endpoint, "unix://<socket>".
func (c *Containerd) Endpoint() string { return c.cfg.Endpoint() }

// Ready is closed once containerd answers CRI Version calls.
func (c *Containerd) Ready() <-chan struct{} { return c.ready }

// Run extracts the bundled shim, puts the state directory on a tmpfs when
// it is not on one (see ensureStateTmpfs), writes the config, starts
// containerd and blocks. It returns nil once ctx is cancelled and containerd has stopped
// (SIGTERM, then SIGKILL after StopTimeout), and an error if containerd
// fails to start or exits by itself. Call it once; a restart is a new
// Containerd.
func (c *Containerd) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("containerd")
	cfg := c.cfg

	binDir, err := c.binDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.State, 0o711); err != nil {
		return fmt.Errorf("create %s: %w", cfg.State, err)
	}
	if _, err := ensureStateTmpfs(logger, cfg.State, c.stateFS); err != nil {
		logger.Error(err, "containerd's state stays on disk")
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{
		{cfg.Root, 0o700}, {filepath.Dir(cfg.Socket), 0o711},
		{filepath.Dir(cfg.ConfigFile), 0o755}, {filepath.Dir(cfg.LogFile), 0o755},
		{filepath.Dir(cfg.PidFile), 0o755}, {cfg.CNIConfDir, 0o755}, {cfg.ImagesDir, 0o755},
	} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("create %s: %w", d.path, err)
		}
	}

	if answersCRI(ctx, cfg.Socket) {
		return fmt.Errorf("a containerd already serves %s: stop it first (`k1s killall` stops the one k1s started)", cfg.Socket)
	}
	if err := registries.WriteHostsDir(cfg.HostsDir, c.reg); err != nil {
		return err
	}
	if err := writeFileAtomic(cfg.ConfigFile, []byte(renderConfig(cfg, c.reg)), 0o600); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	child, err := startChild(cfg, binDir)
	if err != nil {
		return err
	}
	pid := child.cmd.Process.Pid
	logger.V(2).Info("Started containerd", "pid", pid, "config", cfg.ConfigFile, "log", cfg.LogFile)
	if err := writeFileAtomic(cfg.PidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		logger.Error(err, "Writing containerd pid file failed; k1s killall will not find containerd", "path", cfg.PidFile)
	}
	defer removePidFile(cfg.PidFile, pid)

	if err := waitReady(ctx, cfg, child); err != nil {
		stopErr := child.stop(cfg.StopTimeout)
		if ctx.Err() != nil {
			return stopErr
		}
		return err
	}
	logger.V(2).Info("containerd is ready", "endpoint", cfg.Endpoint())
	close(c.ready)

	select {
	case <-child.exited:
		return fmt.Errorf("containerd exited unexpectedly (%s); see %s", exitText(child.err), cfg.LogFile)
	case <-ctx.Done():
	}
	if err := child.stop(cfg.StopTimeout); err != nil {
		return err
	}
	logger.V(2).Info("Stopped containerd")
	return nil
}

// child is the running containerd process.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's result, set before exited is closed
}

// stop sends SIGTERM, waits up to timeout, then SIGKILLs. It returns an
// error only if containerd could not be killed.
func (p *child) stop(timeout time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		<-p.exited
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill containerd (pid %d): %w", p.cmd.Process.Pid, err)
	}
	<-p.exited
	return nil
}

// binDir returns the directory holding the shim: BinDir, or the bundle
// extracted from the k1s binary.
func (c *Containerd) binDir() (string, error) {
	dir := c.cfg.BinDir
	if dir == "" {
		b, err := loadBundle(c.assets)
		if err != nil {
			return "", err
		}
		if dir, err = b.extract(c.cfg.DataDir); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ShimName)); err != nil {
		return "", fmt.Errorf("containerd shim: %w", err)
	}
	return dir, nil
}

// startChild starts `<Executable> containerd --config <ConfigFile>` with
// its output appended to the log file.
func startChild(cfg Config, binDir string) (*child, error) {
	logFile, err := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open containerd log: %w", err)
	}
	// The child has its own copy of the descriptor once started.
	defer logFile.Close()

	cmd := exec.Command(cfg.Executable, DaemonCommand, "--config", cfg.ConfigFile)
	// containerd looks for a shim in its working directory first.
	cmd.Dir = "/"
	cmd.Env = childEnv(os.Environ(), binDir)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so a terminal's Ctrl-C reaches k1s only
		// and k1s stops containerd in order.
		Setpgid: true,
		// If k1s dies, containerd goes too; containers live on in their
		// shims and the next k1s re-adopts them.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	p := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls the CRI Version call until it answers: containerd is a
// separate process, so there is nothing to wait on but its socket.
func waitReady(ctx context.Context, cfg Config, p *child) error {
	deadline := time.NewTimer(cfg.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("containerd exited during start (%s); see %s", exitText(p.err), cfg.LogFile)
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("containerd did not answer on %s within %s; see %s", cfg.Socket, cfg.ReadyTimeout, cfg.LogFile)
		case <-tick.C:
			if answersCRI(ctx, cfg.Socket) {
				return nil
			}
		}
	}
}

// answersCRI reports whether a CRI runtime answers Version on socket.
func answersCRI(ctx context.Context, socket string) bool {
	if _, err := os.Stat(socket); err != nil {
		return false
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err == nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// childEnv is k1s's environment with the bin directory first in PATH,
// the system directories last, and memory profiling off (GODEBUG
// memprofilerate=0: its bucket table is memory nobody reads; the shims
// inherit it).
func childEnv(env []string, binDir string) []string {
	out := make([]string, 0, len(env)+2)
	path, godebug := "", "memprofilerate=0"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
			continue
		}
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if v != "" {
				godebug = v + "," + godebug
			}
			continue
		}
		// NOTIFY_SOCKET belongs to k1s's service manager, not containerd.
		if strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			continue
		}
		out = append(out, kv)
	}
	parts := []string{binDir}
	seen := map[string]bool{binDir: true}
	for _, p := range strings.Split(path+":"+systemPath, ":") {
		if p != "" && !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	return append(out, "PATH="+strings.Join(parts, ":"), "GODEBUG="+godebug)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// removePidFile removes the pid file if it still names pid.
func removePidFile(path string, pid int) {
	if got, err := ReadPidFile(path); err == nil && got == pid {
		os.Remove(path)
	}
}

// ReadPidFile returns the pid recorded in a pid file.
func ReadPidFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: not a pid: %q", path, strings.TrimSpace(string(data)))
	}
	return pid, nil
}

// StartExisting starts containerd on the config file an earlier Run
// wrote, without rewriting it or recording a pid file, and returns once
// it answers; stop ends it. `k1s killall` uses it to stop pods properly
// (CNI teardown included) when k1s is not running. With no config file
// there is nothing to start: stop is nil and err is nil.
func (c *Containerd) StartExisting(ctx context.Context) (stop func() error, err error) {
	if _, err := os.Stat(c.cfg.ConfigFile); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	binDir, err := c.binDir()
	if err != nil {
		return nil, err
	}
	if answersCRI(ctx, c.cfg.Socket) {
		return nil, fmt.Errorf("a containerd already serves %s", c.cfg.Socket)
	}
	p, err := startChild(c.cfg, binDir)
	if err != nil {
		return nil, err
	}
	stop = func() error { return p.stop(c.cfg.StopTimeout) }
	if err := waitReady(ctx, c.cfg, p); err != nil {
		return nil, errors.Join(err, stop())
	}
	return stop, nil
}
