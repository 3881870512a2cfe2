package apiservers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/pki"
)

// fakeServer is a TCP listener on 127.0.0.1 that keeps what it accepts.
type fakeServer struct {
	ln       net.Listener
	accepted chan net.Conn
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, accepted: make(chan net.Conn, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- c
		}
	}()
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

// stop closes the listener: connections to it are refused from then on.
func (s *fakeServer) stop() { s.ln.Close() }

// dial dials through b and reports which server accepted.
func dial(t *testing.T, b *Balancer, servers ...*fakeServer) (net.Conn, int) {
	t.Helper()
	c, err := b.DialContext(context.Background(), "tcp", "kubernetes:443")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	local := c.LocalAddr().String()
	deadline := time.After(5 * time.Second)
	for {
		for i, s := range servers {
			select {
			case a := <-s.accepted:
				if a.RemoteAddr().String() == local {
					t.Cleanup(func() { a.Close() })
					return c, i
				}
			default:
			}
		}
		select {
		case <-deadline:
			t.Fatal("no server accepted the connection")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestDialFailsOverInOrder(t *testing.T) {
	s := []*fakeServer{newFakeServer(t), newFakeServer(t), newFakeServer(t)}
	b, err := New(Config{Default: s[0].addr()})
	if err != nil {
		t.Fatal(err)
	}
	b.Set(context.Background(), []string{s[0].addr(), s[1].addr(), s[2].addr()})
	if _, i := dial(t, b, s...); i != 0 {
		t.Fatalf("first dial reached server %d, want the first contact", i)
	}
	s[0].stop()
	if _, i := dial(t, b, s...); i != 1 {
		t.Fatalf("with server 0 down, dial reached server %d, want 1", i)
	}
	if b.Current() != s[1].addr() {
		t.Errorf("current %s, want %s", b.Current(), s[1].addr())
	}
	// Sticky: the current server stays current (server 2, down, is not
	// tried).
	s[2].stop()
	if _, i := dial(t, b, s...); i != 1 {
		t.Fatalf("dial reached server %d, want the current one, 1", i)
	}
	s[1].stop()
	_, err = b.DialContext(context.Background(), "tcp", "kubernetes:443")
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("all servers down: %v, want ErrNoServer", err)
	}
}

func TestFirstContactTriedLastWhenNotListed(t *testing.T) {
	// The first contact is a name in front of the servers: never listed.
	front, a, b2 := newFakeServer(t), newFakeServer(t), newFakeServer(t)
	file := filepath.Join(t.TempDir(), "apiservers.json")
	b, err := New(Config{Default: front.addr(), File: file})
	if err != nil {
		t.Fatal(err)
	}
	b.Set(context.Background(), []string{a.addr(), b2.addr()})
	// It stays current while it answers.
	if _, i := dial(t, b, front, a, b2); i != 0 {
		t.Fatalf("dial reached %d, want the first contact while it answers", i)
	}
	// Restarted with the kept list: a listed server first.
	b, err = New(Config{Default: front.addr(), File: file})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a.addr(), b2.addr(), front.addr()}; !slices.Equal(b.order(), want) {
		t.Fatalf("order %v, want %v", b.order(), want)
	}
	if _, i := dial(t, b, front, a, b2); i != 1 {
		t.Fatalf("dial reached %d, want the first listed", i)
	}
	a.stop()
	b2.stop()
	if _, i := dial(t, b, front, a, b2); i != 0 {
		t.Fatalf("dial reached %d, want the first contact, last", i)
	}
}

func TestSetClosesConnectionsToDroppedServers(t *testing.T) {
	s := []*fakeServer{newFakeServer(t), newFakeServer(t)}
	b, err := New(Config{Default: s[0].addr()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.Set(ctx, []string{s[0].addr(), s[1].addr()})
	c, i := dial(t, b, s...)
	if i != 0 {
		t.Fatalf("dial reached %d", i)
	}
	_, changed := b.Servers()
	b.Set(ctx, []string{s[1].addr()})
	select {
	case <-changed:
	default:
		t.Error("Set did not signal the change")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("connection to the dropped server: read %v, want it closed", err)
	}
	if b.Current() != s[1].addr() {
		t.Errorf("current %s, want %s", b.Current(), s[1].addr())
	}
	if _, i := dial(t, b, s...); i != 1 {
		t.Errorf("dial reached %d, want 1", i)
	}
	// An empty list (every apiserver restarting) is ignored.
	b.Set(ctx, nil)
	if got, _ := b.Servers(); !slices.Equal(got, []string{s[1].addr()}) {
		t.Errorf("servers %v after an empty list", got)
	}
}

func TestListKeptInFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "apiservers.json")
	b, err := New(Config{Default: "10.0.0.1:6443", File: file})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Servers(); !slices.Equal(got, []string{"10.0.0.1:6443"}) {
		t.Fatalf("servers before the list is learnt: %v, want the first contact", got)
	}
	list := []string{"10.0.0.1:6443", "10.0.0.2:6443", "[fd00::3]:6443"}
	b.Set(context.Background(), list)

	for _, tc := range []struct {
		name, first string
		want        []string
		current     string
	}{
		{"same first contact", "10.0.0.1:6443", list, "10.0.0.1:6443"},
		{"another first contact: the list is of another cluster", "10.9.9.9:6443", []string{"10.9.9.9:6443"}, "10.9.9.9:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(Config{Default: tc.first, File: file})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := b.Servers(); !slices.Equal(got, tc.want) {
				t.Errorf("servers %v, want %v", got, tc.want)
			}
			if b.Current() != tc.current {
				t.Errorf("current %s, want %s", b.Current(), tc.current)
			}
		})
	}
	t.Run("a corrupt file is ignored", func(t *testing.T) {
		if err := os.WriteFile(file, []byte(`{"default":"10.0.0.1:6443","servers":["no port"]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := New(Config{Default: "10.0.0.1:6443", File: file})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := b.Servers(); !slices.Equal(got, []string{"10.0.0.1:6443"}) {
			t.Errorf("servers %v", got)
		}
	})
	if _, err := New(Config{Default: "10.0.0.1"}); err == nil {
		t.Error("a first contact without port was accepted")
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"https://10.0.0.1:6443":     "10.0.0.1:6443",
		"https://k1s.example":       "k1s.example:443",
		"https://[fd00::1]:6443/x/": "[fd00::1]:6443",
	} {
		if got, err := HostPort(in); err != nil || got != want {
			t.Errorf("HostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"http://10.0.0.1:6443", "10.0.0.1:6443", "https://"} {
		if _, err := HostPort(in); err == nil {
			t.Errorf("HostPort(%q) accepted", in)
		}
	}
}

// TestClientFailsOver: a client-go client of Host, through the balancer,
// verifies each server's certificate for ServerName (not the address it
// dialled) and goes on with the second server when the first stops.
func TestClientFailsOver(t *testing.T) {
	cluster, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// Every apiserver's certificate carries ServerName.
	serving, err := tls.LoadX509KeyPair(cluster.APIServerServing.CertFile, cluster.APIServerServing.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := serving.Leaf.VerifyHostname(ServerName); err != nil {
		t.Fatalf("the apiserver's serving certificate: %v", err)
	}
	start := func(version string) *httptest.Server {
		// A certificate for ServerName and an address the test never dials.
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		certPEM, err := cluster.ServerCA.Sign(key.Public(), pki.LeafSpec{CommonName: "kube-apiserver", DNSNames: []string{ServerName}, IPs: []net.IP{net.ParseIP("192.0.2.1")}, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalECPrivateKey(key)
		pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"` + version + `"}`))
		}))
		srv.EnableHTTP2 = true
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	one, two := start("v1.34.0-one"), start("v1.34.0-two")
	b, err := New(Config{Default: one.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	b.Set(context.Background(), []string{one.Listener.Addr().String(), two.Listener.Addr().String()})
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: Host, Dial: b.DialContext, Timeout: 10 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cluster.ServerCA.CertFile}})
	v, err := client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.34.0-one" {
		t.Fatalf("version %+v, %v; want server one's", v, err)
	}
	one.Close()
	v, err = client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.34.0-two" {
		t.Fatalf("with server one stopped: version %+v, %v; want server two's", v, err)
	}
}

