package killall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// NewSystem returns the System acting on this machine. startContainerd
// starts a temporary containerd on k1s's existing state (nil: never).
func NewSystem(startContainerd func(ctx context.Context) (stop func() error, err error)) System {
	return &machine{start: startContainerd}
}

type machine struct {
	start func(ctx context.Context) (func() error, error)
}

func (m *machine) Connect(ctx context.Context, socket string) (Runtime, error) {
	if _, err := os.Stat(socket); err != nil {
		return nil, nil
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil
	}
	client := runtimeapi.NewRuntimeServiceClient(conn)
	vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := client.Version(vctx, &runtimeapi.VersionRequest{}); err != nil {
		conn.Close()
		return nil, nil
	}
	return &criRuntime{conn: conn, client: client}, nil
}

type criRuntime struct {
	conn   *grpc.ClientConn
	client runtimeapi.RuntimeServiceClient
}

func (r *criRuntime) PodSandboxes(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := r.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(resp.Items))
	for _, s := range resp.Items {
		ids = append(ids, s.Id)
	}
	return ids, nil
}

func (r *criRuntime) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := r.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

func (r *criRuntime) Close() error { return r.conn.Close() }

func (m *machine) StartContainerd(ctx context.Context) (func() error, error) {
	if m.start == nil {
		return nil, nil
	}
	return m.start(ctx)
}

func (m *machine) ReadPid(path string) (int, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		// A pid file that names no pid names no process.
		return 0, false, nil
	}
	return pid, true, nil
}

func (m *machine) Process(pid int) (Process, bool, error) {
	ppid, state, err := procStat(pid)
	if errors.Is(err, os.ErrNotExist) || state == 'Z' || state == 'X' {
		return Process{}, false, nil
	}
	if err != nil {
		return Process{}, false, err
	}
	p := Process{Pid: pid, PPid: ppid}
	p.Exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		p.Args = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	}
	return p, true, nil
}

func (m *machine) Processes() ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok, err := m.Process(pid)
		if err != nil || !ok {
			// Gone since the listing, or unreadable: not ours to stop.
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// procStat returns a process's parent pid and state letter.
func procStat(pid int) (int, byte, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name is in parentheses and may hold spaces: parse after
	// the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return ppid, fields[0][0], nil
}

func (m *machine) Signal(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

func (m *machine) WaitGone(ctx context.Context, pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if _, ok, _ := m.Process(pid); !ok {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *machine) Shims(state string) ([]Shim, error) {
	bundles, err := filepath.Glob(filepath.Join(state, "io.containerd.runtime.v2.task", "*", "*"))
	if err != nil {
		return nil, err
	}
	var out []Shim
	for _, b := range bundles {
		s := Shim{Bundle: b}
		if addr := shimAddress(b); addr != "" {
			s.Pid = socketPeerPid(addr)
		}
		if data, err := os.ReadFile(filepath.Join(b, "init.pid")); err == nil {
			s.InitPid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		out = append(out, s)
	}
	return out, nil
}

// shimAddress reads a bundle's shim socket path: from bootstrap.json
// (containerd 2), else the older plain "address" file.
func shimAddress(bundle string) string {
	addr := ""
	if data, err := os.ReadFile(filepath.Join(bundle, "bootstrap.json")); err == nil {
		var boot struct {
			Address string `json:"address"`
		}
		if json.Unmarshal(data, &boot) == nil {
			addr = boot.Address
		}
	} else if data, err := os.ReadFile(filepath.Join(bundle, "address")); err == nil {
		addr = strings.TrimSpace(string(data))
	}
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		return path
	}
	return ""
}

// socketPeerPid returns the pid of the process listening on a unix
// socket (from the kernel's peer credentials), or 0 if none answers.
func socketPeerPid(path string) int {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return 0
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

func (m *machine) MountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMountPath(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (m *machine) Unmount(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

func (m *machine) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

func (m *machine) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// BridgePorts and DeleteLink ask the kernel over netlink, in the calling
// process's network namespace: /sys/class/net shows the namespace sysfs
// was mounted in, which a node in a namespace of its own (nsenter --net)
// does not share.
func (m *machine) BridgePorts(bridge string) ([]string, bool, error) {
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("find %s: %w", bridge, err)
	}
	if _, ok := br.(*netlink.Bridge); !ok {
		return nil, false, nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, true, fmt.Errorf("list links: %w", err)
	}
	var ports []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			ports = append(ports, l.Attrs().Name)
		}
	}
	return ports, true, nil
}

func (m *machine) DeleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("find %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

func (m *machine) IPTablesSave(bin, table string) (string, bool, error) {
	path, err := exec.LookPath(bin + "-save")
	if err != nil {
		return "", false, nil
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, "-t", table)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", true, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), true, nil
}

func (m *machine) IPTablesRestore(bin, rules string) error {
	cmd := exec.Command(bin+"-restore", "-w", "5")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}
