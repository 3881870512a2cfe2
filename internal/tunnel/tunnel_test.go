package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// agentAPI answers each line it reads with "agent:" and the line.
func agentAPI(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, "agent:"+line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// server serves the registry as the user name (what the apiserver's
// authentication would have put in the request's context).
func server(t *testing.T, reg *Registry, name string) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: name})))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func clientFor(srv *httptest.Server, target string) *Client {
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return &Client{Server: srv.URL, Target: target, TLSConfig: &tls.Config{RootCAs: roots}}
}

func roundTrip(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

func TestTunnel(t *testing.T) {
	reg := NewRegistry()
	defer reg.Close()
	srv := server(t, reg, "system:node:n1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = clientFor(srv, agentAPI(t)).Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for !reg.Has("n1") {
		if time.Now().After(deadline) {
			t.Fatal("no tunnel from n1")
		}
		time.Sleep(10 * time.Millisecond)
	}

	var directs atomic.Int32
	unreachable := func(ctx context.Context, network, addr string) (net.Conn, error) {
		directs.Add(1)
		<-ctx.Done() // as a dial into NAT: nothing answers
		return nil, ctx.Err()
	}
	d := &Dialer{Registry: reg, Direct: unreachable, DirectTimeout: 50 * time.Millisecond}
	d.Learn("192.0.2.1:10250", "n1")
	c, err := d.DialContext(context.Background(), "tcp", "192.0.2.1:10250")
	if err != nil {
		t.Fatalf("dial through the tunnel: %v", err)
	}
	if got := roundTrip(t, c, "hello"); got != "agent:hello" {
		t.Fatalf("through the tunnel: %q", got)
	}
	// Remembered: the next dial goes through the tunnel at once.
	c, err = d.DialContext(context.Background(), "tcp", "192.0.2.1:10250")
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, c, "again"); got != "agent:again" || directs.Load() != 1 {
		t.Fatalf("second dial: %q after %d direct dials, want 1", got, directs.Load())
	}

	// A node without a tunnel is dialled directly, and its failure is
	// the caller's.
	d.Learn("192.0.2.2:10250", "n2")
	dctx, dcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer dcancel()
	if _, err := d.DialContext(dctx, "tcp", "192.0.2.2:10250"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("node without tunnel: %v", err)
	}

	// A reachable node is dialled directly even with a tunnel.
	target := agentAPI(t)
	direct := &Dialer{Registry: reg, Direct: (&net.Dialer{}).DialContext}
	direct.Learn(target, "n1")
	c, err = direct.DialContext(context.Background(), "tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*net.TCPConn); !ok {
		t.Errorf("a reachable node went through the tunnel (%T)", c)
	}
	c.Close()

	// The tunnel closes with the agent, and the node is forgotten.
	cancel()
	deadline = time.Now().Add(5 * time.Second)
	for reg.Has("n1") {
		if time.Now().After(deadline) {
			t.Fatal("tunnel still registered after the agent stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTunnelRefusedToNonNodes(t *testing.T) {
	reg := NewRegistry()
	defer reg.Close()
	srv := server(t, reg, "alice")
	_, err := clientFor(srv, "127.0.0.1:1").connect(context.Background())
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a user not a node: %v, want a 403 refusal", err)
	}
}

// waitHas waits until reg has (or, want false, no longer has) n1's tunnel.
func waitHas(t *testing.T, reg *Registry, want bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for reg.Has("n1") != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: tunnel registered %v, want %v", what, !want, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPool: the agent keeps a tunnel to every server of its list; a server
// leaving the list loses its tunnel, one joining gets one, and each server
// reaches the agent's API through its own.
func TestPool(t *testing.T) {
	regs := []*Registry{NewRegistry(), NewRegistry(), NewRegistry()}
	var srvs []*httptest.Server
	for _, r := range regs {
		defer r.Close()
		srvs = append(srvs, server(t, r, "system:node:n1"))
	}
	addr := func(i int) string { return srvs[i].Listener.Addr().String() }
	roots := x509.NewCertPool()
	roots.AddCert(srvs[0].Certificate()) // httptest's servers share one certificate

	var mu sync.Mutex
	list, changed := []string{addr(0), addr(1)}, make(chan struct{})
	setList := func(l ...string) {
		mu.Lock()
		list = l
		close(changed)
		changed = make(chan struct{})
		mu.Unlock()
	}
	p := &Pool{
		Servers: func() ([]string, <-chan struct{}) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(list), changed
		},
		TLSConfig: &tls.Config{RootCAs: roots},
		Target:    agentAPI(t),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	waitHas(t, regs[0], true, "server 0")
	waitHas(t, regs[1], true, "server 1")
	for i := range 2 {
		c, ok := regs[i].Open("n1")
		if !ok {
			t.Fatalf("server %d: no stream", i)
		}
		if got := roundTrip(t, c, "hi"); got != "agent:hi" {
			t.Errorf("server %d through its tunnel: %q", i, got)
		}
	}
	setList(addr(1), addr(2))
	waitHas(t, regs[0], false, "server 0 left the list")
	waitHas(t, regs[2], true, "server 2 joined the list")
	if !regs[1].Has("n1") {
		t.Error("server 1's tunnel closed although it stayed listed")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	waitHas(t, regs[1], false, "after the pool stopped")
	waitHas(t, regs[2], false, "after the pool stopped")
}
