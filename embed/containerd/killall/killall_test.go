package killall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSystem is a machine in memory; it records what was done to it.
type fakeSystem struct {
	pidFiles    map[string]int
	procs       map[int]Process
	stubborn    map[int]bool // ignore SIGTERM
	shims       []Shim
	mounts      []string
	globs       map[string][]string
	bridges     map[string][]string
	tables      map[string]string // "iptables/nat" -> save output; missing bin -> not installed
	runtimeUp   bool              // a CRI runtime answers on the socket
	sandboxes   []string
	canStart    bool // a temporary containerd can be started
	startErr    error
	stopFailOn  string
	actions     []string
	connectSeen int
}

func newFake() *fakeSystem {
	return &fakeSystem{
		pidFiles: map[string]int{}, procs: map[int]Process{}, stubborn: map[int]bool{},
		globs: map[string][]string{}, bridges: map[string][]string{}, tables: map[string]string{},
	}
}

func (f *fakeSystem) do(format string, args ...any) {
	f.actions = append(f.actions, fmt.Sprintf(format, args...))
}

type fakeRuntime struct{ f *fakeSystem }

func (r fakeRuntime) PodSandboxes(context.Context) ([]string, error) { return r.f.sandboxes, nil }
func (r fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	r.f.do("stop sandbox %s", id)
	if id == r.f.stopFailOn {
		return errors.New("boom")
	}
	// Stopping a pod ends its shim.
	for i, s := range r.f.shims {
		if strings.HasSuffix(s.Bundle, "/"+id) {
			delete(r.f.procs, s.Pid)
			delete(r.f.procs, s.InitPid)
			r.f.shims[i].Pid = 0
		}
	}
	return nil
}
func (r fakeRuntime) Close() error { return nil }

func (f *fakeSystem) Connect(context.Context, string) (Runtime, error) {
	f.connectSeen++
	if !f.runtimeUp {
		return nil, nil
	}
	return fakeRuntime{f}, nil
}

func (f *fakeSystem) StartContainerd(context.Context) (func() error, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	if !f.canStart {
		return nil, nil
	}
	f.do("start temporary containerd")
	f.runtimeUp = true
	return func() error {
		f.do("stop temporary containerd")
		f.runtimeUp = false
		return nil
	}, nil
}

func (f *fakeSystem) ReadPid(path string) (int, bool, error) {
	pid, ok := f.pidFiles[path]
	return pid, ok, nil
}

func (f *fakeSystem) Process(pid int) (Process, bool, error) {
	p, ok := f.procs[pid]
	return p, ok, nil
}

func (f *fakeSystem) Processes() ([]Process, error) {
	out := make([]Process, 0, len(f.procs))
	for _, p := range f.procs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out, nil
}

func (f *fakeSystem) Signal(pid int, sig syscall.Signal) error {
	p, ok := f.procs[pid]
	if !ok {
		return syscall.ESRCH
	}
	f.do("signal %d %s (%s)", pid, sig, strings.Join(p.Args, " "))
	if sig == syscall.SIGKILL || !f.stubborn[pid] {
		delete(f.procs, pid)
		// A k1s stopping takes its containerd child with it.
		for cp, c := range f.procs {
			if c.PPid == pid && isContainerd(c) {
				delete(f.procs, cp)
			}
		}
	}
	return nil
}

func (f *fakeSystem) WaitGone(_ context.Context, pid int, _ time.Duration) bool {
	_, ok := f.procs[pid]
	return !ok
}

