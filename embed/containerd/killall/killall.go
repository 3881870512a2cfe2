// Package killall stops everything k1s started on this machine, as
// `k1s killall` does: the k1s process that runs containerd, every pod
// sandbox and container (through containerd, so CNI tears their networks
// down properly), containerd, any shim and container left over (by pid,
// from containerd's state, then by process: a runc shim serving k1s's
// containerd socket), the mounts under k1s's run and agent
// directories, the pod network namespaces, the CNI bridge and its veths,
// and the iptables chains named CNI-*, KUBE-* and K1S-* with the rules that
// jump to them. The data directory is left intact. Every step is safe
// when there is nothing to do.
//
// Processes are only ever signalled by pid, read from a pid file or from
// containerd's state, and checked before they are signalled.
package killall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// Config says where k1s keeps what killall must find.
type Config struct {
	// DataDir is k1s's --data-dir. Default /var/lib/k1s. Mounts under
	// <DataDir>/agent are unmounted; nothing is deleted from it.
	DataDir string
	// RunDir is k1s's runtime directory; every mount under it is
	// unmounted. Default /run/k1s.
	RunDir string
	// State is containerd's state directory. Default /run/k1s/containerd.
	State string
	// Socket is containerd's socket. Default <State>/containerd.sock.
	Socket string
	// PidFile names containerd's pid. Default <State>/containerd.pid.
	PidFile string
	// NetNSGlobs match the pod network namespaces to unmount and delete.
	// Default <State>/io.containerd.grpc.v1.cri/netns/cni-* (k1s's
	// containerd mounts them under its state directory, not in the
	// machine-wide /var/run/netns).
	NetNSGlobs []string
	// Bridge is the CNI bridge to delete with its veths. Default "cni0";
	// "-" deletes none.
	Bridge string
	// ChainPrefixes select the iptables chains to delete. Default CNI-,
	// KUBE-, K1S-; an empty non-nil slice deletes none.
	ChainPrefixes []string
	// PodLogsDir is the pod log directory; the tmpfs --low-write mounts
	// there (marked by LowWriteMarker) is unmounted. Default
	// /var/log/pods.
	PodLogsDir string
	// Timeout bounds each graceful stop (k1s, containerd) before SIGKILL.
	// Default 30 seconds.
	Timeout time.Duration
}

// SetDefaults fills empty fields with their documented defaults.
func (c *Config) SetDefaults() {
	if c.DataDir == "" {
		c.DataDir = "/var/lib/k1s"
	}
	if c.RunDir == "" {
		c.RunDir = "/run/k1s"
	}
	if c.State == "" {
		c.State = filepath.Join(c.RunDir, "containerd")
	}
	if c.Socket == "" {
		c.Socket = filepath.Join(c.State, "containerd.sock")
	}
	if c.PidFile == "" {
		c.PidFile = filepath.Join(c.State, "containerd.pid")
	}
	if c.NetNSGlobs == nil {
		c.NetNSGlobs = []string{filepath.Join(c.State, "io.containerd.grpc.v1.cri", "netns", "cni-*")}
	}
	if c.Bridge == "" {
		c.Bridge = "cni0"
	}
	if c.ChainPrefixes == nil {
		c.ChainPrefixes = []string{"CNI-", "KUBE-", "K1S-"}
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.PodLogsDir == "" {
		c.PodLogsDir = "/var/log/pods"
	}
}

// LowWriteMarker is the file --low-write puts at the root of the tmpfs it
// mounts on the pod log directory, so that killall unmounts that tmpfs
// and no other file system mounted there.
const LowWriteMarker = ".k1s-low-write"

// Validate checks the paths are absolute and not "/".
func (c Config) Validate() error {
	var errs []error
	for _, p := range []struct{ flag, path string }{
		{"--data-dir", c.DataDir}, {"run dir", c.RunDir}, {"containerd state", c.State},
		{"containerd socket", c.Socket}, {"containerd pid file", c.PidFile},
	} {
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) == "/" {
			errs = append(errs, fmt.Errorf("%s: %q must be an absolute path other than /", p.flag, p.path))
		}
	}
	return errors.Join(errs...)
}

