// Package tunnel lets the apiserver reach a node's agent API (:10250)
// through a connection the agent opened to the server, for agents the
// server cannot dial (behind NAT, say): k3s's design, on
// github.com/hashicorp/yamux.
//
// The agent sends `GET /v1-k1s/connect` with `Upgrade: k1s-tunnel` over
// HTTP/1.1, authenticated as its node (system:node:<name>, its client
// certificate); the server answers 101 and takes the connection over as a
// yamux session in which it opens streams, each one connection to the
// agent's API, which the agent relays to its own 127.0.0.1:<agent port>
// and nowhere else. TLS between the apiserver and the agent API runs end
// to end inside the stream, verified as on a direct connection.
//
// Server side: Registry keeps one session per node and Dialer dials an
// agent address directly, falling back to the node's tunnel when the
// direct dial fails (and using the tunnel at once for a while after such
// a failure). Agent side: Client keeps the tunnel open, reconnecting;
// Pool keeps one Client per server of a changing list (k3s's agent keeps
// a tunnel to every server), so that whichever apiserver handles a
// request for the node's API reaches it.
package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// Path is the server's tunnel endpoint.
const Path = "/v1-k1s/connect"

// upgrade is the protocol named in the Upgrade header.
const upgrade = "k1s-tunnel"

const nodeUserPrefix = "system:node:"

func yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.EnableKeepAlive = true
	c.KeepAliveInterval = 15 * time.Second
	c.ConnectionWriteTimeout = 10 * time.Second
	c.LogOutput = io.Discard
	return c
}

// Registry holds the nodes' tunnels. Safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*yamux.Session
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{sessions: map[string]*yamux.Session{}}
}

// ServeHTTP takes a node's tunnel request over: the authenticated user
// must be a node (system:node:<name>); a new tunnel of a node replaces its
// old one.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	user, ok := request.UserFrom(req.Context())
	if !ok || !strings.HasPrefix(user.GetName(), nodeUserPrefix) {
		http.Error(w, "only a node may open a tunnel", http.StatusForbidden)
		return
	}
	node := strings.TrimPrefix(user.GetName(), nodeUserPrefix)
	if !strings.EqualFold(req.Header.Get("Upgrade"), upgrade) {
		http.Error(w, "Upgrade: "+upgrade+" required", http.StatusBadRequest)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "the connection cannot be taken over (HTTP/1.1 required)", http.StatusBadRequest)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		klog.FromContext(req.Context()).Error(err, "Cannot take over a tunnel connection", "node", node)
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "+upgrade+"\r\nConnection: Upgrade\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	var rw io.ReadWriteCloser = conn
	if buf != nil && buf.Reader.Buffered() > 0 {
		rw = &bufferedConn{Conn: conn, r: io.MultiReader(buf.Reader, conn)}
	}
	session, err := yamux.Client(rw, yamuxConfig())
	if err != nil {
		conn.Close()
		return
	}
	r.mu.Lock()
	old := r.sessions[node]
	r.sessions[node] = session
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	klog.FromContext(req.Context()).V(2).Info("Node tunnel open", "node", node, "remote", req.RemoteAddr)
	go func() {
		<-session.CloseChan()
		r.mu.Lock()
		if r.sessions[node] == session {
			delete(r.sessions, node)
		}
		r.mu.Unlock()
		klog.Background().V(2).Info("Node tunnel closed", "node", node)
	}()
}

type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// Open opens a stream to the node's agent API, if the node has a tunnel.
func (r *Registry) Open(node string) (net.Conn, bool) {
	r.mu.Lock()
	s := r.sessions[node]
	r.mu.Unlock()
	if s == nil {
		return nil, false
	}
	c, err := s.Open()
	if err != nil {
		return nil, false
	}
	return c, true
}

// Has reports whether the node has a tunnel open.
func (r *Registry) Has(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[node] != nil
}

// Close closes every tunnel.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, s := range r.sessions {
		s.Close()
		delete(r.sessions, n)
	}
}

// Dialer dials agent addresses: directly, or through the node's tunnel
// when the direct dial fails. NodeOf names the node an address belongs to
// (the caller learns it when it resolves a node to its address).
type Dialer struct {
	Registry *Registry
	// Direct dials directly. Default: a net.Dialer.
	Direct func(ctx context.Context, network, addr string) (net.Conn, error)
	// DirectTimeout bounds a direct dial when the node has a tunnel to
	// fall back on. Default 1s.
	DirectTimeout time.Duration
	// Remember is how long a node whose direct dial failed is reached
	// through its tunnel at once. Default 5m.
	Remember time.Duration

	mu       sync.Mutex
	nodeOf   map[string]string    // address → node
	indirect map[string]time.Time // node → until when to use the tunnel at once
	now      func() time.Time
}

// Learn records that addr is node's agent address.
func (d *Dialer) Learn(addr, node string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nodeOf == nil {
		d.nodeOf = map[string]string{}
	}
	d.nodeOf[addr] = node
}