func (f *fakeSystem) Shims(string) ([]Shim, error) {
	var out []Shim
	for _, s := range f.shims {
		if _, ok := f.procs[s.Pid]; !ok {
			s.Pid = 0
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeSystem) MountPoints() ([]string, error) { return append([]string(nil), f.mounts...), nil }

func (f *fakeSystem) Unmount(path string) error {
	f.do("unmount %s", path)
	for i, m := range f.mounts {
		if m == path {
			f.mounts = append(f.mounts[:i], f.mounts[i+1:]...)
			break
		}
	}
	return nil
}

func (f *fakeSystem) Glob(pattern string) ([]string, error) { return f.globs[pattern], nil }

func (f *fakeSystem) Remove(path string) error {
	f.do("remove %s", path)
	return nil
}

func (f *fakeSystem) BridgePorts(bridge string) ([]string, bool, error) {
	ports, ok := f.bridges[bridge]
	return ports, ok, nil
}

func (f *fakeSystem) DeleteLink(name string) error {
	f.do("delete link %s", name)
	return nil
}

func (f *fakeSystem) IPTablesSave(bin, table string) (string, bool, error) {
	if _, installed := f.tables[bin+"/filter"]; !installed {
		return "", false, nil
	}
	return f.tables[bin+"/"+table], true, nil
}

func (f *fakeSystem) IPTablesRestore(bin, rules string) error {
	f.do("%s-restore %s", bin, strings.ReplaceAll(strings.TrimSpace(rules), "\n", " | "))
	return nil
}

var testCfg = Config{Timeout: time.Second}

func TestRunWithNothingRunningDoesNothing(t *testing.T) {
	f := newFake()
	f.tables["iptables/filter"] = "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"
	if err := Run(context.Background(), testCfg, f); err != nil {
		t.Fatal(err)
	}
	if len(f.actions) != 0 {
		t.Errorf("actions on an idle machine: %q", f.actions)
	}
}

func TestRunStopsK1sThenPodsThroughTemporaryContainerd(t *testing.T) {
	f := newFake()
	f.canStart = true
	f.pidFiles["/run/k1s/containerd/containerd.pid"] = 200
	f.procs[100] = Process{Pid: 100, PPid: 1, Exe: "/usr/local/bin/k1s", Args: []string{"k1s", "server"}}
	f.procs[200] = Process{Pid: 200, PPid: 100, Exe: "/usr/local/bin/k1s", Args: []string{"/usr/local/bin/k1s", "containerd", "--config", "/x"}}
	f.procs[300] = Process{Pid: 300, PPid: 1, Args: []string{"shim"}}
	f.procs[301] = Process{Pid: 301, PPid: 300, Args: []string{"pause"}}
	f.shims = []Shim{{Bundle: "/run/k1s/containerd/io.containerd.runtime.v2.task/k8s.io/sb1", Pid: 300, InitPid: 301}}
	f.sandboxes = []string{"sb1"}
	f.mounts = []string{
		"/", "/run", "/run/k1s/containerd/io.containerd.grpc.v1.cri/netns/cni-1",
		"/var/lib/k1s/agent/pods/u1/volumes/kubernetes.io~secret/token",
		"/var/lib/k1s", // the data dir itself (a user's mount) stays
		"/var/lib/k1s/agentx/not-ours",
	}
	f.globs["/run/k1s/containerd/io.containerd.grpc.v1.cri/netns/cni-*"] = []string{"/run/k1s/containerd/io.containerd.grpc.v1.cri/netns/cni-1"}
	f.bridges["cni0"] = []string{"veth1", "veth2"}
	f.tables["iptables/filter"] = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:CNI-FORWARD - [0:0]\n-A FORWARD -m comment --comment \"CNI firewall\" -j CNI-FORWARD\n-A FORWARD -j ACCEPT\n-A CNI-FORWARD -d 10.42.0.2/32 -j ACCEPT\nCOMMIT\n"
	f.tables["iptables/nat"] = "*nat\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n"

	if err := Run(context.Background(), testCfg, f); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"signal 100 terminated (k1s server)",
		"start temporary containerd",
		"stop sandbox sb1",
		"stop temporary containerd",
		// The containerd k1s ran has exited: its pid file is stale.
		"remove /run/k1s/containerd/containerd.pid",
		"unmount /var/lib/k1s/agent/pods/u1/volumes/kubernetes.io~secret/token",
		"unmount /run/k1s/containerd/io.containerd.grpc.v1.cri/netns/cni-1",
		"remove /run/k1s/containerd/io.containerd.grpc.v1.cri/netns/cni-1",
		"delete link veth1",
		"delete link veth2",
		"delete link cni0",
		"iptables-restore *filter | :INPUT ACCEPT [0:0] | :FORWARD ACCEPT [0:0] | -A FORWARD -j ACCEPT | COMMIT",
	}
	if !reflect.DeepEqual(f.actions, want) {
		t.Errorf("actions:\n got %q\nwant %q", f.actions, want)
	}
}

func TestRunStopsPodsThroughRunningContainerd(t *testing.T) {
	f := newFake()
	f.runtimeUp = true
	f.canStart = true
	f.sandboxes = []string{"a", "b"}
	f.stopFailOn = "a"
	// A standalone containerd (its parent is not k1s) is stopped after
	// the pods, and its stale pid file removed.
	f.pidFiles["/run/k1s/containerd/containerd.pid"] = 200
	f.procs[50] = Process{Pid: 50, PPid: 1, Exe: "/bin/bash", Args: []string{"bash"}}
	f.procs[200] = Process{Pid: 200, PPid: 50, Exe: "/usr/local/bin/k1s", Args: []string{"k1s", "containerd", "--config", "/x"}}
	f.stubborn[200] = true
	err := Run(context.Background(), Config{Timeout: time.Millisecond, Bridge: "-", ChainPrefixes: []string{}}, f)
	if err == nil || !strings.Contains(err.Error(), "stop pod sandbox a: boom") {
		t.Fatalf("err = %v, want the failed sandbox reported", err)
	}
	want := []string{
		"stop sandbox a",
		"stop sandbox b",
		"signal 200 terminated (k1s containerd --config /x)",
		"signal 200 killed (k1s containerd --config /x)",
		"remove /run/k1s/containerd/containerd.pid",
	}
	if !reflect.DeepEqual(f.actions, want) {
		t.Errorf("actions:\n got %q\nwant %q", f.actions, want)
	}
}

func TestRunNeverSignalsAReusedPid(t *testing.T) {
	f := newFake()
	// The pid file names a pid now used by another program.
	f.pidFiles["/run/k1s/containerd/containerd.pid"] = 200
	f.procs[200] = Process{Pid: 200, PPid: 1, Exe: "/usr/bin/vim", Args: []string{"vim", "notes"}}
	// A shim whose recorded init pid now belongs to an unrelated process.
	f.procs[300] = Process{Pid: 300, PPid: 1, Args: []string{"shim"}}
	f.procs[301] = Process{Pid: 301, PPid: 77, Args: []string{"unrelated"}}
	f.shims = []Shim{{Bundle: "/b/x", Pid: 300, InitPid: 301}, {Bundle: "/b/dead", Pid: 0, InitPid: 302}}
	f.procs[302] = Process{Pid: 302, PPid: 1, Args: []string{"also unrelated"}}
	// No containerd can be started: the shims are killed by pid.
	if err := Run(context.Background(), testCfg, f); err != nil {
		t.Fatal(err)
	}
	want := []string{"remove /run/k1s/containerd/containerd.pid", "signal 300 killed (shim)"}
	if !reflect.DeepEqual(f.actions, want) {
		t.Errorf("actions:\n got %q\nwant %q", f.actions, want)
	}
}

func TestRunKillsLeftoversWhenContainerdCannotStart(t *testing.T) {
	f := newFake()
	f.startErr = errors.New("no config")
	f.procs[300] = Process{Pid: 300, PPid: 1, Args: []string{"shim"}}
	f.procs[301] = Process{Pid: 301, PPid: 300, Args: []string{"sleep"}}
	f.shims = []Shim{{Bundle: "/b/c1", Pid: 300, InitPid: 301}, {Bundle: "/b/c2", Pid: 300}}
	if err := Run(context.Background(), Config{Bridge: "-", ChainPrefixes: []string{}}, f); err != nil {
		t.Fatal(err)
	}
	want := []string{"signal 301 killed (sleep)", "signal 300 killed (shim)"}
	if !reflect.DeepEqual(f.actions, want) {
		t.Errorf("actions:\n got %q\nwant %q", f.actions, want)
	}
}

// A shim whose bundle is gone from containerd's state (its task was
// deleted as containerd stopped, so it never got its shutdown call) is
// found by process and killed with its container; another containerd's
// shim, and a program that only looks like a shim, are left alone.
func TestRunKillsStrayShimsByProcess(t *testing.T) {
	f := newFake()
	shim := "/var/lib/k1s/data/abc/bin/containerd-shim-runc-v2"
	args := func(socket string) []string {
		return []string{shim, "-namespace", "k8s.io", "-id", "x", "-address", socket}
	}
	f.procs[400] = Process{Pid: 400, PPid: 1, Exe: shim + " (deleted)", Args: args("/run/k1s/containerd/containerd.sock")}
	f.procs[401] = Process{Pid: 401, PPid: 400, Exe: "/pause", Args: []string{"/pause"}}
	f.procs[500] = Process{Pid: 500, PPid: 1, Exe: "/usr/bin/containerd-shim-runc-v2", Args: args("/run/containerd/containerd.sock")}
	f.procs[501] = Process{Pid: 501, PPid: 500, Exe: "/pause", Args: []string{"/pause"}}
	f.procs[600] = Process{Pid: 600, PPid: 1, Exe: "/usr/bin/python3", Args: args("/run/k1s/containerd/containerd.sock")}
	if err := Run(context.Background(), testCfg, f); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"signal 401 killed (/pause)",
		"signal 400 killed (" + strings.Join(args("/run/k1s/containerd/containerd.sock"), " ") + ")",
	}
	if !reflect.DeepEqual(f.actions, want) {
		t.Errorf("actions:\n got %q\nwant %q", f.actions, want)
	}
}