// Runtime is the CRI subset killall stops pods through.
type Runtime interface {
	// PodSandboxes returns the ids of every pod sandbox.
	PodSandboxes(ctx context.Context) ([]string, error)
	// StopPodSandbox stops a sandbox's containers and tears its network down.
	StopPodSandbox(ctx context.Context, id string) error
	// Close releases the connection.
	Close() error
}

// Process is a process found on the machine.
type Process struct {
	Pid, PPid int
	// Exe is the resolved /proc/<pid>/exe.
	Exe string
	// Args is the command line.
	Args []string
}

// System is what killall does to the machine; tests use a fake.
type System interface {
	// Connect returns a CRI client when a runtime answers on socket, or
	// nil and no error when none does.
	Connect(ctx context.Context, socket string) (Runtime, error)
	// StartContainerd starts a temporary containerd on the existing state
	// so pods can be stopped through it; stop ends it. It returns a nil
	// stop and no error when there is no config to start it with.
	StartContainerd(ctx context.Context) (stop func() error, err error)
	// ReadPid reads a pid file; ok is false when there is none.
	ReadPid(path string) (pid int, ok bool, err error)
	// Process returns a live process; ok is false when pid does not exist.
	Process(pid int) (p Process, ok bool, err error)
	// Processes returns every live process.
	Processes() ([]Process, error)
	// Signal sends sig to pid.
	Signal(pid int, sig syscall.Signal) error
	// WaitGone waits until pid has exited or timeout passes; it reports
	// whether the process is gone.
	WaitGone(ctx context.Context, pid int, timeout time.Duration) bool
	// Shims returns the shims containerd's state knows of: for each task
	// bundle, the pid listening on its shim socket and the container's
	// init pid (0 when unknown).
	Shims(state string) ([]Shim, error)
	// MountPoints returns every mount point of this mount namespace.
	MountPoints() ([]string, error)
	// Unmount detaches a mount point.
	Unmount(path string) error
	// Glob matches a pattern.
	Glob(pattern string) ([]string, error)
	// Remove removes a file or empty directory.
	Remove(path string) error
	// BridgePorts returns the interfaces enslaved to bridge; ok is false
	// when the bridge does not exist.
	BridgePorts(bridge string) (ports []string, ok bool, err error)
	// DeleteLink deletes a network interface.
	DeleteLink(name string) error
	// IPTablesSave returns `<bin>-save -t table` for bin iptables or
	// ip6tables; ok is false when that tool is not installed.
	IPTablesSave(bin, table string) (rules string, ok bool, err error)
	// IPTablesRestore replaces a table's rules (`<bin>-restore`).
	IPTablesRestore(bin, rules string) error
}

// Shim is a task's shim from containerd's state.
type Shim struct {
	// Bundle is the task's bundle directory.
	Bundle string
	// Pid is the process listening on the shim's socket (0: none).
	Pid int
	// InitPid is the container's init process (0: unknown).
	InitPid int
}

// iptablesTables are the tables chains are removed from.
var iptablesTables = []string{"filter", "nat", "mangle", "raw"}

// Run stops everything, carrying on past failures; it returns them all
// joined.
func Run(ctx context.Context, cfg Config, sys System) error {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	fail(stopK1s(ctx, cfg, sys))
	fail(stopPods(ctx, cfg, sys))
	fail(stopContainerd(ctx, cfg, sys))
	fail(killShims(cfg, sys))
	fail(killStrayShims(cfg, sys))
	fail(unmountAll(cfg, sys))
	fail(removeNetNS(cfg, sys))
	fail(removeBridge(cfg, sys))
	fail(removeChains(cfg, sys))
	if len(errs) == 0 {
		logger.V(2).Info("Stopped everything k1s started", "dataDir", cfg.DataDir)
	}
	return errors.Join(errs...)
}

