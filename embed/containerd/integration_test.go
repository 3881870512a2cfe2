package containerd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/k1s/k1s/embed/containerd/killall"
	"github.com/k1s/k1s/internal/ociimage"
)

const (
	buildTags     = "no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo"
	busyboxImage  = "k1s.local/busybox:1.36"
	testSubnet    = "10.250.0.0/24"
	busyboxBinary = "/bin/busybox"
)

// requireRoot skips tests that start containerd when they cannot.
func requireRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts containerd and runs containers")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	for _, bin := range []string{"runc", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s: %v", bin, err)
		}
	}
	for _, f := range []string{"/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback", busyboxBinary} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("needs %s (Debian packages containernetworking-plugins, busybox-static): %v", f, err)
		}
	}
}

// ensureAssets makes the shim and the pause image available: the embedded
// ones when k1s was built with them, else built here.
func ensureAssets(t *testing.T) {
	t.Helper()
	if _, err := loadBundle(bundled); err == nil {
		if _, err := PauseImageArchive(); err == nil {
			return
		}
	}
	dir := t.TempDir()
	build := func(out, pkg string) {
		cmd := exec.Command("go", "build", "-tags", buildTags, "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	build(filepath.Join(dir, ShimName), "./shim")
	build(filepath.Join(dir, "pause"), "./pause")
	f, err := os.Create(filepath.Join(dir, pauseArchive))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ociimage.Write(f, ociimage.Image{
		Name:    DefaultSandboxImage,
		Config:  ociimage.Config{Entrypoint: []string{"/pause"}, Env: []string{"GOMAXPROCS=1"}},
		Entries: []ociimage.Entry{{Path: "/pause", Source: filepath.Join(dir, "pause"), Mode: 0o755}},
	}); err != nil {
		t.Fatal(err)
	}
	old := bundled
	bundled = os.DirFS(dir)
	t.Cleanup(func() { bundled = old })
}

// writeBusybox writes a busybox image archive with a few applets.
func writeBusybox(t *testing.T, path string) {
	t.Helper()
	entries := []ociimage.Entry{{Path: "/bin/busybox", Source: busyboxBinary, Mode: 0o755}}
	for _, a := range []string{"sh", "echo", "sleep", "cat", "ls", "env", "true"} {
		entries = append(entries, ociimage.Entry{Path: "/bin/" + a, Type: ociimage.Symlink, Target: "busybox"})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ociimage.Write(f, ociimage.Image{
		Name:    busyboxImage,
		Config:  ociimage.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}},
		Entries: entries,
	}); err != nil {
		t.Fatal(err)
	}
}

// writeDockerArchive writes the image of an OCI layout tarball again in
// the `docker save` format (manifest.json, config, uncompressed layers),
// gzip-compressed, under name.
func writeDockerArchive(t *testing.T, layoutPath, path, name string) {
	t.Helper()
	f, err := os.Open(layoutPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layout, err := ociimage.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := layout.Images()
	if err != nil {
		t.Fatal(err)
	}
	m := imgs[0].Manifest
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, data []byte) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	cfgName := m.Config.Digest.Encoded() + ".json"
	add(cfgName, layout.Blobs[m.Config.Digest])
	var layers []string
	for i, l := range m.Layers {
		zr, err := gzip.NewReader(bytes.NewReader(layout.Blobs[l.Digest]))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(zr)
		ln := fmt.Sprintf("layer%d/layer.tar", i)
		add(ln, raw)
		layers = append(layers, ln)
	}
	manifest, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{name}, "Layers": layers}})
	add("manifest.json", manifest)
	tw.Close()
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testEnv is one containerd under test, in its own short state directory
// under /run and a temporary data directory.
type testEnv struct {
	t      *testing.T
	short  string
	runDir string
	cfg    Config
	bridge string
	ctx    context.Context
}

