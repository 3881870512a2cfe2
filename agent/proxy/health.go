package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// healthCheck is what one health-check node port reports.
type healthCheck struct {
	service        types.NamespacedName
	localEndpoints int
}

// healthServer serves the proxy's own /healthz and /livez, and one
// listener per health-check node port of the externalTrafficPolicy: Local
// load-balancers, which answers 200 while the node has a ready endpoint of
// the Service and 503 otherwise (kube-proxy's responses), so that a load
// balancer sends traffic only to nodes that keep it.
type healthServer struct {
	cfg    Config
	proxy  *Proxy
	mu     sync.Mutex
	checks map[int32]*nodePortCheck
	ctx    context.Context
}

type nodePortCheck struct {
	mu     sync.Mutex
	hc     healthCheck
	server *http.Server
}

func newHealthServer(cfg Config, p *Proxy) (*healthServer, error) {
	return &healthServer{cfg: cfg, proxy: p, checks: map[int32]*nodePortCheck{}}, nil
}

// run serves /healthz until ctx ends, then closes every listener.
func (h *healthServer) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	var srv *http.Server
	if h.cfg.HealthzBindAddress != "-" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", h.serveHealthz)
		mux.HandleFunc("/livez", h.serveHealthz)
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		ln, err := net.Listen("tcp", h.cfg.HealthzBindAddress)
		if err != nil {
			logger.Error(err, "Service proxy health endpoint not served", "address", h.cfg.HealthzBindAddress)
			srv = nil
		} else {
			go func() { _ = srv.Serve(ln) }()
		}
	}
	<-ctx.Done()
	if srv != nil {
		_ = srv.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for port, c := range h.checks {
		_ = c.server.Close()
		delete(h.checks, port)
	}
}

func (h *healthServer) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	last, current := h.proxy.lastSynced()
	now := h.proxy.clock.Now()
	healthy := !last.IsZero() && (current || now.Sub(last) < 2*h.cfg.SyncPeriod)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"lastUpdated": last.Format(time.RFC3339Nano),
		"currentTime": now.Format(time.RFC3339Nano),
		"nodeHealthy": healthy,
	})
}

// update opens and closes health-check node ports to match checks.
func (h *healthServer) update(checks map[int32]healthCheck) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil || h.ctx.Err() != nil {
		return
	}
	logger := klog.FromContext(h.ctx)
	for port, c := range h.checks {
		if _, ok := checks[port]; !ok {
			_ = c.server.Close()
			delete(h.checks, port)
		}
	}
	for port, hc := range checks {
		if c, ok := h.checks[port]; ok {
			c.mu.Lock()
			c.hc = hc
			c.mu.Unlock()
			continue
		}
		c := &nodePortCheck{hc: hc}
		c.server = &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second}
		lns, err := h.listen(port)
		if err != nil {
			logger.Error(err, "Health-check node port not served", "service", hc.service, "port", port)
			continue
		}
		for _, ln := range lns {
			go func() {
				if err := c.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					logger.Error(err, "Health-check node port stopped", "port", port)
				}
			}()
		}
		h.checks[port] = c
	}
}

func (h *healthServer) listen(port int32) ([]net.Listener, error) {
	addrs := []string{":" + strconv.Itoa(int(port))}
	if len(h.cfg.HealthCheckBindIPs) > 0 {
		addrs = nil
		for _, ip := range h.cfg.HealthCheckBindIPs {
			addrs = append(addrs, net.JoinHostPort(ip.String(), strconv.Itoa(int(port))))
		}
	}
	var out []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range out {
				_ = l.Close()
			}
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		out = append(out, ln)
	}
	return out, nil
}

// ServeHTTP answers kube-proxy's health-check response.
func (c *nodePortCheck) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	hc := c.hc
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if hc.localEndpoints == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"service":             map[string]string{"namespace": hc.service.Namespace, "name": hc.service.Name},
		"localEndpoints":      hc.localEndpoints,
		"serviceProxyHealthy": true,
	})
}