// containerdProcess returns containerd's process from the pid file, if it
// still runs and is k1s's containerd (`... containerd --config ...`).
func containerdProcess(cfg Config, sys System) (Process, bool, error) {
	pid, ok, err := sys.ReadPid(cfg.PidFile)
	if err != nil || !ok {
		return Process{}, false, err
	}
	p, ok, err := sys.Process(pid)
	if err != nil || !ok {
		return Process{}, false, err
	}
	if !isContainerd(p) {
		// The pid was reused by another program since containerd ran.
		return Process{}, false, nil
	}
	return p, true, nil
}

func isContainerd(p Process) bool {
	return len(p.Args) >= 3 && p.Args[1] == "containerd" && contains(p.Args[2:], "--config")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// stopK1s stops the k1s process that runs containerd (its parent, the same
// executable), so its agent does not restart the pods being stopped. k1s
// stops containerd itself on the way out; the containers live on.
func stopK1s(ctx context.Context, cfg Config, sys System) error {
	ctrd, ok, err := containerdProcess(cfg, sys)
	if err != nil || !ok {
		return err
	}
	parent, ok, err := sys.Process(ctrd.PPid)
	if err != nil || !ok || parent.Pid <= 1 || parent.Pid == os.Getpid() || parent.Exe == "" || parent.Exe != ctrd.Exe {
		return err
	}
	return terminate(ctx, sys, parent.Pid, "k1s", cfg.Timeout)
}

// terminate sends SIGTERM, waits, then SIGKILLs.
func terminate(ctx context.Context, sys System, pid int, what string, timeout time.Duration) error {
	logger := klog.FromContext(ctx)
	logger.Info("Stopping "+what, "pid", pid)
	if err := sys.Signal(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stop %s (pid %d): %w", what, pid, err)
	}
	if sys.WaitGone(ctx, pid, timeout) {
		return nil
	}
	logger.Info("Killing "+what+": it did not stop in time", "pid", pid, "timeout", timeout)
	if err := sys.Signal(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", what, pid, err)
	}
	if !sys.WaitGone(ctx, pid, 5*time.Second) {
		return fmt.Errorf("%s (pid %d) is still running after SIGKILL", what, pid)
	}
	return nil
}

// stopPods stops every pod sandbox through containerd: the running one,
// else a temporary one started on the same state.
func stopPods(ctx context.Context, cfg Config, sys System) error {
	logger := klog.FromContext(ctx)
	rt, err := sys.Connect(ctx, cfg.Socket)
	if err != nil {
		return err
	}
	if rt == nil {
		shims, err := sys.Shims(cfg.State)
		if err != nil {
			return err
		}
		if !anyRunning(shims) {
			return nil
		}
		stop, err := sys.StartContainerd(ctx)
		if err != nil {
			logger.Error(err, "Starting containerd to stop the pods failed; killing them by pid")
			return nil
		}
		if stop == nil {
			return nil
		}
		defer func() {
			if err := stop(); err != nil {
				logger.Error(err, "Stopping the temporary containerd failed")
			}
		}()
		if rt, err = sys.Connect(ctx, cfg.Socket); err != nil || rt == nil {
			logger.Error(err, "The temporary containerd does not answer; killing the pods by pid")
			return nil
		}
	}
	defer rt.Close()
	ids, err := rt.PodSandboxes(ctx)
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var errs []error
	for _, id := range ids {
		logger.V(2).Info("Stopping pod sandbox", "id", id)
		if err := rt.StopPodSandbox(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("stop pod sandbox %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func anyRunning(shims []Shim) bool {
	for _, s := range shims {
		if s.Pid > 0 {
			return true
		}
	}
	return false
}

// stopContainerd stops the containerd named by the pid file.
func stopContainerd(ctx context.Context, cfg Config, sys System) error {
	p, ok, err := containerdProcess(cfg, sys)
	if err != nil {
		return err
	}
	if !ok {
		// A pid file whose containerd has exited (its pid maybe reused
		// since) is stale: remove it, touching no process.
		if _, found, err := sys.ReadPid(cfg.PidFile); err != nil || !found {
			return err
		}
	} else if err := terminate(ctx, sys, p.Pid, "containerd", cfg.Timeout); err != nil {
		return err
	}
	if err := sys.Remove(cfg.PidFile); err != nil {
		return fmt.Errorf("remove %s: %w", cfg.PidFile, err)
	}
	return nil
}

// killShims kills what containerd left running: each container's init
// process (only when its parent is the shim, so a reused pid is never
// hit), then the shim.
func killShims(cfg Config, sys System) error {
	shims, err := sys.Shims(cfg.State)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range shims {
		if s.Pid <= 0 {
			continue
		}
		if s.InitPid > 0 {
			if p, ok, _ := sys.Process(s.InitPid); ok && p.PPid == s.Pid {
				if err := sys.Signal(s.InitPid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("kill container init (pid %d) of %s: %w", s.InitPid, s.Bundle, err))
				}
			}
		}
		if err := sys.Signal(s.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill shim (pid %d) of %s: %w", s.Pid, s.Bundle, err))
		}
	}
	return errors.Join(errs...)
}

// shimExecutable is the runc shim's file name.
const shimExecutable = "containerd-shim-runc-v2"

// killStrayShims kills the runc shims of this containerd that its state
// no longer names, with their containers: a shim whose task bundle was
// already removed when containerd stopped (it never got its shutdown
// call), or one whose state was lost. A stray shim is found as k3s's
// killall finds shims: by process, here a process running the shim
// executable with `-address <Socket>` among its arguments. The
// containers' init processes are its children (the shim is their
// subreaper), taken from the same listing; each is killed first.
func killStrayShims(cfg Config, sys System) error {
	procs, err := sys.Processes()
	if err != nil {
		return fmt.Errorf("list processes: %w", err)
	}
	children := map[int][]int{}
	for _, p := range procs {
		children[p.PPid] = append(children[p.PPid], p.Pid)
	}
	var errs []error
	kill := func(pid int, what string) {
		if err := sys.Signal(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %s (pid %d): %w", what, pid, err))
		}
	}
	for _, p := range procs {
		if p.Pid == os.Getpid() || !isShimOf(p, cfg.Socket) {
			continue
		}
		for _, c := range children[p.Pid] {
			kill(c, "container init of a stray shim")
		}
		kill(p.Pid, "stray shim")
	}
	return errors.Join(errs...)
}

// isShimOf reports whether p runs the runc shim for the containerd at
// socket.
func isShimOf(p Process, socket string) bool {
	exe := strings.TrimSuffix(p.Exe, " (deleted)")
	if filepath.Base(exe) != shimExecutable {
		return false
	}
	for i := 0; i+1 < len(p.Args); i++ {
		if p.Args[i] == "-address" && p.Args[i+1] == socket {
			return true
		}
	}
	return false
}

// unmountTargets picks the mount points strictly under one of dirs, and
// those that are one of own, deepest first, each once.
func unmountTargets(mounts, dirs, own []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range mounts {
		if seen[m] {
			continue
		}
		for _, d := range own {
			if m == filepath.Clean(d) {
				seen[m] = true
				out = append(out, m)
			}
		}
		if seen[m] {
			continue
		}
		for _, d := range dirs {
			if strings.HasPrefix(m, strings.TrimSuffix(d, "/")+"/") {
				seen[m] = true
				out = append(out, m)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/")
		if di != dj {
			return di > dj
		}
		return out[i] > out[j]
	})
	return out
}

// unmountAll unmounts everything under the run directory and the agent
// directory (containers' root filesystems, sandbox /dev/shm, network
// namespaces, pod volumes), the tmpfs k1s mounts on containerd's
// state directory where that is not on one already, and the pod log
// tmpfs of --low-write (its logs go with it, as on a reboot). A mount point listed
// twice (stacked mounts) is unmounted until it is gone.
func unmountAll(cfg Config, sys System) error {
	dirs := []string{cfg.RunDir, cfg.State, filepath.Join(cfg.DataDir, "agent")}
	for _, g := range cfg.NetNSGlobs {
		dirs = append(dirs, filepath.Dir(g))
	}
	var errs []error
	for round := 0; round < 4; round++ {
		mounts, err := sys.MountPoints()
		if err != nil {
			return fmt.Errorf("list mounts: %w", err)
		}
		own := []string{cfg.State}
		if marked, _ := sys.Glob(filepath.Join(cfg.PodLogsDir, LowWriteMarker)); len(marked) > 0 {
			own = append(own, cfg.PodLogsDir)
		}
		targets := unmountTargets(mounts, dirs, own)
		if len(targets) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, m := range targets {
			if err := sys.Unmount(m); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeNetNS deletes the pod network namespace files (once unmounted,
// the namespaces go with their last process).
func removeNetNS(cfg Config, sys System) error {
	var errs []error
	for _, g := range cfg.NetNSGlobs {
		paths, err := sys.Glob(g)
		if err != nil {
			errs = append(errs, fmt.Errorf("find network namespaces %s: %w", g, err))
			continue
		}
		for _, p := range paths {
			if err := sys.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("remove network namespace %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeBridge deletes the veths on the CNI bridge, then the bridge.
func removeBridge(cfg Config, sys System) error {
	if cfg.Bridge == "-" {
		return nil
	}
	ports, ok, err := sys.BridgePorts(cfg.Bridge)
	if err != nil || !ok {
		return err
	}
	var errs []error
	for _, p := range ports {
		if err := sys.DeleteLink(p); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", p, err))
		}
	}
	if err := sys.DeleteLink(cfg.Bridge); err != nil {
		errs = append(errs, fmt.Errorf("delete bridge %s: %w", cfg.Bridge, err))
	}
	return errors.Join(errs...)
}

// removeChains drops the matching chains and every rule in or jumping to
// them, table by table, for IPv4 and IPv6.
func removeChains(cfg Config, sys System) error {
	if len(cfg.ChainPrefixes) == 0 {
		return nil
	}
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			rules, ok, err := sys.IPTablesSave(bin, table)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s-save -t %s: %w", bin, table, err))
				continue
			}
			if !ok {
				break
			}
			filtered, changed := FilterChains(rules, cfg.ChainPrefixes)
			if !changed {
				continue
			}
			if err := sys.IPTablesRestore(bin, filtered); err != nil {
				errs = append(errs, fmt.Errorf("%s-restore (table %s): %w", bin, table, err))
			}
		}
	}
	return errors.Join(errs...)
}

// FilterChains removes from iptables-save output the chains whose names
// start with one of prefixes, the rules in them and the rules in other
// chains that jump or go to them. It reports whether anything was removed.
func FilterChains(rules string, prefixes []string) (string, bool) {
	matches := func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	var out []string
	changed := false
	for _, line := range strings.Split(rules, "\n") {
		drop := false
		switch {
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			drop = matches(name)
		case strings.HasPrefix(line, "-A "), strings.HasPrefix(line, "-I "):
			fields := strings.Fields(line)
			if len(fields) > 1 && matches(fields[1]) {
				drop = true
			}
			for i := 2; i+1 < len(fields) && !drop; i++ {
				if (fields[i] == "-j" || fields[i] == "-g" || fields[i] == "--jump" || fields[i] == "--goto") && matches(fields[i+1]) {
					drop = true
				}
			}
		}
		if drop {
			changed = true
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), changed
}