func newTestEnv(t *testing.T) *testEnv {
	b := make([]byte, 3)
	rand.Read(b)
	short := hex.EncodeToString(b)
	e := &testEnv{
		t:      t,
		short:  short,
		runDir: "/run/k1s-test-" + short,
		bridge: "k1st" + short,
	}
	_, e.ctx = ktesting.NewTestContext(t)
	dataDir := t.TempDir()
	e.cfg = Config{
		DataDir:  dataDir,
		State:    e.runDir + "/containerd",
		LogLevel: "info",
	}
	cni := filepath.Join(dataDir, "agent", "etc", "cni", "net.d")
	if err := os.MkdirAll(cni, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "k1s-test-%s",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}
  }]
}`, short, e.bridge, testSubnet, filepath.Join(e.runDir, "ipam"))
	if err := os.WriteFile(filepath.Join(cni, "10-test.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// Runs after every containerd started by the test has stopped.
	t.Cleanup(e.cleanup)
	return e
}

// start runs a containerd and waits until it is ready. stop cancels Run
// and returns its error; finished is closed once Run has returned.
func (e *testEnv) start() (c *Containerd, stop func() error) {
	c, stop, _ = e.startWatched()
	return c, stop
}

func (e *testEnv) startWatched() (*Containerd, func() error, <-chan struct{}) {
	e.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Executable = exe
	c, err := New(cfg)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	finished := make(chan struct{})
	var runErr error
	go func() {
		runErr = c.Run(ctx)
		close(finished)
	}()
	select {
	case <-c.Ready():
	case <-finished:
		cancel()
		e.t.Fatalf("containerd did not start: %v\n%s", runErr, e.logTail())
	case <-time.After(time.Minute):
		cancel()
		e.t.Fatalf("containerd not ready after a minute\n%s", e.logTail())
	}
	stop := func() error {
		cancel()
		<-finished
		return runErr
	}
	e.t.Cleanup(func() { stop() })
	return c, stop, finished
}

func (e *testEnv) logTail() string {
	data, _ := os.ReadFile(filepath.Join(e.cfg.DataDir, "agent", "containerd.log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// cleanup stops whatever the test left running with the killall package,
// scoped to this test's directories, bridge and no iptables chains.
func (e *testEnv) cleanup() {
	cfg := e.cfg
	exe, _ := os.Executable()
	cfg.Executable = exe
	c, err := New(cfg)
	if err != nil {
		e.t.Errorf("cleanup: %v", err)
		return
	}
	sys := killall.NewSystem(c.StartExisting)
	err = killall.Run(e.ctx, killall.Config{
		DataDir:       cfg.DataDir,
		RunDir:        e.runDir,
		State:         c.cfg.State,
		Bridge:        e.bridge,
		ChainPrefixes: []string{},
		Timeout:       10 * time.Second,
	}, sys)
	if err != nil {
		e.t.Errorf("cleanup with killall: %v", err)
	}
	// Pod cgroups (cgroupfs) under this test's parent.
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/k1s-test-" + e.short)
	for _, d := range dirs {
		subs, _ := filepath.Glob(d + "/*/")
		for _, s := range subs {
			if st, err := os.Stat(s); err == nil && st.IsDir() {
				os.Remove(s)
			}
		}
		os.Remove(d)
	}
	if err := os.RemoveAll(e.runDir); err != nil {
		e.t.Errorf("cleanup: %v", err)
	}
}

// criClient dials the CRI endpoint with the generated gRPC clients
// (k8s.io/cri-client is not in this module's dependencies).
func criClient(t *testing.T, ctx context.Context, endpoint string) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("CRI client: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
}

// waitFor polls cond (a separate process is observed: there is nothing to
// wait on) until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func containerPid(t *testing.T, ctx context.Context, rs runtimeapi.RuntimeServiceClient, id string) (int, runtimeapi.ContainerState) {
	t.Helper()
	st, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
		t.Fatalf("container info: %v", err)
	}
	return info.Pid, st.Status.State
}

func parentPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return fields[0] != "Z"
}

// pssKiB reads a process's proportional set size.
func pssKiB(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}

func runSandbox(t *testing.T, ctx context.Context, rs runtimeapi.RuntimeServiceClient, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	resp, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	return resp.PodSandboxId
}

// runContainer creates and starts busybox container "c" logging to c/0.log.
func runContainer(t *testing.T, ctx context.Context, rs runtimeapi.RuntimeServiceClient, sb string, sbCfg *runtimeapi.PodSandboxConfig, command ...string) string {
	t.Helper()
	resp, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image:    &runtimeapi.ImageSpec{Image: busyboxImage},
			Command:  command,
			LogPath:  "c/0.log",
		},
		SandboxConfig: sbCfg,
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	return resp.ContainerId
}

// TestContainerdRunsPodsAndReadoptsThemAfterRestart is the embedded
// containerd end to end: start, import the bundled pause image and a
// busybox archive, run a pod with CNI networking and a container that
// logs, restart containerd under the running container, and stop it all.
func TestContainerdRunsPodsAndReadoptsThemAfterRestart(t *testing.T) {
	requireRoot(t)
	ensureAssets(t)
	e := newTestEnv(t)
	ctx := e.ctx

	c, stop := e.start()
	cfg := c.Config()
	if got := c.Endpoint(); got != "unix://"+e.runDir+"/containerd/containerd.sock" {
		t.Errorf("Endpoint = %q", got)
	}
	if pid, err := ReadPidFile(cfg.PidFile); err != nil || !alive(pid) {
		t.Errorf("pid file %s: pid %d, %v; want containerd's", cfg.PidFile, pid, err)
	}
	// The state is in memory: on a tmpfs k1s mounted (this test's run
	// directory is not on one) or on the machine's own.
	var st unix.Statfs_t
	if err := unix.Statfs(cfg.State, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Errorf("state %s: file system type %#x (%v), want tmpfs", cfg.State, st.Type, err)
	}

	// Images: the bundled pause image, an OCI layout and a gzipped docker
	// archive in the images dir.
	writeBusybox(t, filepath.Join(cfg.ImagesDir, "busybox.tar"))
	writeDockerArchive(t, filepath.Join(cfg.ImagesDir, "busybox.tar"), filepath.Join(cfg.ImagesDir, "docker.tar.gz"), "k1s.local/docker-busybox:1")
	res, err := c.ImportImages(ctx)
	if err != nil {
		t.Fatalf("ImportImages: %v", err)
	}
	if len(res) != 3 || res[0].Images[0] != DefaultSandboxImage || res[1].Images[0] != busyboxImage ||
		res[2].Images[0] != "k1s.local/docker-busybox:1" || res[0].Skipped {
		t.Fatalf("import results = %+v", res)
	}
	rs, is := criClient(t, ctx, c.Endpoint())
	imgs, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, img := range imgs.Images {
		for _, tag := range img.RepoTags {
			found[tag] = true
			if tag == DefaultSandboxImage && !img.Pinned {
				t.Errorf("the pause image is not pinned")
			}
			if tag == busyboxImage && !img.Pinned {
				t.Errorf("busybox, imported from the images directory, is not pinned")
			}
		}
	}
	if !found[DefaultSandboxImage] || !found[busyboxImage] || !found["k1s.local/docker-busybox:1"] {
		t.Fatalf("CRI images = %v, want pause, busybox and the docker archive's", found)
	}
	// Nothing to pull from: a missing image fails at once.
	start := time.Now()
	if _, err := is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "k1s.local/missing:1"}}); err == nil {
		t.Errorf("pulling a missing image succeeded")
	} else if d := time.Since(start); d > 20*time.Second {
		t.Errorf("pulling a missing image took %s; it must fail fast", d)
	}

	// A pod with a container that logs.
	logDir := filepath.Join(cfg.DataDir, "logs", "default_test_uid1")
	if err := os.MkdirAll(filepath.Join(logDir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "test", Uid: "uid1", Namespace: "default"},
		Hostname:     "test",
		LogDirectory: logDir,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/k1s-test-" + e.short},
	}
	sb := runSandbox(t, ctx, rs, sbCfg)
	sbStatus, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	if ip := sbStatus.Status.GetNetwork().GetIp(); !strings.HasPrefix(ip, "10.250.0.") {
		t.Errorf("pod IP = %q, want one from %s", ip, testSubnet)
	}
	if netns, _ := filepath.Glob(filepath.Join(cfg.NetNSDir(), "cni-*")); len(netns) != 1 {
		t.Errorf("network namespaces under %s: %v, want the pod's", cfg.NetNSDir(), netns)
	}
	ctr := runContainer(t, ctx, rs, sb, sbCfg, "sh", "-c", "echo hello from k1s; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
	logPath := filepath.Join(logDir, "c", "0.log")
	readLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	waitFor(t, 30*time.Second, "the container's first log line", func() bool {
		return strings.Contains(readLog(), " stdout F hello from k1s\n")
	})

	pid, state := containerPid(t, ctx, rs, ctr)
	if state != runtimeapi.ContainerState_CONTAINER_RUNNING || pid == 0 {
		t.Fatalf("container state %v pid %d", state, pid)
	}
	shim := parentPid(pid)
	t.Logf("shim pid %d: PSS %d KiB (one shim serves the pod's sandbox and container)", shim, pssKiB(shim))

	// Restart containerd under the running container.
	if err := stop(); err != nil {
		t.Fatalf("stopping containerd: %v", err)
	}
	if !alive(pid) || !alive(shim) {
		t.Fatalf("the container (pid %d) or its shim (pid %d) died with containerd", pid, shim)
	}
	if _, err := os.Stat(cfg.PidFile); !os.IsNotExist(err) {
		t.Errorf("pid file left after stop: %v", err)
	}
	linesBefore := strings.Count(readLog(), "\n")
	c2, _ := e.start()
	res, err = c2.ImportImages(ctx)
	if err != nil || len(res) != 3 || !res[0].Skipped || !res[1].Skipped || !res[2].Skipped {
		t.Errorf("second import = %+v, %v; want all skipped", res, err)
	}
	rs, _ = criClient(t, ctx, c2.Endpoint())
	// A tarball removed from the images directory: its image loses its
	// pin (the CRI's view follows), the others keep theirs.
	if err := os.Remove(filepath.Join(cfg.ImagesDir, "docker.tar.gz")); err != nil {
		t.Fatal(err)
	}
	if res, err := c2.ImportImages(ctx); err != nil || len(res) != 2 {
		t.Errorf("import after removing docker.tar.gz = %+v, %v", res, err)
	}
	// (The docker archive holds busybox's image under another name, so
	// the CRI, which pins per image, still shows it pinned: the labels
	// are read from containerd.)
	cc, err := containerdclient.New(strings.TrimPrefix(c2.Endpoint(), "unix://"), containerdclient.WithDefaultNamespace("k8s.io"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for name, want := range map[string]bool{DefaultSandboxImage: true, busyboxImage: true, "k1s.local/docker-busybox:1": false} {
		img, err := cc.ImageService().Get(ctx, name)
		if err != nil {
			t.Fatalf("image %s: %v", name, err)
		}
		if got := img.Labels["io.cri-containerd.pinned"] == "pinned"; got != want {
			t.Errorf("image %s pinned = %v, want %v (labels %v)", name, got, want, img.Labels)
		}
	}
	pid2, state2 := containerPid(t, ctx, rs, ctr)
	if state2 != runtimeapi.ContainerState_CONTAINER_RUNNING || pid2 != pid {
		t.Fatalf("after restart: state %v pid %d, want running with pid %d", state2, pid2, pid)
	}
	waitFor(t, 10*time.Second, "more log lines after the restart", func() bool {
		return strings.Count(readLog(), "\n") > linesBefore+3
	})

	// Stop everything through the CRI.
	if _, err := rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctr, Timeout: 2}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if _, state := containerPid(t, ctx, rs, ctr); state != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("after stop: state %v", state)
	}
	if _, err := rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	waitFor(t, 10*time.Second, "the shim to exit", func() bool { return !alive(shim) })
	if netns, _ := filepath.Glob(filepath.Join(cfg.NetNSDir(), "cni-*")); len(netns) != 0 {
		t.Errorf("network namespaces left: %v", netns)
	}
}

// TestKillallStopsPodsLeftByK1s leaves a pod running after containerd
// stops, as a stopped k1s does, and checks killall stops it through a
// temporary containerd and leaves no process, mount or namespace.
func TestKillallStopsPodsLeftByK1s(t *testing.T) {
	requireRoot(t)
	ensureAssets(t)
	e := newTestEnv(t)
	ctx := e.ctx

	c, stop := e.start()
	cfg := c.Config()
	writeBusybox(t, filepath.Join(cfg.ImagesDir, "busybox.tar"))
	if _, err := c.ImportImages(ctx); err != nil {
		t.Fatal(err)
	}
	rs, _ := criClient(t, ctx, c.Endpoint())
	logDir := filepath.Join(cfg.DataDir, "logs", "default_kill_uid2")
	os.MkdirAll(filepath.Join(logDir, "c"), 0o755)
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "kill", Uid: "uid2", Namespace: "default"},
		LogDirectory: logDir,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/k1s-test-" + e.short},
	}
	sb := runSandbox(t, ctx, rs, sbCfg)
	ctr := runContainer(t, ctx, rs, sb, sbCfg, "sleep", "3600")
	pid, _ := containerPid(t, ctx, rs, ctr)
	shim := parentPid(pid)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	e.cleanup()

	if alive(pid) || alive(shim) {
		t.Errorf("after killall: container pid %d alive %v, shim pid %d alive %v", pid, alive(pid), shim, alive(shim))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, dir := range []string{e.runDir, cfg.DataDir} {
		if strings.Contains(string(mounts), " "+dir+"/") {
			t.Errorf("mounts left under %s", dir)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + e.bridge); !os.IsNotExist(err) {
		t.Errorf("bridge %s left: %v", e.bridge, err)
	}
	if _, err := os.Stat(cfg.Root); err != nil {
		t.Errorf("killall touched the data dir: %v", err)
	}
}

// TestShimMemory measures the shims' proportional set size per pod with
// K1S_MEASURE_SHIM_PODS pods running (skipped when unset): the per-pod
// memory overhead of the runtime.
func TestShimMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("K1S_MEASURE_SHIM_PODS"))
	if n <= 0 {
		t.Skip("set K1S_MEASURE_SHIM_PODS to measure")
	}
	requireRoot(t)
	ensureAssets(t)
	e := newTestEnv(t)
	ctx := e.ctx
	c, _ := e.start()
	cfg := c.Config()
	writeBusybox(t, filepath.Join(cfg.ImagesDir, "busybox.tar"))
	if _, err := c.ImportImages(ctx); err != nil {
		t.Fatal(err)
	}
	rs, _ := criClient(t, ctx, c.Endpoint())
	var shims, pauses []int
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		logDir := filepath.Join(cfg.DataDir, "logs", name)
		os.MkdirAll(filepath.Join(logDir, "c"), 0o755)
		sbCfg := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: name, Namespace: "default"},
			LogDirectory: logDir,
			Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/k1s-test-" + e.short},
		}
		sb := runSandbox(t, ctx, rs, sbCfg)
		ctr := runContainer(t, ctx, rs, sb, sbCfg, "sleep", "3600")
		pid, _ := containerPid(t, ctx, rs, ctr)
		shims = append(shims, parentPid(pid))
		st, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb, Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Pid int `json:"pid"`
		}
		json.Unmarshal([]byte(st.Info["info"]), &info)
		pauses = append(pauses, info.Pid)
	}
	measure := func() (total int) {
		for _, s := range shims {
			total += pssKiB(s)
		}
		return total
	}
	pause := 0
	for _, p := range pauses {
		pause += pssKiB(p)
	}
	t.Logf("%d pods: pause process PSS %d KiB per pod", n, pause/n)
	// Sample for a minute: the shims trim themselves periodically and the
	// CRI's stats calls make their heap grow in between.
	var samples []int
	for range 12 {
		time.Sleep(5 * time.Second)
		samples = append(samples, measure()/n)
	}
	sum, hi := 0, 0
	for _, v := range samples {
		sum += v
		hi = max(hi, v)
	}
	t.Logf("%d pods: shim PSS per pod over a minute (KiB, every 5 s): %v; mean %d, max %d", n, samples, sum/len(samples), hi)
}

// TestRunRefusesASecondContainerdAndReportsADeadChild checks Run will not
// start over a containerd that already answers, and returns an error when
// its containerd dies.
func TestRunRefusesASecondContainerdAndReportsADeadChild(t *testing.T) {
	requireRoot(t)
	ensureAssets(t)
	e := newTestEnv(t)
	c, stop, finished := e.startWatched()

	exe, _ := os.Executable()
	cfg := e.cfg
	cfg.Executable = exe
	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Run(e.ctx); err == nil || !strings.Contains(err.Error(), "a containerd already serves") {
		t.Errorf("second Run = %v, want it refused", err)
	}

	pid, err := ReadPidFile(c.Config().PidFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after containerd was killed")
	}
	if err := stop(); err == nil || !strings.Contains(err.Error(), "containerd exited unexpectedly (signal: killed)") {
		t.Errorf("Run after containerd was killed = %v, want an unexpected exit", err)
	}
}
