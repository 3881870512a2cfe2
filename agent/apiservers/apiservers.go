// Package apiservers keeps the list of the cluster's API servers a joined
// node knows and dials them in turn, so that the node's clients fail over
// when the server they use stops: k3s's agent load balancer, in process.
//
// k3s runs a TCP proxy on 127.0.0.1:6444 that the kubelet's and
// containerd's kubeconfigs point at, because those are other programs. A
// k1s node is one process, so the same job is a dialer under its clients'
// transport: no port to allocate (two agents on one machine need no
// setting), no copy through a proxy. The node's clients address Host,
// "https://kubernetes"; Balancer.DialContext ignores the address it is
// asked for and connects to the current server or, when that fails, to
// the next one, which becomes current. TLS runs end to end over that
// connection and verifies the server's certificate against the cluster's
// server CA for the name "kubernetes", which every k1s apiserver's
// certificate carries (internal/pki), whichever server answers.
//
// The list is what the apiservers publish in the `kubernetes`
// EndpointSlice of the default namespace (every running apiserver's
// advertised address and port; Watch follows it), with the first contact
// (--server) tried last when it is not among them (a name or a virtual
// address in front of the servers). It is kept in a file, so that a node
// restarting while its first contact is down finds another server.
package apiservers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/pki"
)

// Host is the URL the node's clients give for the cluster's API servers;
// the Balancer's dialer connects it to one of them. Its host is the TLS
// server name every k1s apiserver's certificate carries.
const Host = "https://" + ServerName

// ServerName is the name the node verifies every apiserver's certificate
// for.
const ServerName = "kubernetes"

// Config configures a Balancer.
type Config struct {
	// Default is the first contact, host:port (--server's). Required.
	Default string
	// File keeps the list between runs (<data-dir>/agent/apiservers.json).
	// Default: none kept. A file written for another first contact is
	// ignored (the node was pointed at another cluster or server); an
	// unreadable one too (it is only a hint, rewritten at the next change).
	File string
	// DialTimeout bounds the attempt to connect to one server. Default 5s.
	DialTimeout time.Duration
}

// Balancer dials the current API server, failing over to the others.
// Safe for concurrent use.
type Balancer struct {
	cfg    Config
	dialer net.Dialer

	mu      sync.Mutex
	servers []string // learnt, in their order
	current string
	conns   map[string]map[*conn]struct{}
	changed chan struct{} // closed, and replaced, when servers change
}

// New validates cfg and loads the list kept in cfg.File.
func New(cfg Config) (*Balancer, error) {
	if _, _, err := net.SplitHostPort(cfg.Default); err != nil {
		return nil, fmt.Errorf("--server: %q: %w", cfg.Default, err)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	b := &Balancer{
		cfg:     cfg,
		dialer:  net.Dialer{KeepAlive: 30 * time.Second},
		current: cfg.Default,
		conns:   map[string]map[*conn]struct{}{},
		changed: make(chan struct{}),
	}
	if cfg.File != "" {
		if k, err := load(cfg.File); err == nil && k.Default == cfg.Default && len(k.Servers) > 0 {
			b.servers = k.Servers
			// The first contact, no longer listed when the list was
			// kept, is likely down: start with a listed server.
			if !slices.Contains(k.Servers, cfg.Default) {
				b.current = k.Servers[0]
			}
		}
	}
	return b, nil
}

// HostPort is the host:port of an https URL (port 443 when it names none).
func HostPort(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return "", fmt.Errorf("%q is not an https:// URL", server)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// kept is the file's content.
type kept struct {
	Default string   `json:"default"`
	Servers []string `json:"servers"`
}

func load(file string) (kept, error) {
	var k kept
	b, err := os.ReadFile(file)
	if err != nil {
		return k, err
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return k, err
	}
	for _, s := range k.Servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return kept{}, err
		}
	}
	return k, nil
}

