package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// containerProcesses stands in for what runs in containers, behind the
// runtime's streaming server.
type containerProcesses struct{}

func (containerProcesses) Exec(_ context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	switch cmd[0] {
	case "echo":
		fmt.Fprintf(out, "%s says %s\n", id, strings.Join(cmd[1:], " "))
		fmt.Fprint(errw, "a warning\n")
		return nil
	case "cat":
		_, err := io.Copy(out, in)
		return err
	case "exit":
		return utilexec.CodeExitError{Err: errors.New("exit status 3"), Code: 3}
	}
	return fmt.Errorf("%s: not found", cmd[0])
}

func (containerProcesses) Attach(_ context.Context, id string, in io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	fmt.Fprintf(out, "attached to %s: ", id)
	_, err := io.Copy(out, in)
	return err
}

// PortForward answers "<sandbox>:<port>:<first 4 bytes sent>".
func (containerProcesses) PortForward(_ context.Context, sandbox string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(stream, buf); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stream, "%s:%d:%s", sandbox, port, buf)
	return err
}

// streamingRuntime is a fake CRI runtime backed by a real CRI streaming
// server on loopback, as containerd's is.
func streamingRuntime(t *testing.T) *fakeRuntime {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = l.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: l.Addr().String()}
	srv, err := streaming.NewServer(cfg, containerProcesses{})
	if err != nil {
		t.Fatal(err)
	}
	hs := &httptest.Server{Listener: l, Config: &http.Server{Handler: srv}}
	hs.Start()
	t.Cleanup(hs.Close)
	return &fakeRuntime{
		exec:        srv.GetExec,
		attach:      srv.GetAttach,
		portForward: srv.GetPortForward,
	}
}

func streamPods() (*corev1.Pod, []*corev1.Pod) {
	web := newPod("default", "web", "u1", "app", "idle")
	return web, []*corev1.Pod{web}
}

