// Package prober runs containers' liveness, readiness and startup probes
// (exec, HTTP, TCP and gRPC), one worker per container and probe type, and
// keeps their results: readiness feeds the pod's Ready condition, a
// liveness failure makes the agent restart the container, a startup probe
// holds the other two back until it succeeds.
package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Kind is a probe type.
type Kind string

// Probe kinds.
const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Execer runs a command in a container (the CRI's ExecSync).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

type key struct {
	uid       types.UID
	container string
	kind      Kind
}

type result struct {
	containerID string
	success     bool
}

// Manager runs probes. Safe for concurrent use.
type Manager struct {
	exec     Execer
	recorder record.EventRecorder
	clock    clock.Clock
	updates  chan types.UID

	mu      sync.Mutex
	workers map[key]*worker
	results map[key]result
}

// New returns a probe manager; updates receives the UID of a pod whose
// probe results changed.
func New(exec Execer, recorder record.EventRecorder, clk clock.Clock) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{exec: exec, recorder: recorder, clock: clk, updates: make(chan types.UID, 256),
		workers: map[key]*worker{}, results: map[key]result{}}
}

// Updates delivers pods whose probe results changed.
func (m *Manager) Updates() <-chan types.UID { return m.updates }

// Sync starts workers for the running containers of pod that have probes
// and stops workers of containers that changed or went away. containerIDs
// maps container names to their running container's ID (without the
// runtime prefix).
func (m *Manager) Sync(ctx context.Context, pod *corev1.Pod, podIP string, containerIDs map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[key]*corev1.Probe{}
	specs := map[string]*corev1.Container{}
	probed := make([]*corev1.Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		// Sidecars (restartable init containers) are probed as the
		// pod's containers are; other init containers are not.
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			probed = append(probed, c)
		}
	}
	for i := range pod.Spec.Containers {
		probed = append(probed, &pod.Spec.Containers[i])
	}
	for _, c := range probed {
		specs[c.Name] = c
		if c.LivenessProbe != nil {
			want[key{pod.UID, c.Name, Liveness}] = c.LivenessProbe
		}
		if c.ReadinessProbe != nil {
			want[key{pod.UID, c.Name, Readiness}] = c.ReadinessProbe
		}
		if c.StartupProbe != nil {
			want[key{pod.UID, c.Name, Startup}] = c.StartupProbe
		}
	}
	for k, w := range m.workers {
		if k.uid != pod.UID {
			continue
		}
		if _, ok := want[k]; !ok || containerIDs[k.container] != w.containerID {
			w.stop()
			delete(m.workers, k)
		}
	}
	for k, probe := range want {
		id := containerIDs[k.container]
		if id == "" {
			continue
		}
		if _, ok := m.workers[k]; ok {
			continue
		}
		w := &worker{m: m, key: k, probe: probe, pod: pod, podIP: podIP, container: specs[k.container], containerID: id, done: make(chan struct{})}
		m.workers[k] = w
		go w.run(ctx)
	}
}

// RemovePod stops every worker of a pod and forgets its results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers {
		if k.uid == uid {
			w.stop()
			delete(m.workers, k)
		}
	}
	for k := range m.results {
		if k.uid == uid {
			delete(m.results, k)
		}
	}
}

func (m *Manager) lookup(uid types.UID, containerName, containerID string, kind Kind) (bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[key{uid, containerName, kind}]
	if !ok || r.containerID != containerID {
		return false, false
	}
	return r.success, true
}

// Ready reports the readiness result of a running container.
func (m *Manager) Ready(uid types.UID, containerName, containerID string) (bool, bool) {
	return m.lookup(uid, containerName, containerID, Readiness)
}

// Started reports the startup result of a running container.
func (m *Manager) Started(uid types.UID, containerName, containerID string) (bool, bool) {
	return m.lookup(uid, containerName, containerID, Startup)
}

// LivenessFailed returns the names of the pod's containers whose running
// instance (ids: container name → running container ID) failed its
// liveness probe.
func (m *Manager) LivenessFailed(uid types.UID, ids map[string]string) sets.Set[string] {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := sets.New[string]()
	for k, r := range m.results {
		if k.uid == uid && k.kind == Liveness && !r.success && r.containerID == ids[k.container] {
			out.Insert(k.container)
		}
	}
	return out
}

func (m *Manager) set(k key, r result) {
	m.mu.Lock()
	old, had := m.results[k]
	m.results[k] = r
	m.mu.Unlock()
	if !had || old != r {
		select {
		case m.updates <- k.uid:
		default:
		}
	}
}