// Servers returns the servers the node knows, host:port, in their order
// (the first contact alone until the list is learnt), and a channel
// closed when they change.
func (b *Balancer) Servers() ([]string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.servers) == 0 {
		return []string{b.cfg.Default}, b.changed
	}
	return slices.Clone(b.servers), b.changed
}

// Current is the server new connections try first.
func (b *Balancer) Current() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current
}

// Set makes servers (host:port) the list, keeps it in the file, and
// closes the connections to servers no longer listed (a stopped server's
// are usually closed already; a server cut off would hold them until
// HTTP/2's health check gives up on them). An empty list is ignored: no
// apiserver lists itself only while they all restart.
func (b *Balancer) Set(ctx context.Context, servers []string) {
	if len(servers) == 0 {
		return
	}
	servers = slices.Clone(servers)
	b.mu.Lock()
	if slices.Equal(servers, b.servers) {
		b.mu.Unlock()
		return
	}
	var stale []*conn
	for _, old := range b.servers {
		if !slices.Contains(servers, old) {
			for c := range b.conns[old] {
				stale = append(stale, c)
			}
		}
	}
	// A server no longer listed is no longer current; a first contact
	// never listed (a name in front of the servers) stays current while
	// it answers.
	if slices.Contains(b.servers, b.current) && !slices.Contains(servers, b.current) {
		b.current = servers[0]
	}
	b.servers = servers
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()

	logger := klog.FromContext(ctx)
	logger.Info("API servers", "servers", servers)
	for _, c := range stale {
		_ = c.Close()
	}
	if b.cfg.File != "" {
		data, err := json.Marshal(kept{Default: b.cfg.Default, Servers: servers})
		if err == nil {
			err = pki.WriteFileAtomic(b.cfg.File, data, 0o600)
		}
		if err != nil {
			logger.Error(err, "Cannot keep the list of API servers", "file", b.cfg.File)
		}
	}
}

// order is the servers to try: the current one, then the others listed
// after it and before it, the first contact last when it is not listed.
func (b *Balancer) order() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := slices.Clone(b.servers)
	if !slices.Contains(all, b.cfg.Default) {
		all = append(all, b.cfg.Default)
	}
	i := slices.Index(all, b.current)
	if i < 0 {
		return append([]string{b.current}, all...)
	}
	return append(all[i:], all[:i]...)
}

// ErrNoServer is returned when no API server accepts a connection.
var ErrNoServer = errors.New("no API server answers")

// DialContext connects to an API server, whatever addr says: the current
// one or, failing that, each of the others in turn (each attempt within
// Config.DialTimeout); the first that answers becomes current.
func (b *Balancer) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var errs []error
	for _, server := range b.order() {
		if ctx.Err() != nil {
			break
		}
		dctx, cancel := context.WithTimeout(ctx, b.cfg.DialTimeout)
		c, err := b.dialer.DialContext(dctx, network, server)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return b.use(ctx, server, c), nil
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: %w", ErrNoServer, errors.Join(errs...))
}

// use records c as a connection to server, which becomes current.
func (b *Balancer) use(ctx context.Context, server string, nc net.Conn) net.Conn {
	c := &conn{Conn: nc, b: b, server: server}
	b.mu.Lock()
	prev := b.current
	b.current = server
	if b.conns[server] == nil {
		b.conns[server] = map[*conn]struct{}{}
	}
	b.conns[server][c] = struct{}{}
	b.mu.Unlock()
	if prev != server {
		klog.FromContext(ctx).Info("Switched API server", "from", prev, "to", server)
	}
	return c
}

// conn is a connection to a server, forgotten when closed.
type conn struct {
	net.Conn
	b      *Balancer
	server string
	once   sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.b.mu.Lock()
		delete(c.b.conns[c.server], c)
		if len(c.b.conns[c.server]) == 0 {
			delete(c.b.conns, c.server)
		}
		c.b.mu.Unlock()
	})
	return c.Conn.Close()
}