func TestExecSPDY(t *testing.T) {
	web, pods := streamPods()
	rt := streamingRuntime(t)
	rt.addContainer(web, "app", "app-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED, "")
	rt.addContainer(web, "app", "app-1", 1, runtimeapi.ContainerState_CONTAINER_RUNNING, "")
	_, ts := testServer(t, pods, rt, allowAll)
	cfg := &rest.Config{Host: ts.URL, BearerToken: "alice"}

	tests := []struct {
		name       string
		query      string
		stdin      string
		wantStdout string
		wantStderr string
		wantCode   int // exit code; 0 for success
	}{
		{name: "stdout and stderr", query: "command=echo&command=hello&command=world&output=1&error=1",
			wantStdout: "app-1 says hello world\n", wantStderr: "a warning\n"},
		{name: "stdin", query: "command=cat&input=1&output=1", stdin: "piped in", wantStdout: "piped in"},
		{name: "exit code", query: "command=exit&output=1&error=1", wantCode: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := url.Parse(ts.URL + "/exec/default/web/app?" + tt.query)
			ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
			if strings.Contains(tt.query, "input=1") {
				opts.Stdin = strings.NewReader(tt.stdin)
			}
			if !strings.Contains(tt.query, "error=1") {
				opts.Stderr = nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = ex.StreamWithContext(ctx, opts)
			if tt.wantCode != 0 {
				var exitErr utilexec.ExitError
				if !errors.As(err, &exitErr) || exitErr.ExitStatus() != tt.wantCode {
					t.Fatalf("error %v, want exit code %d", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tt.wantStdout || stderr.String() != tt.wantStderr {
				t.Fatalf("stdout %q stderr %q, want %q and %q", stdout.String(), stderr.String(), tt.wantStdout, tt.wantStderr)
			}
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.execReqs) != 3 {
		t.Fatalf("%d exec requests reached the runtime, want 3", len(rt.execReqs))
	}
	first := rt.execReqs[0]
	if first.ContainerId != "app-1" || !slices.Equal(first.Cmd, []string{"echo", "hello", "world"}) || first.Stdin || !first.Stdout || !first.Stderr || first.Tty {
		t.Fatalf("first exec request %+v", first)
	}
}

func TestExecWebSocket(t *testing.T) {
	web, pods := streamPods()
	rt := streamingRuntime(t)
	rt.addContainer(web, "app", "app-0", 0, runtimeapi.ContainerState_CONTAINER_RUNNING, "")
	_, ts := testServer(t, pods, rt, allowAll)

	// A v5 WebSocket client is translated to SPDY towards the runtime.
	ex, err := remotecommand.NewWebSocketExecutor(&rest.Config{Host: ts.URL, BearerToken: "alice"}, "GET",
		ts.URL+"/exec/default/web/app?command=echo&command=ws&output=1&error=1")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "app-0 says ws\n" || stderr.String() != "a warning\n" {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}

	ex, err = remotecommand.NewWebSocketExecutor(&rest.Config{Host: ts.URL, BearerToken: "alice"}, "GET",
		ts.URL+"/exec/default/web/app?command=exit&output=1")
	if err != nil {
		t.Fatal(err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout})
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Fatalf("exit over WebSocket: %v", err)
	}
}

func TestAttachSPDY(t *testing.T) {
	web, pods := streamPods()
	rt := streamingRuntime(t)
	rt.addContainer(web, "app", "app-0", 0, runtimeapi.ContainerState_CONTAINER_RUNNING, "")
	_, ts := testServer(t, pods, rt, allowAll)
	u, _ := url.Parse(ts.URL + "/attach/default/web/app?input=1&output=1")
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: ts.URL, BearerToken: "alice"}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("typed"), Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "attached to app-0: typed" {
		t.Fatalf("stdout %q", stdout.String())
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.attachReqs) != 1 || rt.attachReqs[0].ContainerId != "app-0" || !rt.attachReqs[0].Stdin || !rt.attachReqs[0].Stdout || rt.attachReqs[0].Stderr {
		t.Fatalf("attach requests %+v", rt.attachReqs)
	}
}

func TestPortForward(t *testing.T) {
	web, pods := streamPods()
	rt := streamingRuntime(t)
	rt.addSandbox(web, "sb-old", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, 1)
	rt.addSandbox(web, "sb-web", runtimeapi.PodSandboxState_SANDBOX_READY, 2)
	_, ts := testServer(t, pods, rt, allowAll)
	cfg := &rest.Config{Host: ts.URL, BearerToken: "alice"}
	u, _ := url.Parse(ts.URL + "/portForward/default/web")

	dialers := []struct {
		name string
		make func() (httpstream.Dialer, error)
	}{
		{"SPDY", func() (httpstream.Dialer, error) {
			transport, upgrader, err := spdy.RoundTripperFor(cfg)
			if err != nil {
				return nil, err
			}
			return spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u), nil
		}},
		{"SPDY tunneled over WebSocket", func() (httpstream.Dialer, error) {
			return portforward.NewSPDYOverWebsocketDialer(u, cfg)
		}},
	}
	for _, d := range dialers {
		t.Run(d.name, func(t *testing.T) {
			dialer, err := d.make()
			if err != nil {
				t.Fatal(err)
			}
			stop, ready := make(chan struct{}), make(chan struct{})
			pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- pf.ForwardPorts() }()
			defer func() {
				close(stop)
				if err := <-done; err != nil {
					t.Errorf("ForwardPorts: %v", err)
				}
			}()
			select {
			case <-ready:
			case err := <-done:
				done <- err
				t.Fatalf("port forward ended before it was ready: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatal("port forward not ready")
			}
			ports, err := pf.GetPorts()
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := conn.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "sb-web:8080:ping" {
				t.Fatalf("got %q", got)
			}
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, r := range rt.pfReqs {
		if r.PodSandboxId != "sb-web" || len(r.Port) != 0 {
			t.Fatalf("port forward request %+v", r)
		}
	}
	if len(rt.pfReqs) != 2 {
		t.Fatalf("%d port forward requests, want 2", len(rt.pfReqs))
	}
}

// recorder is a streaming server that records the requests it gets and
// refuses them.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, r.Clone(context.Background()))
	rec.mu.Unlock()
	http.Error(w, "the runtime saw it", http.StatusBadRequest)
}

func TestStreamingRequests(t *testing.T) {
	rec := &recorder{}
	backend := httptest.NewServer(rec)
	defer backend.Close()

	web := newPod("default", "web", "u1", "app", "idle")
	web.Spec.Containers = append(web.Spec.Containers, corev1.Container{Name: "term", TTY: true})
	nosb := newPod("default", "nosb", "u2", "app")
	rt := &fakeRuntime{
		exec: func(req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
			switch req.ContainerId {
			case "gone-0":
				return nil, status.Error(codes.NotFound, "container is gone")
			case "busy-0":
				return nil, status.Error(codes.ResourceExhausted, "maximum number of in-flight requests exceeded")
			case "rel-0":
				return &runtimeapi.ExecResponse{Url: "/exec/relative"}, nil
			}
			return &runtimeapi.ExecResponse{Url: backend.URL + "/exec/tok-" + req.ContainerId}, nil
		},
		attach: func(req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
			return &runtimeapi.AttachResponse{Url: backend.URL + "/attach/tok-" + req.ContainerId}, nil
		},
		portForward: func(req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
			return &runtimeapi.PortForwardResponse{Url: backend.URL + "/portforward/tok-" + req.PodSandboxId}, nil
		},
	}
	for _, c := range []string{"app", "term", "gone", "busy", "rel"} {
		rt.addContainer(web, c, c+"-0", 0, runtimeapi.ContainerState_CONTAINER_RUNNING, "")
	}
	rt.addContainer(web, "idle", "idle-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED, "")
	rt.addSandbox(web, "sb-web", runtimeapi.PodSandboxState_SANDBOX_READY, 1)
	_, ts := testServer(t, []*corev1.Pod{web, nosb}, rt, allowAll)

	spdy := map[string]string{"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "v4.channel.k8s.io"}
	ws := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-Websocket-Version": "13", "Sec-Websocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	tests := []struct {
		name        string
		method      string
		path        string
		headers     map[string]string
		wantCode    int
		wantBody    string
		wantBackend string // path the runtime's server saw
	}{
		{name: "exec reaches the runtime", method: "POST", path: "/exec/default/web/app?command=ls&output=1", headers: spdy,
			wantCode: 400, wantBody: "the runtime saw it", wantBackend: "/exec/tok-app-0"},
		{name: "exec with the pod's UID", method: "GET", path: "/exec/default/web/u1/app?command=ls&output=1", headers: spdy,
			wantCode: 400, wantBody: "the runtime saw it", wantBackend: "/exec/tok-app-0"},
		{name: "attach reaches the runtime", method: "POST", path: "/attach/default/web/term?output=1", headers: spdy,
			wantCode: 400, wantBody: "the runtime saw it", wantBackend: "/attach/tok-term-0"},
		{name: "port forward reaches the runtime", method: "POST", path: "/portForward/default/web", headers: spdy,
			wantCode: 400, wantBody: "the runtime saw it", wantBackend: "/portforward/tok-sb-web"},
		{name: "websocket port forward with ports", method: "GET", path: "/portForward/default/web?port=80,443", headers: ws,
			wantCode: 400, wantBody: "the runtime saw it", wantBackend: "/portforward/tok-sb-web"},

		{name: "exec without streams", method: "POST", path: "/exec/default/web/app?command=ls", headers: spdy,
			wantCode: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "exec tty without other streams", method: "POST", path: "/exec/default/web/app?command=ls&tty=1&error=1", headers: spdy,
			wantCode: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "exec in an unknown pod", method: "POST", path: "/exec/default/nope/app?command=ls&output=1", headers: spdy,
			wantCode: 404, wantBody: "pod does not exist"},
		{name: "exec with another UID", method: "POST", path: "/exec/default/web/u9/app?command=ls&output=1", headers: spdy,
			wantCode: 404, wantBody: "pod not found"},
		{name: "exec in a stopped container", method: "POST", path: "/exec/default/web/idle?command=ls&output=1", headers: spdy,
			wantCode: 500, wantBody: `container not found ("idle")`},
		{name: "exec the runtime cannot find", method: "POST", path: "/exec/default/web/gone?command=ls&output=1", headers: spdy,
			wantCode: 404, wantBody: "container is gone"},
		{name: "exec the runtime is too busy for", method: "POST", path: "/exec/default/web/busy?command=ls&output=1", headers: spdy,
			wantCode: 429, wantBody: "in-flight"},
		{name: "runtime URL not absolute", method: "POST", path: "/exec/default/web/rel?command=ls&output=1", headers: spdy,
			wantCode: 500, wantBody: "not an absolute URL"},
		{name: "exec without upgrade", method: "POST", path: "/exec/default/web/app?command=ls&output=1",
			wantCode: 500, wantBody: "Upgrade request required"},
		{name: "attach to a container not in the spec", method: "POST", path: "/attach/default/web/nope?output=1", headers: spdy,
			wantCode: 500, wantBody: "container nope not found in pod web_default"},
		{name: "port forward without a sandbox", method: "POST", path: "/portForward/default/nosb", headers: spdy,
			wantCode: 500, wantBody: "failed to find sandboxID for pod nosb_default(u2)"},
		{name: "websocket port forward without ports", method: "GET", path: "/portForward/default/web", headers: ws,
			wantCode: 400, wantBody: `query parameter "port" is required`},
		{name: "websocket port forward with a bad port", method: "GET", path: "/portForward/default/web?port=http", headers: ws,
			wantCode: 400, wantBody: `unable to parse "http" as a port`},
		{name: "websocket port forward with port 0", method: "GET", path: "/portForward/default/web?port=0", headers: ws,
			wantCode: 400, wantBody: `port "0" must be > 0`},
		{name: "exec with PUT", method: "PUT", path: "/exec/default/web/app?command=ls&output=1", headers: spdy, wantCode: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.mu.Lock()
			rec.reqs = nil
			rec.mu.Unlock()
			req, err := http.NewRequest(tt.method, ts.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer alice")
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			// An upgrade's connection is hijacked and closed after the
			// answer: never reuse it.
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if tt.wantBackend == "" {
				if len(rec.reqs) != 0 {
					t.Fatalf("the runtime's server was called: %s", rec.reqs[0].URL)
				}
				return
			}
			if len(rec.reqs) != 1 {
				t.Fatalf("the runtime's server got %d requests, want 1", len(rec.reqs))
			}
			got := rec.reqs[0]
			if got.URL.Path != tt.wantBackend || got.Method != tt.method {
				t.Fatalf("runtime saw %s %s, want %s %s", got.Method, got.URL.Path, tt.method, tt.wantBackend)
			}
			for k, v := range tt.headers {
				if got.Header.Get(k) != v {
					t.Errorf("runtime saw %s %q, want %q", k, got.Header.Get(k), v)
				}
			}
			if got.Header.Get("Authorization") != "" {
				t.Errorf("the client's credentials reached the runtime")
			}
		})
	}

	rt.mu.Lock()
	defer rt.mu.Unlock()
	// Attach takes the terminal setting from the container spec.
	if len(rt.attachReqs) != 1 || !rt.attachReqs[0].Tty || rt.attachReqs[0].ContainerId != "term-0" {
		t.Fatalf("attach requests %+v", rt.attachReqs)
	}
	var wsPorts []int32
	for _, r := range rt.pfReqs {
		if len(r.Port) > 0 {
			wsPorts = r.Port
		}
	}
	if !slices.Equal(wsPorts, []int32{80, 443}) {
		t.Fatalf("websocket port forward asked for ports %v, want [80 443]", wsPorts)
	}
}
