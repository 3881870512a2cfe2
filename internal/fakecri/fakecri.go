// Package fakecri is an in-memory CRI runtime service and image service
// for the agent's tests. The fakes of k8s.io/cri-api/pkg/apis/testing
// import testify, which go.mod lacks; these also record what they were
// asked for (stop timeouts, exec commands, configs). Only tests import it.
package fakecri

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// Sandbox is a pod sandbox the fake runtime holds.
type Sandbox struct {
	Cfg       *runtimeapi.PodSandboxConfig
	Handler   string
	State     runtimeapi.PodSandboxState
	CreatedAt int64
	IPs       []string
}

// Container is a container the fake runtime holds.
type Container struct {
	SandboxID  string
	Cfg        *runtimeapi.ContainerConfig
	State      runtimeapi.ContainerState
	CreatedAt  int64
	StartedAt  int64
	FinishedAt int64
	ExitCode   int32
	Reason     string
	LogPath    string
}

// ExecCall is one ExecSync the runtime was asked for.
type ExecCall struct {
	ID      string
	Cmd     []string
	Timeout time.Duration
}

// Runtime is an in-memory CRI runtime service that records what it was
// asked for. Methods no test calls panic through the nil embedded
// interface.
type Runtime struct {
	internalapi.RuntimeService

	clock clock.Clock

	// The tests lock it to read or change the fields below.
	sync.Mutex
	seq        int64
	Sandboxes  map[string]*Sandbox
	Containers map[string]*Container
	calls      []string
	Stops      map[string]int64 // container ID → timeout of the last StopContainer
	Execs      []ExecCall
	errs       map[string][]error
	PodIPs     []string
	// Trail records "exec:<id>" and "stop:<id>" in call order.
	Trail []string
	// ExecDelay is how long an exec "takes" on the fake clock.
	ExecDelay time.Duration
	// Conditions are what Status reports.
	Conditions []*runtimeapi.RuntimeCondition
}

// NewRuntime returns an empty runtime whose timestamps come from clk and
// whose sandboxes get the IP 10.42.0.7.
func NewRuntime(clk clock.Clock) *Runtime {
	return &Runtime{
		clock: clk, Sandboxes: map[string]*Sandbox{}, Containers: map[string]*Container{},
		Stops: map[string]int64{}, errs: map[string][]error{}, PodIPs: []string{"10.42.0.7"},
	}
}

// Inject makes the next call of method fail with err (ExecSync is named
// "ExecSync:<container ID>").
func (f *Runtime) Inject(method string, err error) {
	f.Lock()
	defer f.Unlock()
	f.errs[method] = append(f.errs[method], err)
}

func (f *Runtime) call(method string) error {
	f.calls = append(f.calls, method)
	if errs := f.errs[method]; len(errs) > 0 {
		f.errs[method] = errs[1:]
		return errs[0]
	}
	return nil
}

// now is a strictly increasing timestamp from the clock, so creation order
// survives a clock that does not move.
func (f *Runtime) now() int64 {
	f.seq++
	return f.clock.Now().UnixNano() + f.seq
}

// CallsOf counts the calls of method since the last ResetCalls.
func (f *Runtime) CallsOf(method string) int {
	f.Lock()
	defer f.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == method {
			n++
		}
	}
	return n
}

// ResetCalls forgets the calls counted so far.
func (f *Runtime) ResetCalls() {
	f.Lock()
	defer f.Unlock()
	f.calls = nil
}

// Exit makes a container exit with code at the clock's current time.
func (f *Runtime) Exit(t testing.TB, id string, code int32) {
	t.Helper()
	f.Lock()
	defer f.Unlock()
	c, ok := f.Containers[id]
	if !ok {
		t.Fatalf("no container %s", id)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = code
	c.FinishedAt = f.now()
}

// ContainerNamed returns the newest container of that name.
func (f *Runtime) ContainerNamed(t testing.TB, name string) (string, *Container) {
	t.Helper()
	f.Lock()
	defer f.Unlock()
	var id string
	var newest *Container
	for cid, c := range f.Containers {
		if c.Cfg.Metadata.Name == name && (newest == nil || c.CreatedAt > newest.CreatedAt) {
			id, newest = cid, c
		}
	}
	if newest == nil {
		t.Fatalf("no container named %s", name)
	}
	return id, newest
}

// ContainerNames returns the IDs of the containers, sorted.
func (f *Runtime) ContainerNames() []string {
	f.Lock()
	defer f.Unlock()
	var out []string
	for id := range f.Containers {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (f *Runtime) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("RunPodSandbox"); err != nil {
		return "", err
	}
	id := fmt.Sprintf("sb-%s-%d", cfg.Metadata.Name, cfg.Metadata.Attempt)
	f.Sandboxes[id] = &Sandbox{Cfg: cfg, Handler: handler, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: f.now(), IPs: f.PodIPs}
	return id, nil
}

func (f *Runtime) StopPodSandbox(_ context.Context, id string) error {
	f.Lock()
	defer f.Unlock()
	if err := f.call("StopPodSandbox"); err != nil {
		return err
	}
	sb, ok := f.Sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %s not found", id)
	}
	sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return nil
}

func (f *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	f.Lock()
	defer f.Unlock()
	if err := f.call("RemovePodSandbox"); err != nil {
		return err
	}
	delete(f.Sandboxes, id)
	return nil
}

func (f *Runtime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("PodSandboxStatus"); err != nil {
		return nil, err
	}
	sb, ok := f.Sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s not found", id)
	}
	st := &runtimeapi.PodSandboxStatus{
		Id: id, Metadata: sb.Cfg.Metadata, State: sb.State, CreatedAt: sb.CreatedAt,
		Labels: sb.Cfg.Labels, Annotations: sb.Cfg.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: sb.Cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
	}
	if len(sb.IPs) > 0 {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: sb.IPs[0]}
		for _, ip := range sb.IPs[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

func (f *Runtime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("ListPodSandbox"); err != nil {
		return nil, err
	}
	var out []*runtimeapi.PodSandbox
	for id, sb := range f.Sandboxes {
		if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(sb.Cfg.Labels)) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: id, Metadata: sb.Cfg.Metadata, State: sb.State, CreatedAt: sb.CreatedAt, Labels: sb.Cfg.Labels})
	}
	return out, nil
}

