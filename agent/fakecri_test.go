package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// An in-memory CRI runtime and image service (the fakes of
// k8s.io/cri-api/pkg/apis/testing need testify, which go.mod lacks). A
// copy of agent/kuberuntime's test fake, plus Status and Version.

type fakeSandbox struct {
	cfg       *runtimeapi.PodSandboxConfig
	handler   string
	state     runtimeapi.PodSandboxState
	createdAt int64
	ips       []string
}

type fakeContainer struct {
	sandboxID  string
	cfg        *runtimeapi.ContainerConfig
	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	logPath    string
}

type execCall struct {
	id      string
	cmd     []string
	timeout time.Duration
}

// fakeRuntime is an in-memory CRI runtime service. Methods the manager
// never calls panic through the nil embedded interface.
type fakeRuntime struct {
	internalapi.RuntimeService

	clock clock.Clock

	mu         sync.Mutex
	seq        int64
	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer
	calls      []string
	stops      map[string]int64 // container ID → timeout of the last StopContainer
	execs      []execCall
	errs       map[string][]error
	podIPs     []string
	// trail records "exec:<id>" and "stop:<id>" in call order.
	trail []string
	// execDelay is how long an exec "takes" on the fake clock.
	execDelay time.Duration
	// conditions are what Status reports.
	conditions []*runtimeapi.RuntimeCondition
}

func newFakeRuntime(clk clock.Clock) *fakeRuntime {
	return &fakeRuntime{
		clock: clk, sandboxes: map[string]*fakeSandbox{}, containers: map[string]*fakeContainer{},
		stops: map[string]int64{}, errs: map[string][]error{}, podIPs: []string{"10.42.0.7"},
	}
}

// inject makes the next call of method fail with err.
func (f *fakeRuntime) inject(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = append(f.errs[method], err)
}

func (f *fakeRuntime) call(method string) error {
	f.calls = append(f.calls, method)
	if errs := f.errs[method]; len(errs) > 0 {
		f.errs[method] = errs[1:]
		return errs[0]
	}
	return nil
}

// now is a strictly increasing timestamp from the clock, so creation order
// survives a clock that does not move.
func (f *fakeRuntime) now() int64 {
	f.seq++
	return f.clock.Now().UnixNano() + f.seq
}

func (f *fakeRuntime) callsOf(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == method {
			n++
		}
	}
	return n
}

func (f *fakeRuntime) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// exit makes a container exit with code at the clock's current time.
func (f *fakeRuntime) exit(t *testing.T, id string, code int32) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		t.Fatalf("no container %s", id)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.exitCode = code
	c.finishedAt = f.now()
}

// containerNamed returns the newest container of that name.
func (f *fakeRuntime) containerNamed(t *testing.T, name string) (string, *fakeContainer) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var id string
	var newest *fakeContainer
	for cid, c := range f.containers {
		if c.cfg.Metadata.Name == name && (newest == nil || c.createdAt > newest.createdAt) {
			id, newest = cid, c
		}
	}
	if newest == nil {
		t.Fatalf("no container named %s", name)
	}
	return id, newest
}

func (f *fakeRuntime) containerNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.containers {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (f *fakeRuntime) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("RunPodSandbox"); err != nil {
		return "", err
	}
	id := fmt.Sprintf("sb-%s-%d", cfg.Metadata.Name, cfg.Metadata.Attempt)
	f.sandboxes[id] = &fakeSandbox{cfg: cfg, handler: handler, state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: f.now(), ips: f.podIPs}
	return id, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("StopPodSandbox"); err != nil {
		return err
	}
	sb, ok := f.sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %s not found", id)
	}
	sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("RemovePodSandbox"); err != nil {
		return err
	}
	delete(f.sandboxes, id)
	return nil
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("PodSandboxStatus"); err != nil {
		return nil, err
	}
	sb, ok := f.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s not found", id)
	}
	st := &runtimeapi.PodSandboxStatus{
		Id: id, Metadata: sb.cfg.Metadata, State: sb.state, CreatedAt: sb.createdAt,
		Labels: sb.cfg.Labels, Annotations: sb.cfg.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
	}
	if len(sb.ips) > 0 {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ips[0]}
		for _, ip := range sb.ips[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ListPodSandbox"); err != nil {
		return nil, err
	}
	var out []*runtimeapi.PodSandbox
	for id, sb := range f.sandboxes {
		if !matches(filter.GetLabelSelector(), sb.cfg.Labels) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: id, Metadata: sb.cfg.Metadata, State: sb.state, CreatedAt: sb.createdAt, Labels: sb.cfg.Labels})
	}
	return out, nil
}

