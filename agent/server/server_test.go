package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/k1s/k1s/internal/pki"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{NodeName: "node-1", TLSCertFile: "c", TLSPrivateKeyFile: "k"}
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{name: "defaults", modify: func(*Config) {}},
		{name: "healthz off", modify: func(c *Config) { c.HealthzPort = -1 }},
		{name: "read-only on", modify: func(c *Config) { c.ReadOnlyPort = 10255 }},
		{name: "IPv6", modify: func(c *Config) { c.Address = "::" }},
		{name: "bad address", modify: func(c *Config) { c.Address = "node.local" }, want: []string{"--address"}},
		{name: "bad healthz address", modify: func(c *Config) { c.HealthzAddress = "localhost" }, want: []string{"--healthz-bind-address"}},
		{name: "bad port", modify: func(c *Config) { c.Port = 70000 }, want: []string{"--port: 70000"}},
		{name: "negative port", modify: func(c *Config) { c.Port = -1 }, want: []string{"--port: -1"}},
		{name: "bad healthz port", modify: func(c *Config) { c.HealthzPort = 70000 }, want: []string{"--healthz-port"}},
		{name: "bad read-only port", modify: func(c *Config) { c.ReadOnlyPort = -5 }, want: []string{"--read-only-port: -5"}},
		{name: "read-only port is the API port", modify: func(c *Config) { c.ReadOnlyPort = 10250 }, want: []string{"--read-only-port: 10250 is also --port"}},
		{name: "no certificate", modify: func(c *Config) { c.TLSCertFile, c.TLSPrivateKeyFile = "", "" }, want: []string{"--tls-cert-file", "--tls-private-key-file"}},
		{name: "no node name", modify: func(c *Config) { c.NodeName = "" }, want: []string{"--node-name"}},
		{name: "negative TTL", modify: func(c *Config) { c.AuthorizationDenyTTL = -time.Second }, want: []string{"deny cache TTL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.modify(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// testCA issues certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns PEM certificate and key for a leaf.
func (ca *testCA) issue(t *testing.T, cn string, orgs []string, server bool) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// reviews answers TokenReviews ("good-token" is alice) and
// SubjectAccessReviews (the apiserver's group may do anything on node-1;
// alice nothing) and records the access reviews.
type reviews struct {
	mu   sync.Mutex
	sars []authorizationv1.SubjectAccessReviewSpec
}

// client returns a Kubernetes client talking to a fake apiserver that
// serves only the two reviews.
func (rv *reviews) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if tr.Spec.Token == "good-token" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&tr)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rv.mu.Lock()
		rv.sars = append(rv.sars, sar.Spec)
		rv.mu.Unlock()
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = slices.Contains(sar.Spec.Groups, "system:k1s-apiservers") && ra != nil && ra.Resource == "nodes" && ra.Name == "node-1"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	})
	apiserver := httptest.NewServer(mux)
	t.Cleanup(apiserver.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: apiserver.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA, otherCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	certPEM, keyPEM := serverCA.issue(t, "node-1", nil, true)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := Config{
		Address:           "127.0.0.1",
		Port:              freePort(t),
		HealthzPort:       freePort(t),
		ReadOnlyPort:      freePort(t),
		TLSCertFile:       write("serving.crt", certPEM),
		TLSPrivateKeyFile: write("serving.key", keyPEM),
		ClientCAFile:      write("client-ca.crt", clientCA.pem),
		NodeName:          "node-1",
	}
	rv := &reviews{}
	pods := []*corev1.Pod{newPod("default", "web", "u1", "app")}
	s, err := New(cfg, Deps{Pods: PodsFunc(func() []*corev1.Pod { return pods }), Runtime: &fakeRuntime{}, KubeClient: rv.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not ready")
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.pem)
	client := func(ca *testCA, cn string, orgs ...string) *http.Client {
		tc := &tls.Config{RootCAs: roots}
		if ca != nil {
			c, k := ca.issue(t, cn, orgs, false)
			pair, err := tls.X509KeyPair(c, k)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 20 * time.Second}
	}
	get := func(c *http.Client, url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	api := fmt.Sprintf("https://127.0.0.1:%d", cfg.Port)

	tests := []struct {
		name     string
		client   *http.Client
		url      string
		token    string
		wantCode int
		wantBody string
	}{
		{name: "apiserver certificate", client: client(clientCA, "system:k1s-apiserver", "system:k1s-apiservers"), url: api + "/pods", wantCode: 200, wantBody: `"name":"web"`},
		{name: "apiserver certificate, healthz", client: client(clientCA, "system:k1s-apiserver", "system:k1s-apiservers"), url: api + "/healthz", wantCode: 200, wantBody: "ok"},
		{name: "no credentials", client: client(nil, ""), url: api + "/pods", wantCode: 401, wantBody: "Unauthorized"},
		{name: "certificate from another CA", client: client(otherCA, "system:k1s-apiserver", "system:k1s-apiservers"), url: api + "/pods", wantCode: 401},
		{name: "unknown token", client: client(nil, ""), url: api + "/pods", token: "bad-token", wantCode: 401},
		{name: "token of a user without access", client: client(nil, ""), url: api + "/containerLogs/default/web/app", token: "good-token", wantCode: 403,
			wantBody: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])"},
		{name: "certificate of a user without access", client: client(clientCA, "mallory", "devs"), url: api + "/stats/summary", wantCode: 403,
			wantBody: "Forbidden (user=mallory, verb=get, resource=nodes, subresource(s)=[stats])"},
		{name: "health listener needs nothing", client: http.DefaultClient, url: fmt.Sprintf("http://127.0.0.1:%d/healthz", cfg.HealthzPort), wantCode: 200, wantBody: "ok"},
		{name: "read-only pods", client: http.DefaultClient, url: fmt.Sprintf("http://127.0.0.1:%d/pods", cfg.ReadOnlyPort), wantCode: 200, wantBody: `"name":"web"`},
		{name: "read-only has no logs", client: http.DefaultClient, url: fmt.Sprintf("http://127.0.0.1:%d/containerLogs/default/web/app", cfg.ReadOnlyPort), wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(tt.client, tt.url, tt.token)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("got %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}

	// A renewed serving certificate, written over the files as the node's
	// rotator writes it (key, then certificate, each renamed into place),
	// is presented on new connections; a connection made before goes on.
	t.Run("renewed serving certificate", func(t *testing.T) {
		apiClient := client(clientCA, "system:k1s-apiserver", "system:k1s-apiservers")
		if code, _ := get(apiClient, api+"/healthz", ""); code != 200 {
			t.Fatalf("healthz: %d", code)
		}
		newCert, newKey := serverCA.issue(t, "node-1", nil, true)
		if err := pki.WriteFileAtomic(cfg.TLSPrivateKeyFile, newKey, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteFileAtomic(cfg.TLSCertFile, newCert, 0o644); err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(newCert)
		want, _ := x509.ParseCertificate(block.Bytes)
		deadline := time.Now().Add(90 * time.Second) // the file watch, or the minute's poll
		for {
			conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port), &tls.Config{RootCAs: roots})
			if err != nil {
				t.Fatal(err)
			}
			got := conn.ConnectionState().PeerCertificates[0]
			conn.Close()
			if got.Equal(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still serving serial %s, want %s", got.SerialNumber, want.SerialNumber)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if code, _ := get(apiClient, api+"/healthz", ""); code != 200 {
			t.Fatalf("healthz on the connection made before: %d", code)
		}
	})

	// The access reviews named the node, the subresource and the user with
	// the groups from the certificate.
	rv.mu.Lock()
	var sawPods bool
	for _, sar := range rv.sars {
		ra := sar.ResourceAttributes
		if sar.User == "system:k1s-apiserver" && slices.Contains(sar.Groups, "system:authenticated") &&
			ra.Verb == "get" && ra.Resource == "nodes" && ra.Subresource == "pods" && ra.Name == "node-1" && ra.Group == "" {
			sawPods = true
		}
	}
	rv.mu.Unlock()
	if !sawPods {
		t.Fatalf("no access review for the apiserver reading nodes/pods: %+v", rv.sars)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	if _, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port)); err == nil {
		t.Fatal("the API still listens after Run returned")
	}
}

func TestNewAndRunErrors(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	certPEM, keyPEM := ca.issue(t, "node-1", nil, true)
	certFile, keyFile, caFile := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key"), filepath.Join(dir, "ca.crt")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM, caFile: ca.pem} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	deps := Deps{Pods: PodsFunc(func() []*corev1.Pod { return nil }), Runtime: &fakeRuntime{}, KubeClient: fake.NewClientset()}
	base := Config{NodeName: "node-1", TLSCertFile: certFile, TLSPrivateKeyFile: keyFile, ClientCAFile: caFile, Address: "127.0.0.1", HealthzPort: -1}

	tests := []struct {
		name   string
		cfg    func(Config) Config
		deps   func(Deps) Deps
		wantIn string
	}{
		{name: "invalid config", cfg: func(c Config) Config { c.NodeName = ""; return c }, wantIn: "--node-name"},
		{name: "missing certificate", cfg: func(c Config) Config { c.TLSCertFile = filepath.Join(dir, "nope.crt"); return c }, wantIn: "--tls-cert-file"},
		{name: "key does not match", cfg: func(c Config) Config { c.TLSPrivateKeyFile = caFile; return c }, wantIn: "--tls-cert-file"},
		{name: "missing client CA", cfg: func(c Config) Config { c.ClientCAFile = filepath.Join(dir, "nope.crt"); return c }, wantIn: "--client-ca-file"},
		{name: "no kube client", deps: func(d Deps) Deps { d.KubeClient = nil; return d }, wantIn: "Kubernetes client"},
		{name: "no pods", deps: func(d Deps) Deps { d.Pods = nil; return d }, wantIn: "pod source"},
		{name: "no runtime", deps: func(d Deps) Deps { d.Runtime = nil; return d }, wantIn: "runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, d := base, deps
			if tt.cfg != nil {
				cfg = tt.cfg(cfg)
			}
			if tt.deps != nil {
				d = tt.deps(d)
			}
			if _, err := New(cfg, d); err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tt.wantIn)
			}
		})
	}

	// A taken port fails Run with the address.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := base
	cfg.Port = l.Addr().(*net.TCPAddr).Port
	s, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("Run on a taken port: %v", err)
	}
	select {
	case <-s.Ready():
		t.Fatal("ready although it never served")
	default:
	}
}
