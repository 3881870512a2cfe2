package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is a CRI runtime holding containers and sandboxes. Its
// streaming calls return URLs from the stream functions and record the
// requests.
type fakeRuntime struct {
	mu         sync.Mutex
	containers []*runtimeapi.Container
	statuses   map[string]*runtimeapi.ContainerStatus
	sandboxes  []*runtimeapi.PodSandbox

	exec        func(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	attach      func(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	portForward func(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)

	execReqs   []*runtimeapi.ExecRequest
	attachReqs []*runtimeapi.AttachRequest
	pfReqs     []*runtimeapi.PortForwardRequest
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if filter.GetState() != nil && filter.GetState().GetState() != c.State {
			continue
		}
		if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(c.Labels)) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[id]
	if !ok {
		return nil, errors.New("no such container")
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range f.sandboxes {
		if filter.GetState() != nil && filter.GetState().GetState() != sb.State {
			continue
		}
		if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(sb.Labels)) {
			continue
		}
		out = append(out, sb)
	}
	return out, nil
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	f.mu.Lock()
	f.execReqs = append(f.execReqs, req)
	fn := f.exec
	f.mu.Unlock()
	if fn == nil {
		return nil, errors.New("exec not supported")
	}
	return fn(req)
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	f.mu.Lock()
	f.attachReqs = append(f.attachReqs, req)
	fn := f.attach
	f.mu.Unlock()
	if fn == nil {
		return nil, errors.New("attach not supported")
	}
	return fn(req)
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.mu.Lock()
	f.pfReqs = append(f.pfReqs, req)
	fn := f.portForward
	f.mu.Unlock()
	if fn == nil {
		return nil, errors.New("port forward not supported")
	}
	return fn(req)
}

// addContainer adds a container of pod with the agent's labels.
func (f *fakeRuntime) addContainer(pod *corev1.Pod, name, id string, attempt uint32, state runtimeapi.ContainerState, logPath string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	labels := map[string]string{
		labelPodNamespace:  pod.Namespace,
		labelPodName:       pod.Name,
		labelPodUID:        string(pod.UID),
		labelContainerName: name,
	}
	f.containers = append(f.containers, &runtimeapi.Container{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		State:     state,
		CreatedAt: int64(attempt) + 1,
		Labels:    labels,
	})
	if f.statuses == nil {
		f.statuses = map[string]*runtimeapi.ContainerStatus{}
	}
	f.statuses[id] = &runtimeapi.ContainerStatus{Id: id, State: state, LogPath: logPath, Labels: labels}
}

func (f *fakeRuntime) addSandbox(pod *corev1.Pod, id string, state runtimeapi.PodSandboxState, created int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{
		Id:        id,
		State:     state,
		CreatedAt: created,
		Labels: map[string]string{
			labelPodNamespace: pod.Namespace,
			labelPodName:      pod.Name,
			labelPodUID:       string(pod.UID),
		},
	})
}

func newPod(ns, name, uid string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "k1s.local/busybox:1.36"})
	}
	return p
}

// tokenAuth authenticates "Authorization: Bearer <user>" as that user, and
// fails on the token "error".
var tokenAuth = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return nil, false, nil
	}
	if tok == "error" {
		return nil, false, errors.New("token review unavailable")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: tok}}, true, nil
})

// allowAll authorizes everything.
var allowAll = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

// testServer serves the secure handler over plain HTTP with tokenAuth and
// the given authorizer.
func testServer(t *testing.T, pods []*corev1.Pod, rt *fakeRuntime, authz authorizer.Authorizer) (*Server, *httptest.Server) {
	t.Helper()
	cfg := Config{NodeName: "node-1", TLSCertFile: "unused", TLSPrivateKeyFile: "unused"}
	cfg.setDefaults()
	s, err := newServer(cfg, Deps{
		Pods:    PodsFunc(func() []*corev1.Pod { return pods }),
		Runtime: rt,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) }),
	}, tokenAuth, authz)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.secureHandler())
	t.Cleanup(ts.Close)
	return s, ts
}

// do sends a request with a bearer token and returns status and body.
func do(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