func TestRunNeverSignalsItself(t *testing.T) {
	f := newFake()
	self := os.Getpid()
	f.pidFiles["/run/k1s/containerd/containerd.pid"] = 200
	f.procs[self] = Process{Pid: self, PPid: 1, Exe: "/k1s", Args: []string{"k1s", "killall"}}
	f.procs[200] = Process{Pid: 200, PPid: self, Exe: "/k1s", Args: []string{"k1s", "containerd", "--config", "/x"}}
	if err := Run(context.Background(), Config{Bridge: "-", ChainPrefixes: []string{}, Timeout: time.Second}, f); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.actions {
		if strings.HasPrefix(a, fmt.Sprintf("signal %d ", self)) {
			t.Errorf("killall signalled itself: %q", f.actions)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, cfg := range []Config{{DataDir: "rel"}, {RunDir: "/"}, {State: "/run/../"}} {
		c := cfg
		c.SetDefaults()
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", cfg)
		}
	}
	if err := Run(context.Background(), Config{DataDir: "rel"}, newFake()); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("Run with a relative data dir = %v", err)
	}
}

func TestUnmountTargets(t *testing.T) {
	mounts := []string{
		"/", "/run/k1s", "/run/k1s/a", "/run/k1s/a/b/c", "/run/k1s/a/b", "/run/k1s-other/x",
		"/var/lib/k1s/agent/pods/p/volumes/v", "/var/lib/k1s/agent/pods/p/volumes/v", "/var/lib/k1s/agent",
		"/srv/state/n", "/srv/state", "/srv",
	}
	got := unmountTargets(mounts, []string{"/run/k1s", "/var/lib/k1s/agent/"}, []string{"/srv/state/", "/run/k1s/a"})
	want := []string{
		"/var/lib/k1s/agent/pods/p/volumes/v",
		"/run/k1s/a/b/c",
		"/run/k1s/a/b",
		"/run/k1s/a",
		"/srv/state",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets:\n got %q\nwant %q", got, want)
	}
}