func (f *fakeRuntime) CreateContainer(_ context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CreateContainer"); err != nil {
		return "", err
	}
	if _, ok := f.sandboxes[sandboxID]; !ok {
		return "", fmt.Errorf("sandbox %q not found", sandboxID)
	}
	id := fmt.Sprintf("%s-%s-%d", sandboxID, cfg.Metadata.Name, cfg.Metadata.Attempt)
	if _, dup := f.containers[id]; dup {
		return "", fmt.Errorf("container name %s is reserved", id)
	}
	f.containers[id] = &fakeContainer{
		sandboxID: sandboxID, cfg: cfg, state: runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt: f.now(), logPath: filepath.Join(sbCfg.GetLogDirectory(), cfg.LogPath),
	}
	return id, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("StartContainer"); err != nil {
		return err
	}
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %s not found", id)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = f.now()
	return nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, timeout int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("StopContainer"); err != nil {
		return err
	}
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %s not found", id)
	}
	f.stops[id] = timeout
	f.trail = append(f.trail, "stop:"+id)
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		c.state = runtimeapi.ContainerState_CONTAINER_EXITED
		c.exitCode = 137
		c.finishedAt = f.now()
	}
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("RemoveContainer"); err != nil {
		return err
	}
	delete(f.containers, id)
	return nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ListContainers"); err != nil {
		return nil, err
	}
	var out []*runtimeapi.Container
	for id, c := range f.containers {
		if !matches(filter.GetLabelSelector(), c.cfg.Labels) {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: id, PodSandboxId: c.sandboxID, Metadata: c.cfg.Metadata, State: c.state, CreatedAt: c.createdAt, Labels: c.cfg.Labels, Annotations: c.cfg.Annotations})
	}
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerStatus"); err != nil {
		return nil, err
	}
	c, ok := f.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s not found", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: id, Metadata: c.cfg.Metadata, State: c.state, CreatedAt: c.createdAt, StartedAt: c.startedAt,
		FinishedAt: c.finishedAt, ExitCode: c.exitCode, Reason: c.reason, Image: statusImage(c.cfg.Image),
		ImageRef: c.cfg.Image.GetImage(), Labels: c.cfg.Labels, Annotations: c.cfg.Annotations,
		Mounts: c.cfg.Mounts, LogPath: c.logPath,
	}}, nil
}

// statusImage is what containerd reports as a container's image: the
// image's tag (here the name the container was created for), not the ID.
func statusImage(spec *runtimeapi.ImageSpec) *runtimeapi.ImageSpec {
	if u := spec.GetUserSpecifiedImage(); u != "" {
		return &runtimeapi.ImageSpec{Image: u}
	}
	return spec
}

func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, execCall{id: id, cmd: cmd, timeout: timeout})
	f.trail = append(f.trail, "exec:"+id)
	if fc, ok := f.clock.(*testingclock.FakeClock); ok && f.execDelay > 0 {
		fc.Step(f.execDelay)
	}
	if err := f.call("ExecSync:" + id); err != nil {
		return nil, []byte("hook said no"), err
	}
	return nil, nil, nil
}

// fakeImages is an in-memory CRI image service.
type fakeImages struct {
	internalapi.ImageManagerService

	mu      sync.Mutex
	images  map[string]string // name → image ID
	pullErr error             // every pull fails with it when set
	pulls   []string
}

func newFakeImages(names ...string) *fakeImages {
	f := &fakeImages{images: map[string]string{}}
	for _, n := range names {
		f.images[n] = "sha256:" + n
	}
	return f
}

func (f *fakeImages) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.images[spec.Image]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: id, RepoTags: []string{spec.Image}}}, nil
}

func (f *fakeImages) PullImage(_ context.Context, spec *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls = append(f.pulls, spec.Image)
	if f.pullErr != nil {
		return "", f.pullErr
	}
	id := "sha256:pulled-" + spec.Image
	f.images[spec.Image] = id
	return id, nil
}

func (f *fakeImages) pullCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pulls)
}

func (f *fakeRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Status"); err != nil {
		return nil, err
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: f.conditions}}, nil
}

func (f *fakeRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Version"); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "2.4.2"}, nil
}
