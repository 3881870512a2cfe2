package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// PodSource lists the pods this node runs, as the agent runs them: static
// pods with their own UID, not their mirror pods. Safe for concurrent use.
type PodSource interface {
	GetPods() []*corev1.Pod
}

// PodsFunc adapts a function to PodSource.
type PodsFunc func() []*corev1.Pod

// GetPods calls f.
func (f PodsFunc) GetPods() []*corev1.Pod { return f() }

// Runtime is the part of the CRI runtime service the API uses: finding
// containers and sandboxes by their labels, reading log paths, and asking
// for streaming URLs. The remote CRI client satisfies it. Safe for
// concurrent use.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// Deps are the handles the API serves from.
type Deps struct {
	// Pods lists the node's pods. Required.
	Pods PodSource
	// Runtime is the CRI runtime. Required.
	Runtime Runtime
	// KubeClient reviews bearer tokens (TokenReview) and authorizes
	// requests (SubjectAccessReview). Required.
	KubeClient kubernetes.Interface
	// HealthChecks are added to /healthz (see healthz.NamedCheck); a ping
	// check is always there.
	HealthChecks []healthz.HealthChecker
	// Metrics serves /metrics. Nil: /metrics is not found.
	Metrics http.Handler
	// Stats serves /stats/summary. Nil: /stats/ answers 501.
	Stats StatsProvider
	// MetricsResource, MetricsCadvisor and MetricsProbes serve
	// /metrics/resource, /metrics/cadvisor and /metrics/probes. Nil: not
	// found.
	MetricsResource, MetricsCadvisor, MetricsProbes http.Handler
}

// Server is the agent API. Run serves it.
type Server struct {
	cfg     Config
	pods    PodSource
	runtime Runtime
	authn   authenticator.Request
	authz   authorizer.Authorizer
	checks  []healthz.HealthChecker
	metrics http.Handler
	clock   clock.Clock

	stats                                           StatsProvider
	metricsResource, metricsCadvisor, metricsProbes http.Handler

	// certificate files, reloaded while Run runs; nil in tests that
	// serve handlers directly.
	clientCA *dynamiccertificates.DynamicFileCAContent
	serving  *servingCert

	ready     chan struct{}
	readyOnce sync.Once
}

// New validates cfg, reads the certificate files and builds the
// authenticator and authorizer. It starts nothing.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.KubeClient == nil {
		return nil, errors.New("agent API: no Kubernetes client for token and access reviews")
	}
	serving, err := newServingCert(cfg.TLSCertFile, cfg.TLSPrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
	}
	var clientCA *dynamiccertificates.DynamicFileCAContent
	if cfg.ClientCAFile != "" {
		clientCA, err = dynamiccertificates.NewDynamicCAContentFromFile("agent-client-ca", cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
	}
	authn, authz, err := delegatingAuth(cfg, deps.KubeClient, clientCA)
	if err != nil {
		return nil, err
	}
	s, err := newServer(cfg, deps, authn, authz)
	if err != nil {
		return nil, err
	}
	s.clientCA, s.serving = clientCA, serving
	return s, nil
}

// newServer assembles a server around the given authenticator and
// authorizer; cfg must have its defaults.
func newServer(cfg Config, deps Deps, authn authenticator.Request, authz authorizer.Authorizer) (*Server, error) {
	if deps.Pods == nil {
		return nil, errors.New("agent API: no pod source")
	}
	if deps.Runtime == nil {
		return nil, errors.New("agent API: no container runtime")
	}
	checks := append([]healthz.HealthChecker{healthz.PingHealthz}, deps.HealthChecks...)
	return &Server{
		cfg:     cfg,
		pods:    deps.Pods,
		runtime: deps.Runtime,
		authn:   authn,
		authz:   authz,
		checks:  checks,
		metrics: deps.Metrics,
		clock:   clock.RealClock{},

		stats:           deps.Stats,
		metricsResource: deps.MetricsResource,
		metricsCadvisor: deps.MetricsCadvisor,
		metricsProbes:   deps.MetricsProbes,

		ready: make(chan struct{}),
	}, nil
}