func (d *Dialer) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// DialContext dials addr, falling back to the tunnel of the node it
// belongs to.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	direct := d.Direct
	if direct == nil {
		direct = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	d.mu.Lock()
	node := d.nodeOf[addr]
	until := d.indirect[node]
	d.mu.Unlock()
	hasTunnel := node != "" && d.Registry != nil && d.Registry.Has(node)
	if !hasTunnel {
		return direct(ctx, network, addr)
	}
	if d.clock().Before(until) {
		if c, ok := d.Registry.Open(node); ok {
			return c, nil
		}
	}
	timeout := d.DirectTimeout
	if timeout == 0 {
		timeout = time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	c, err := direct(dctx, network, addr)
	cancel()
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	t, ok := d.Registry.Open(node)
	if !ok {
		return nil, err
	}
	remember := d.Remember
	if remember == 0 {
		remember = 5 * time.Minute
	}
	d.mu.Lock()
	if d.indirect == nil {
		d.indirect = map[string]time.Time{}
	}
	d.indirect[node] = d.clock().Add(remember)
	d.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Agent not reachable directly; using its tunnel", "node", node, "address", addr, "err", err)
	return t, nil
}

// Client is the agent's side: it keeps a tunnel to the server open and
// relays each stream the server opens to Target.
type Client struct {
	// Server is the server's URL (https://host:port).
	Server string
	// TLSConfig verifies the server and presents the node's client
	// certificate (GetClientCertificate, for a renewed one); HTTP/1.1 is
	// forced.
	TLSConfig *tls.Config
	// Target is the agent API's local address, e.g. 127.0.0.1:10250.
	Target string
}

// Run keeps the tunnel open until ctx ends, reconnecting after 1 s, then
// up to 30 s between attempts while they fail.
func (c *Client) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("tunnel")
	delay := time.Second
	for {
		start := time.Now()
		err := c.serve(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > time.Minute {
			delay = time.Second
		}
		logger.V(2).Info("Tunnel to the server closed; reconnecting", "server", c.Server, "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

func (c *Client) serve(ctx context.Context) error {
	conn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	session, err := yamux.Server(conn, yamuxConfig())
	if err != nil {
		conn.Close()
		return err
	}
	defer session.Close()
	stop := context.AfterFunc(ctx, func() { session.Close() })
	defer stop()
	klog.FromContext(ctx).V(2).Info("Tunnel to the server open", "server", c.Server)
	for {
		stream, err := session.Accept()
		if err != nil {
			return err
		}
		go c.relay(stream)
	}
}

func (c *Client) relay(stream net.Conn) {
	defer stream.Close()
	local, err := net.DialTimeout("tcp", c.Target, 5*time.Second)
	if err != nil {
		return
	}
	defer local.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(local, stream)
		if tc, ok := local.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(stream, local)
	_ = stream.Close()
	<-done
}

// Pool keeps a tunnel to each server of a changing list: one Client per
// server, started when the server appears and stopped when it leaves.
// Run once.
type Pool struct {
	// Servers returns the servers to keep a tunnel to (host:port) and a
	// channel closed when they change (apiservers.Balancer.Servers).
	Servers func() ([]string, <-chan struct{})
	// TLSConfig and Target are each Client's; the TLS server name is
	// each server's host unless TLSConfig names one.
	TLSConfig *tls.Config
	Target    string
}

// Run keeps the tunnels open until ctx ends; it returns nil then.
func (p *Pool) Run(ctx context.Context) error {
	type running struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	active := map[string]running{}
	stop := func(server string) {
		r := active[server]
		r.cancel()
		<-r.done
		delete(active, server)
	}
	defer func() {
		for s := range active {
			stop(s)
		}
	}()
	for {
		servers, changed := p.Servers()
		want := map[string]bool{}
		for _, s := range servers {
			want[s] = true
		}
		for s := range active {
			if !want[s] {
				stop(s)
			}
		}
		for s := range want {
			if _, ok := active[s]; ok {
				continue
			}
			cctx, cancel := context.WithCancel(ctx)
			r := running{cancel: cancel, done: make(chan struct{})}
			active[s] = r
			c := &Client{Server: "https://" + s, TLSConfig: p.TLSConfig, Target: p.Target}
			go func() {
				defer close(r.done)
				_ = c.Run(cctx)
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// ErrRefused is returned when the server answers the tunnel request with
// something other than 101.
var ErrRefused = errors.New("the server refused the tunnel")

func (c *Client) connect(ctx context.Context) (net.Conn, error) {
	u, err := url.Parse(c.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server %q is not an https:// URL", c.Server)
	}
	cfg := c.TLSConfig.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", u.Host, err)
	}
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	req, _ := http.NewRequest(http.MethodGet, "https://"+u.Host+Path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", upgrade)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("tunnel response: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		conn.Close()
		return nil, fmt.Errorf("%w: %s: %s", ErrRefused, resp.Status, strings.TrimSpace(string(body)))
	}
	_ = conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: io.MultiReader(br, conn)}, nil
	}
	return conn, nil
}