// worker probes one container with one probe kind.
type worker struct {
	m           *Manager
	key         key
	probe       *corev1.Probe
	pod         *corev1.Pod
	podIP       string
	container   *corev1.Container
	containerID string
	done        chan struct{}
	once        sync.Once
}

func (w *worker) stop() { w.once.Do(func() { close(w.done) }) }

func (w *worker) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(w.pod), "container", w.key.container, "probe", w.key.kind)
	p := w.probe
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	// Readiness starts false, startup false, liveness true until proven otherwise.
	initial := w.key.kind == Liveness
	defer w.forgetMetrics()
	w.m.set(w.key, result{containerID: w.containerID, success: initial})
	select {
	case <-w.m.clock.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	case <-w.done:
		return
	case <-ctx.Done():
		return
	}
	successes, failures := 0, 0
	last := initial
	for {
		if w.key.kind != Startup {
			// Liveness and readiness wait for a startup probe to succeed.
			if w.container.StartupProbe != nil {
				if started, known := w.m.Started(w.key.uid, w.key.container, w.containerID); !known || !started {
					goto wait
				}
			}
		}
		{
			began := w.m.clock.Now()
			ok, msg := w.once1(ctx)
			w.recordProbe(ok, w.m.clock.Since(began))
			if ok {
				successes++
				failures = 0
			} else {
				failures++
				successes = 0
				if w.m.recorder != nil {
					w.m.recorder.Eventf(w.pod, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", w.key.kind, msg)
				}
				logger.V(4).Info("Probe failed", "msg", msg)
			}
			next := last
			if ok && successes >= int(max(p.SuccessThreshold, 1)) {
				next = true
			}
			if !ok && failures >= int(max(p.FailureThreshold, 1)) {
				next = false
			}
			if next != last || (w.key.kind == Startup && next) {
				w.m.set(w.key, result{containerID: w.containerID, success: next})
				last = next
			}
			if w.key.kind == Startup && next {
				return // startup probes stop once they succeed
			}
			if w.key.kind == Startup && !ok && failures >= int(max(p.FailureThreshold, 1)) {
				// A container that never started is restarted as one
				// that failed its liveness probe, as kubelet does.
				w.m.set(key{w.key.uid, w.key.container, Liveness}, result{containerID: w.containerID, success: false})
				return
			}
			if w.key.kind == Liveness && !next {
				// The agent restarts the container; its new ID gets a new worker.
				return
			}
		}
	wait:
		select {
		case <-w.m.clock.After(period):
		case <-w.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// once1 runs the probe's handler one time.
func (w *worker) once1(ctx context.Context) (bool, string) {
	p := w.probe
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host := w.podIP
	switch {
	case p.Exec != nil:
		stdout, stderr, err := w.m.exec.ExecSync(ctx, w.containerID, p.Exec.Command, timeout)
		if err != nil {
			return false, fmt.Sprintf("command %q exited: %v %s%s", p.Exec.Command, err, stdout, stderr)
		}
		return true, ""
	case p.HTTPGet != nil:
		h := p.HTTPGet
		if h.Host != "" {
			host = h.Host
		}
		port, err := portOf(h.Port, w.container)
		if err != nil {
			return false, err.Error()
		}
		scheme := strings.ToLower(string(h.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: h.Path}
		if i := strings.IndexByte(h.Path, '?'); i >= 0 {
			u.Path, u.RawQuery = h.Path[:i], h.Path[i+1:]
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return false, err.Error()
		}
		req.Header.Set("User-Agent", "kube-probe/1.37")
		for _, hd := range h.HTTPHeaders {
			if strings.EqualFold(hd.Name, "host") {
				req.Host = hd.Value
				continue
			}
			req.Header.Add(hd.Name, hd.Value)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			return false, fmt.Sprintf("Get %q: %v", u.String(), err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 400 {
			return true, ""
		}
		return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	case p.TCPSocket != nil:
		if p.TCPSocket.Host != "" {
			host = p.TCPSocket.Host
		}
		port, err := portOf(p.TCPSocket.Port, w.container)
		if err != nil {
			return false, err.Error()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, fmt.Sprintf("dial tcp %s: %v", net.JoinHostPort(host, strconv.Itoa(port)), err)
		}
		conn.Close()
		return true, ""
	case p.GRPC != nil:
		addr := net.JoinHostPort(host, strconv.Itoa(int(p.GRPC.Port)))
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			return false, fmt.Sprintf("failed to connect service %q within %s: %v", addr, timeout, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus())
		}
		return true, ""
	}
	return false, "probe has no handler"
}

func portOf(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", p.StrVal, c.Name)
}