// Ready is closed once every listener is bound.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run listens and serves until ctx ends, then shuts the listeners down,
// waiting up to ShutdownTimeout for requests in flight (requests get ctx's
// cancellation, so log follows end at once). It returns nil after a clean
// shutdown and the first serving error otherwise.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if s.serving == nil {
		return errors.New("agent API: no serving certificate (build the server with New)")
	}
	type listener struct {
		name string
		l    net.Listener
		srv  *http.Server
	}
	var ls []listener
	closeAll := func() {
		for _, l := range ls {
			l.l.Close()
		}
	}
	add := func(name, host string, port int, handler http.Handler, tlsConfig *tls.Config) error {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen for the agent %s on %s: %w", name, addr, err)
		}
		if tlsConfig != nil {
			l = tls.NewListener(l, tlsConfig)
		}
		ls = append(ls, listener{name: name, l: l, srv: s.httpServer(ctx, handler)})
		logger.Info("Agent API listening", "listener", name, "address", l.Addr().String())
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.serving.content.Run(ctx, 1)
	if s.clientCA != nil {
		go s.clientCA.Run(ctx, 1)
	}
	if err := add("API", s.cfg.Address, s.cfg.Port, s.secureHandler(), s.tlsConfig()); err != nil {
		return err
	}
	if s.cfg.HealthzPort > 0 {
		if err := add("health endpoint", s.cfg.HealthzAddress, s.cfg.HealthzPort, s.healthzHandler(), nil); err != nil {
			closeAll()
			return err
		}
	}
	if s.cfg.ReadOnlyPort > 0 {
		if err := add("read-only API", s.cfg.Address, s.cfg.ReadOnlyPort, s.readOnlyHandler(), nil); err != nil {
			closeAll()
			return err
		}
	}

	errs := make(chan error, len(ls))
	for _, l := range ls {
		go func() {
			err := l.srv.Serve(l.l)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			} else if err != nil {
				err = fmt.Errorf("agent %s: %w", l.name, err)
			}
			errs <- err
		}()
	}
	s.readyOnce.Do(func() { close(s.ready) })

	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
		if first == nil {
			first = errors.New("agent API: a listener stopped")
		}
		cancel()
	}
	shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer done()
	for _, l := range ls {
		if err := l.srv.Shutdown(shutdownCtx); err != nil {
			l.srv.Close()
		}
	}
	return first
}

func (s *Server) httpServer(ctx context.Context, h http.Handler) *http.Server {
	logger := klog.FromContext(ctx)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// TLS handshake failures and the like are noise at the default level.
		ErrorLog: log.New(logWriter{logger.V(4)}, "", 0),
	}
}

// logWriter sends the http server's own messages to a klog logger.
type logWriter struct{ logger klog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.Info("Agent API server message", "msg", string(p))
	return len(p), nil
}

// tlsConfig asks clients for a certificate without requiring one: bearer
// tokens authenticate too, and the x509 authenticator verifies the chain.
// HTTP/2 is not offered: streaming upgrades need HTTP/1.1.
func (s *Server) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		ClientAuth:     tls.RequestClientCert,
		GetCertificate: s.serving.get,
		NextProtos:     []string{"http/1.1"},
	}
}

// servingCert is the serving certificate, parsed again whenever its
// files change.
type servingCert struct {
	content *dynamiccertificates.DynamicCertKeyPairContent
	cur     atomic.Pointer[tls.Certificate]
}

func newServingCert(certFile, keyFile string) (*servingCert, error) {
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("agent-serving-cert", certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c := &servingCert{content: content}
	if err := c.load(); err != nil {
		return nil, err
	}
	content.AddListener(c)
	return c, nil
}

func (c *servingCert) load() error {
	certPEM, keyPEM := c.content.CurrentCertKeyContent()
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	c.cur.Store(&cert)
	return nil
}

// Enqueue is called by the file watcher when the files changed.
func (c *servingCert) Enqueue() {
	if err := c.load(); err != nil {
		klog.Background().Error(err, "Keeping the previous agent serving certificate")
	}
}

func (c *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// Paths of the API.
const (
	healthzPath       = "/healthz"
	podsPath          = "/pods"
	statsPath         = "/stats/"
	metricsPath       = "/metrics"
	logsPath          = "/logs/"
	checkpointPath    = "/checkpoint/"
	configzPath       = "/configz"
	runningPodsPath   = "/runningpods/"
	statuszPath       = "/statusz"
	flagzPath         = "/flagz"
	containerLogsPath = "/containerLogs/"
)

// secureHandler is the main listener's: everything, behind authentication
// and authorization.
func (s *Server) secureHandler() http.Handler {
	mux := http.NewServeMux()
	s.installReadOnly(mux)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.serveContainerLogs)
	for _, method := range []string{"GET", "POST"} {
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", s.serveExec)
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{uid}/{container}", s.serveExec)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{container}", s.serveAttach)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{uid}/{container}", s.serveAttach)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.servePortForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", s.servePortForward)
	}
	return s.withAuth(mux)
}

// readOnlyHandler is the read-only port's: no authentication, no logs, no
// streaming.
func (s *Server) readOnlyHandler() http.Handler {
	mux := http.NewServeMux()
	s.installReadOnly(mux)
	return mux
}

// healthzHandler is the health listener's.
func (s *Server) healthzHandler() http.Handler {
	mux := http.NewServeMux()
	healthz.InstallHandler(mux, s.checks...)
	return mux
}

func (s *Server) installReadOnly(mux *http.ServeMux) {
	healthz.InstallHandler(mux, s.checks...)
	mux.HandleFunc("GET "+podsPath, s.servePods)
	s.installStats(mux)
	if s.metrics != nil {
		mux.Handle(metricsPath, s.metrics)
	}
}

// writeText writes a plain-text response.
func writeText(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}