func (f *Runtime) CreateContainer(_ context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("CreateContainer"); err != nil {
		return "", err
	}
	if _, ok := f.Sandboxes[sandboxID]; !ok {
		return "", fmt.Errorf("sandbox %q not found", sandboxID)
	}
	id := fmt.Sprintf("%s-%s-%d", sandboxID, cfg.Metadata.Name, cfg.Metadata.Attempt)
	if _, dup := f.Containers[id]; dup {
		return "", fmt.Errorf("container name %s is reserved", id)
	}
	f.Containers[id] = &Container{
		SandboxID: sandboxID, Cfg: cfg, State: runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt: f.now(), LogPath: filepath.Join(sbCfg.GetLogDirectory(), cfg.LogPath),
	}
	return id, nil
}

func (f *Runtime) StartContainer(_ context.Context, id string) error {
	f.Lock()
	defer f.Unlock()
	if err := f.call("StartContainer"); err != nil {
		return err
	}
	c, ok := f.Containers[id]
	if !ok {
		return fmt.Errorf("container %s not found", id)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.StartedAt = f.now()
	return nil
}

func (f *Runtime) StopContainer(_ context.Context, id string, timeout int64) error {
	f.Lock()
	defer f.Unlock()
	if err := f.call("StopContainer"); err != nil {
		return err
	}
	c, ok := f.Containers[id]
	if !ok {
		return fmt.Errorf("container %s not found", id)
	}
	f.Stops[id] = timeout
	f.Trail = append(f.Trail, "stop:"+id)
	if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.ExitCode = 137
		c.FinishedAt = f.now()
	}
	return nil
}

func (f *Runtime) RemoveContainer(_ context.Context, id string) error {
	f.Lock()
	defer f.Unlock()
	if err := f.call("RemoveContainer"); err != nil {
		return err
	}
	delete(f.Containers, id)
	return nil
}

func (f *Runtime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("ListContainers"); err != nil {
		return nil, err
	}
	var out []*runtimeapi.Container
	for id, c := range f.Containers {
		if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(c.Cfg.Labels)) {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: id, PodSandboxId: c.SandboxID, Metadata: c.Cfg.Metadata, State: c.State, CreatedAt: c.CreatedAt, Labels: c.Cfg.Labels, Annotations: c.Cfg.Annotations})
	}
	return out, nil
}

func (f *Runtime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("ContainerStatus"); err != nil {
		return nil, err
	}
	c, ok := f.Containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s not found", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: id, Metadata: c.Cfg.Metadata, State: c.State, CreatedAt: c.CreatedAt, StartedAt: c.StartedAt,
		FinishedAt: c.FinishedAt, ExitCode: c.ExitCode, Reason: c.Reason, Image: statusImage(c.Cfg.Image),
		ImageRef: c.Cfg.Image.GetImage(), Labels: c.Cfg.Labels, Annotations: c.Cfg.Annotations,
		Mounts: c.Cfg.Mounts, LogPath: c.LogPath,
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

func (f *Runtime) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	f.Lock()
	defer f.Unlock()
	f.Execs = append(f.Execs, ExecCall{ID: id, Cmd: cmd, Timeout: timeout})
	f.Trail = append(f.Trail, "exec:"+id)
	if fc, ok := f.clock.(*testingclock.FakeClock); ok && f.ExecDelay > 0 {
		fc.Step(f.ExecDelay)
	}
	if err := f.call("ExecSync:" + id); err != nil {
		return nil, []byte("hook said no"), err
	}
	return nil, nil, nil
}

// Images is an in-memory CRI image service: an image is present when its
// name was given to NewImages or pulled.
type Images struct {
	internalapi.ImageManagerService

	mu     sync.Mutex
	images map[string]string // name → image ID
	pulls  []string
	// PullErr, when set, is the error of every pull.
	PullErr error
}

// NewImages returns an image service holding the named images, each with
// the ID "sha256:<name>".
func NewImages(names ...string) *Images {
	f := &Images{images: map[string]string{}}
	for _, n := range names {
		f.images[n] = "sha256:" + n
	}
	return f
}

func (f *Images) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.images[spec.Image]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: id, RepoTags: []string{spec.Image}}}, nil
}

func (f *Images) PullImage(_ context.Context, spec *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls = append(f.pulls, spec.Image)
	if f.PullErr != nil {
		return "", f.PullErr
	}
	id := "sha256:pulled-" + spec.Image
	f.images[spec.Image] = id
	return id, nil
}

// PullCount counts the pulls so far.
func (f *Images) PullCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pulls)
}

func (f *Runtime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("Status"); err != nil {
		return nil, err
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: f.Conditions}}, nil
}

func (f *Runtime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	f.Lock()
	defer f.Unlock()
	if err := f.call("Version"); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "2.4.2"}, nil
}