func TestWatchFollowsTheEndpointSlice(t *testing.T) {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: EndpointsName, Namespace: metav1.NamespaceDefault},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.2"}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
	}
	client := fake.NewClientset(slice)
	got := make(chan []string, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Watch(ctx, client, func(_ context.Context, s []string) { got <- s }) }()
	expect := func(want ...string) {
		t.Helper()
		select {
		case s := <-got:
			if !slices.Equal(s, want) {
				t.Fatalf("servers %v, want %v", s, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no servers handed over; want %v", want)
		}
	}
	expect("10.0.0.1:6443", "10.0.0.2:6443")
	slice = slice.DeepCopy()
	slice.Endpoints = slice.Endpoints[1:]
	if _, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("10.0.0.2:6443")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
}

func TestAddresses(t *testing.T) {
	s := &discoveryv1.EndpointSlice{
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}},
			{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			{Addresses: []string{"fd00::3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("other"), Port: ptr.To[int32](1)}, {Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
	}
	if got, want := Addresses(s), []string{"10.0.0.1:6443", "[fd00::3]:6443"}; !slices.Equal(got, want) {
		t.Errorf("Addresses %v, want %v", got, want)
	}
	s.Ports = nil
	if got := Addresses(s); got != nil {
		t.Errorf("no port: %v", got)
	}
}