func TestFilterChains(t *testing.T) {
	prefixes := []string{"CNI-", "KUBE-", "K1S-"}
	cases := []struct {
		name, in, want string
		changed        bool
	}{
		{
			name:    "nothing of ours",
			in:      "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j DOCKER-USER\nCOMMIT\n",
			want:    "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j DOCKER-USER\nCOMMIT\n",
			changed: false,
		},
		{
			name: "chains, their rules and jumps to them",
			in: "*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:CNI-HOSTPORT-DNAT - [0:0]\n:KUBE-SERVICES - [0:0]\n:K1S-X - [0:0]\n:MINE - [0:0]\n" +
				"-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n" +
				"-A PREROUTING -j KUBE-SERVICES\n" +
				"-A POSTROUTING -s 10.42.0.0/16 -g K1S-X\n" +
				"-A POSTROUTING -m comment --comment \"KUBE-SERVICES are not here\" -j MASQUERADE\n" +
				"-A CNI-HOSTPORT-DNAT -p tcp -j DNAT --to-destination 10.42.0.5:80\n" +
				"-A MINE -j RETURN\nCOMMIT\n",
			want: "*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:MINE - [0:0]\n" +
				"-A POSTROUTING -m comment --comment \"KUBE-SERVICES are not here\" -j MASQUERADE\n" +
				"-A MINE -j RETURN\nCOMMIT\n",
			changed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := FilterChains(tc.in, prefixes)
			if got != tc.want || changed != tc.changed {
				t.Errorf("FilterChains:\n got %q (%v)\nwant %q (%v)", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestUnescapeMountPath(t *testing.T) {
	cases := map[string]string{
		`/plain`:           "/plain",
		`/with\040space`:   "/with space",
		`/tab\011and\134`:  "/tab\tand\\",
		`/trailing\04`:     `/trailing\04`,
		`/not\999an-octal`: `/not\999an-octal`,
	}
	for in, want := range cases {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnmountsTheLowWriteLogTmpfs: the pod log directory is unmounted when
// the tmpfs on it carries --low-write's marker, and left alone otherwise
// (a file system someone else mounted there).
func TestUnmountsTheLowWriteLogTmpfs(t *testing.T) {
	for _, marked := range []bool{true, false} {
		f := newFake()
		f.mounts = []string{"/", "/var/log/pods"}
		if marked {
			f.globs["/var/log/pods/"+LowWriteMarker] = []string{"/var/log/pods/" + LowWriteMarker}
		}
		if err := unmountAll(Config{DataDir: "/var/lib/k1s", RunDir: "/run/k1s", State: "/run/k1s/containerd", PodLogsDir: "/var/log/pods"}, f); err != nil {
			t.Fatal(err)
		}
		unmounted := slices.Contains(f.actions, "unmount /var/log/pods")
		if unmounted != marked {
			t.Errorf("marker %v: unmounted /var/log/pods = %v (actions %q)", marked, unmounted, f.actions)
		}
	}
}
