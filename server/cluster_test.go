package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server/secretsencrypt"
)

// firstServer is a server's data dir (its PKI, service-account key and
// join token) behind an HTTPS server with /cacerts and the cluster
// endpoints, as the apiserver serves them.
type firstServer struct {
	dir   string // <data-dir>/server
	url   string
	token jointoken.Token
}

func startFirstServer(t *testing.T, settings map[string]string) *firstServer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "server")
	c, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "tls"), Hostname: "first", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls", "service.key"), []byte("sa-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(c.ServerCA.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jointoken.New(ca, "abcdef.0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJoinToken(dir, tok); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(jointoken.CACertsPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ca) })
	for p, h := range (&clusterEndpoints{serverDir: dir, settings: settings}).handlers() {
		mux.Handle(p, h)
	}
	srv := httptest.NewUnstartedServer(mux)
	cert, err := tls.LoadX509KeyPair(c.APIServerServing.CertFile, c.APIServerServing.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &firstServer{dir: dir, url: srv.URL, token: tok}
}

// joiner is a server joining f; it shares f's external datastore, so
// that no etcd member is added.
func joiner(t *testing.T, f *firstServer, mutate func(*Config)) *Server {
	t.Helper()
	cfg := Config{DataDir: filepath.Join(t.TempDir(), "data"), NodeIP: "127.0.0.1", NodeName: "second",
		JoinServer: f.url, Token: f.token.String(), DatastoreEndpoint: "https://127.0.0.1:1"}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServerJoinsWithTheServerToken(t *testing.T) {
	probe := joiner(t, &firstServer{url: "https://127.0.0.1:1"}, func(c *Config) { c.Token = ""; c.TokenFile = "/t" })
	f := startFirstServer(t, probe.criticalSettings())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	s := joiner(t, f, nil)
	st, err := s.prepareCluster(ctx, f.token.String())
	if err != nil {
		t.Fatalf("prepareCluster: %v", err)
	}
	if !st.clustered || st.initialCluster != "" {
		t.Errorf("state %+v, want clustered, no etcd member added (external datastore)", st)
	}
	for _, name := range []string{"server-ca.crt", "server-ca.key", "client-ca.crt", "client-ca.key", "request-header-ca.crt",
		"request-header-ca.key", "etcd/server-ca.crt", "etcd/server-ca.key", "service.key"} {
		want, err := os.ReadFile(filepath.Join(f.dir, "tls", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(s.serverDir(), "tls", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not the first server's (%v)", name, err)
		}
		if info, err := os.Stat(filepath.Join(s.serverDir(), "tls", name)); err == nil && strings.HasSuffix(name, ".key") && info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, info.Mode().Perm())
		}
	}
	if tok, err := loadServerToken(s.serverDir()); err != nil || tok != f.token {
		t.Errorf("the joined server's token is %v (%v), want the cluster's", tok, err)
	}
	// Its PKI takes the shared CAs.
	c, err := pki.Ensure(pki.Config{Dir: filepath.Join(s.serverDir(), "tls"), Hostname: "second"})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(f.dir, "tls", "server-ca.crt"))
	if got, _ := os.ReadFile(c.ServerCA.CertFile); !bytes.Equal(got, first) {
		t.Errorf("the joined server made a CA of its own")
	}

	t.Run("a restart needs the server no more", func(t *testing.T) {
		again := joiner(t, &firstServer{url: "https://127.0.0.1:1", token: f.token}, func(c *Config) { c.DataDir = s.cfg.DataDir })
		if _, err := again.prepareCluster(ctx, f.token.String()); err != nil {
			t.Errorf("prepareCluster on restart: %v", err)
		}
	})
	t.Run("the data dir of another cluster is refused", func(t *testing.T) {
		other := startFirstServer(t, probe.criticalSettings())
		again := joiner(t, other, func(c *Config) { c.DataDir = s.cfg.DataDir })
		_, err := again.prepareCluster(ctx, other.token.String())
		if err == nil || !strings.Contains(err.Error(), "another cluster") {
			t.Errorf("prepareCluster = %v, want a refusal naming another cluster", err)
		}
	})
}

func TestServerJoinRefusals(t *testing.T) {
	probe := joiner(t, &firstServer{url: "https://127.0.0.1:1"}, func(c *Config) { c.Token = ""; c.TokenFile = "/t" })
	f := startFirstServer(t, probe.criticalSettings())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hash := f.token.CAHash
	tests := []struct {
		name   string
		token  string
		mutate func(*Config)
		want   []string
	}{
		{"an agent's bootstrap token", "K10" + hash + "::zyxwvu.0123456789abcdef", nil, []string{"server token", "k1s token create"}},
		{"a token of another CA", "K10" + strings.Repeat("0", 64) + "::abcdef.0123456789abcdef", nil, []string{"--server", "CA hash"}},
		{"a token without CA hash", "abcdef.0123456789abcdef", nil, []string{"--token", "K10"}},
		{"another cluster CIDR", f.token.String(), func(c *Config) { c.ClusterCIDR = "10.52.0.0/16" }, []string{"--cluster-cidr", "10.52.0.0/16", "10.42.0.0/16"}},
		{"another set of components", f.token.String(), func(c *Config) { c.Disable = []string{"servicelb"} }, []string{"--disable"}},
		{"secrets encryption where the cluster has none", f.token.String(), func(c *Config) { c.SecretsEncryption = true }, []string{"--secrets-encryption", "does not encrypt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := joiner(t, f, func(c *Config) {
				c.Token = tt.token
				if tt.mutate != nil {
					tt.mutate(c)
				}
			})
			start := time.Now()
			_, err := s.prepareCluster(ctx, tt.token)
			if err == nil {
				t.Fatal("prepareCluster succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("refused after %s: a refusal is not retried", time.Since(start))
			}
			if _, err := os.Stat(filepath.Join(s.serverDir(), "tls", "server-ca.key")); err == nil && tt.mutate == nil {
				t.Errorf("the CA key was written although the token was refused")
			}
		})
	}
}

// TestServerJoinTakesTheEncryptionConfig: a cluster that encrypts
// Secrets hands its EncryptionConfiguration to a joining server (0600),
// which then uses that key, not one of its own.
func TestServerJoinTakesTheEncryptionConfig(t *testing.T) {
	probe := joiner(t, &firstServer{url: "https://127.0.0.1:1"}, func(c *Config) { c.Token = ""; c.TokenFile = "/t" })
	f := startFirstServer(t, probe.criticalSettings())
	firstConfig, err := secretsencrypt.Ensure(filepath.Dir(f.dir), secretsencrypt.ProviderAESCBC)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(firstConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := joiner(t, f, func(c *Config) { c.SecretsEncryption = true })
	if _, err := s.prepareCluster(ctx, f.token.String()); err != nil {
		t.Fatalf("prepareCluster: %v", err)
	}
	path := secretsencrypt.ConfigPath(s.cfg.DataDir)
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the joined server's encryption config is not the cluster's (%v)", err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("encryption config mode %v (%v), want 0600", info.Mode().Perm(), err)
	}
	used, err := s.cfg.encryptionConfig(ctx, s.cfg.DataDir, true)
	if err != nil || used != path {
		t.Fatalf("encryptionConfig = %q, %v; want %s", used, err, path)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("starting with --secrets-encryption replaced the cluster's key")
	}
}

func TestClusterEndpointsAuthorization(t *testing.T) {
	f := startFirstServer(t, map[string]string{})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test server
	get := func(path, user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, path, user, pass string
		want                   int
	}{
		{"anonymous", ServerBootstrapPath, "", "", http.StatusUnauthorized},
		{"wrong secret", ServerBootstrapPath, "server", "abcdef.fedcba9876543210", http.StatusUnauthorized},
		{"the whole K10 token as password", ServerBootstrapPath, "server", f.token.String(), http.StatusUnauthorized},
		{"wrong user", ServerBootstrapPath, "node", f.token.Bearer(), http.StatusUnauthorized},
		{"the server token", ServerBootstrapPath, "server", f.token.Bearer(), http.StatusOK},
		{"members of an external datastore", EtcdMembersPath, "server", f.token.Bearer(), http.StatusNotFound},
		{"members, anonymous", EtcdMembersPath, "", "", http.StatusUnauthorized},
	} {
		if got := get(tc.path, tc.user, tc.pass); got != tc.want {
			t.Errorf("%s: GET %s = %d, want %d", tc.name, tc.path, got, tc.want)
		}
	}
	// No token yet (a server starting): unavailable, not open.
	for _, name := range joinTokenFiles {
		os.Remove(filepath.Join(f.dir, name))
	}
	if got := get(ServerBootstrapPath, "server", f.token.Bearer()); got != http.StatusServiceUnavailable {
		t.Errorf("without a token file: %d, want 503", got)
	}
}

func TestLocalURL(t *testing.T) {
	for _, tc := range []struct {
		bind string
		want string
	}{
		{"0.0.0.0", "https://127.0.0.1:6443"},
		{"::", "https://127.0.0.1:6443"},
		{"10.99.0.11", "https://10.99.0.11:6443"},
		{"fd00::1", "https://[fd00::1]:6443"},
	} {
		if got := localURL(net.ParseIP(tc.bind), 6443); got != tc.want {
			t.Errorf("localURL(%s) = %s, want %s", tc.bind, got, tc.want)
		}
	}
}
