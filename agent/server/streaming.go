package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	translator "k8s.io/apiserver/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Query parameters of exec and attach; "1" means yes.
const (
	paramCommand = "command"
	paramStdin   = "input"
	paramStdout  = "output"
	paramStderr  = "error"
	paramTTY     = "tty"
	paramPort    = "port"
)

// streamOptions reads the streams an exec or attach asks for. A terminal
// merges stderr into stdout, so stderr is dropped with tty.
func streamOptions(r *http.Request) (translator.Options, error) {
	q := r.URL.Query()
	o := translator.Options{
		Stdin:  q.Get(paramStdin) == "1",
		Stdout: q.Get(paramStdout) == "1",
		Stderr: q.Get(paramStderr) == "1",
		Tty:    q.Get(paramTTY) == "1",
	}
	if o.Tty {
		o.Stderr = false
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, fmt.Errorf("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// streamPod finds the pod a streaming request names; a UID in the path
// must match.
func (s *Server) streamPod(w http.ResponseWriter, r *http.Request) (*corev1.Pod, bool) {
	pod, ok := s.getPod(r.PathValue("namespace"), r.PathValue("pod"))
	if !ok {
		writeText(w, http.StatusNotFound, "pod does not exist")
		return nil, false
	}
	if uid := r.PathValue("uid"); uid != "" && string(pod.UID) != uid {
		writeText(w, http.StatusNotFound, "pod not found")
		return nil, false
	}
	return pod, true
}

// serveExec runs a command in a container through the runtime's
// streaming server.
func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := streamOptions(r)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	id, err := s.runningContainer(r.Context(), pod, r.PathValue("container"))
	if err != nil {
		writeRuntimeError(w, err)
		return
	}
	resp, err := s.runtime.Exec(r.Context(), &runtimeapi.ExecRequest{
		ContainerId: id,
		Cmd:         r.URL.Query()[paramCommand],
		Tty:         opts.Tty,
		Stdin:       opts.Stdin,
		Stdout:      opts.Stdout,
		Stderr:      opts.Stderr,
	})
	if err != nil {
		writeRuntimeError(w, err)
		return
	}
	s.proxyStream(w, r, resp.GetUrl(), &opts)
}

// serveAttach attaches to a container's main process through the
// runtime's streaming server.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	opts, err := streamOptions(r)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	name := r.PathValue("container")
	tty, ok := containerSpec(pod, name)
	if !ok {
		writeText(w, http.StatusInternalServerError, fmt.Sprintf("container %s not found in pod %s_%s", name, pod.Name, pod.Namespace))
		return
	}
	id, err := s.runningContainer(r.Context(), pod, name)
	if err != nil {
		writeRuntimeError(w, err)
		return
	}
	// Whether the process has a terminal was fixed when it started.
	opts.Tty = tty
	resp, err := s.runtime.Attach(r.Context(), &runtimeapi.AttachRequest{
		ContainerId: id,
		Stdin:       opts.Stdin,
		Tty:         opts.Tty,
		Stdout:      opts.Stdout,
		Stderr:      opts.Stderr,
	})
	if err != nil {
		writeRuntimeError(w, err)
		return
	}
	s.proxyStream(w, r, resp.GetUrl(), &opts)
}

// servePortForward forwards ports of a pod's sandbox through the runtime's
// streaming server. SPDY clients name ports per stream; WebSocket clients
// in the query; WebSocket clients tunneling SPDY are translated.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	tunnel := wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
	var ports []int32
	if !tunnel && wsstream.IsWebSocketRequest(r) {
		var err error
		if ports, err = parsePorts(r.URL.Query()[paramPort]); err != nil {
			writeText(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	sandbox, err := s.readySandbox(r.Context(), pod)
	if err != nil {
		writeRuntimeError(w, err)
		return
	}
	resp, err := s.runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: ports})
	if err != nil {
		writeRuntimeError(w, err)
		return
	}
	u, ok := streamURL(w, r, resp.GetUrl())
	if !ok {
		return
	}
	var h http.Handler = proxy.NewUpgradeAwareHandler(u, nil, false, true, errorResponder{})
	if tunnel {
		h = translator.NewTunnelingHandler(h)
	}
	h.ServeHTTP(w, withoutCredentials(r))
}

// parsePorts reads the port query parameters of a WebSocket port forward.
func parsePorts(values []string) ([]int32, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("query parameter %q is required", paramPort)
	}
	var ports []int32
	for _, v := range values {
		if v == "" {
			return nil, fmt.Errorf("query parameter %q cannot be empty", paramPort)
		}
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %w", v, err)
			}
			if n < 1 {
				return nil, fmt.Errorf("port %q must be > 0", v)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// proxyStream hands an exec or attach to the runtime's streaming server:
// SPDY and WebSocket upgrades are proxied as they are, except WebSocket
// clients of the v5 protocol, whose streams are translated to SPDY.
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, rawURL string, opts *translator.Options) {
	u, ok := streamURL(w, r, rawURL)
	if !ok {
		return
	}
	var h http.Handler = proxy.NewUpgradeAwareHandler(u, nil, false, true, errorResponder{})
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		h = translator.NewStreamTranslatorHandler(u, nil, 0, *opts)
	}
	h.ServeHTTP(w, withoutCredentials(r))
}

// streamURL parses the runtime's streaming URL, which must be absolute.
func streamURL(w http.ResponseWriter, r *http.Request, raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err == nil && !u.IsAbs() {
		err = fmt.Errorf("not an absolute URL")
	}
	if err != nil {
		klog.FromContext(r.Context()).Error(err, "Runtime returned an unusable streaming URL", "url", raw)
		writeText(w, http.StatusInternalServerError, fmt.Sprintf("runtime streaming URL %q: %v", raw, err))
		return nil, false
	}
	return u, true
}

// withoutCredentials keeps the client's credentials from reaching the
// runtime's streaming server, which authorizes by its one-time URL.
func withoutCredentials(r *http.Request) *http.Request {
	if r.Header.Get("Authorization") == "" {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	return r
}

// errorResponder answers proxy failures.
type errorResponder struct{}

func (errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).V(2).Info("Proxying a stream to the runtime failed", "err", err)
	writeText(w, http.StatusInternalServerError, err.Error())
}

// writeRuntimeError answers a failed runtime call: not found as 404, too
// many requests in flight as 429, the rest as 500.
func writeRuntimeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch status.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		w.Header().Set("Retry-After", "60")
		code = http.StatusTooManyRequests
	}
	writeText(w, code, err.Error())
}
