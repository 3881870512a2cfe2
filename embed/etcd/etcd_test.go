package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/k1s/k1s/internal/pki"
)

func TestValidate(t *testing.T) {
	valid := Config{DataDir: "/d", ClientPort: 2379, PeerPort: 2380, CertFile: "c", KeyFile: "k", TrustedCAFile: "ca"}
	tests := []struct {
		name   string
		change func(*Config)
		want   []string // substrings of the error; nil means valid
	}{
		{"valid", func(*Config) {}, nil},
		{"ports zero are left to defaults", func(c *Config) { c.ClientPort, c.PeerPort = 0, 0 }, nil},
		{"no data dir", func(c *Config) { c.DataDir = "" }, []string{"--data-dir"}},
		{"negative client port", func(c *Config) { c.ClientPort = -1 }, []string{"--etcd-client-port", "-1"}},
		{"client port too big", func(c *Config) { c.ClientPort = 65536 }, []string{"--etcd-client-port", "65536"}},
		{"peer port too big", func(c *Config) { c.PeerPort = 70000 }, []string{"--etcd-peer-port", "70000"}},
		{"no cert", func(c *Config) { c.CertFile = "" }, []string{"TLS"}},
		{"no key", func(c *Config) { c.KeyFile = "" }, []string{"TLS"}},
		{"no CA", func(c *Config) { c.TrustedCAFile = "" }, []string{"TLS"}},
		{"several at once", func(c *Config) { c.DataDir, c.PeerPort = "", -5 }, []string{"--data-dir", "--etcd-peer-port"}},
		{"peer address without peer certificate", func(c *Config) { c.PeerIP = net.IPv4(192, 0, 2, 1) }, []string{"peer TLS"}},
		{"peer address with peer certificate", func(c *Config) { c.PeerIP, c.PeerCertFile, c.PeerKeyFile = net.IPv4(192, 0, 2, 1), "pc", "pk" }, nil},
		{"joining without a peer address", func(c *Config) { c.InitialCluster = "a=https://192.0.2.1:2380" }, []string{"--node-ip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.change(&cfg)
			err := cfg.Validate()
			_, newErr := New(cfg)
			if tt.want == nil {
				if err != nil || newErr != nil {
					t.Fatalf("Validate() = %v, New() = %v, want both nil", err, newErr)
				}
				return
			}
			if err == nil || newErr == nil {
				t.Fatalf("Validate() = %v, New() = %v, want errors containing %v", err, newErr, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	s, err := New(Config{DataDir: "/d", CertFile: "c", KeyFile: "k", TrustedCAFile: "ca"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Endpoint(), "https://127.0.0.1:2379"; got != want {
		t.Errorf("Endpoint() = %s, want %s", got, want)
	}
	want := Config{DataDir: "/d", CertFile: "c", KeyFile: "k", TrustedCAFile: "ca",
		ClientPort: 2379, PeerPort: 2380, Name: "k1s", SnapshotCount: 10000, LogLevel: "warn"}
	if !reflect.DeepEqual(s.cfg, want) {
		t.Errorf("defaulted config = %+v, want %+v", s.cfg, want)
	}
	select {
	case <-s.Ready():
		t.Errorf("Ready closed before Run")
	default:
	}
}

func TestCheckDataDir(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // "" means accepted
	}{
		{"empty", func(*testing.T, string) {}, ""},
		{"member with snap", func(t *testing.T, dir string) { mkdir(t, dir, "member", "snap") }, ""},
		{"member with snap and wal", func(t *testing.T, dir string) {
			mkdir(t, dir, "member", "snap")
			mkdir(t, dir, "member", "wal")
		}, ""},
		{"foreign file", func(t *testing.T, dir string) { touch(t, dir, "notes.txt") }, "foreign"},
		{"foreign directory", func(t *testing.T, dir string) { mkdir(t, dir, "server") }, "foreign"},
		{"foreign file beside a member", func(t *testing.T, dir string) {
			mkdir(t, dir, "member", "snap")
			touch(t, dir, "x")
		}, "foreign"},
		{"member without snap", func(t *testing.T, dir string) { mkdir(t, dir, "member", "wal") }, "corrupt"},
		{"empty member", func(t *testing.T, dir string) { mkdir(t, dir, "member") }, "corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			err := checkDataDir(dir)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("checkDataDir = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("checkDataDir = %v, want an error naming %s and containing %q", err, dir, tt.want)
			}
		})
	}
	if err := checkDataDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkDataDir(missing) = %v, want ErrNotExist", err)
	}
}

func mkdir(t *testing.T, parts ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(parts...), 0o700); err != nil {
		t.Fatal(err)
	}
}

func touch(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testPKI creates the etcd certificates in a temporary directory.
func testPKI(t *testing.T) *pki.Cluster {
	t.Helper()
	c, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "tls"), Hostname: "test"})
	if err != nil {
		t.Fatalf("pki: %v", err)
	}
	return c
}

func testConfig(t *testing.T, c *pki.Cluster, dataDir string) Config {
	t.Helper()
	return Config{
		DataDir:       dataDir,
		ClientPort:    freePort(t),
		PeerPort:      freePort(t),
		CertFile:      c.EtcdServer.CertFile,
		KeyFile:       c.EtcdServer.KeyFile,
		TrustedCAFile: c.EtcdCA.CertFile,
		LogLevel:      "error",
	}
}

// running is a started server.
type running struct {
	srv    *Server
	cancel context.CancelFunc
	done   chan error
}

// start runs cfg and waits for Ready; the server is stopped at cleanup.
func start(t *testing.T, cfg Config) *running {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-r.done:
		cancel()
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("etcd not ready within 60s")
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the server and returns Run's result; safe to call twice.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return within 30s of cancel")
		return nil
	}
}

func newClient(t *testing.T, c *pki.Cluster, endpoint string, ck pki.CertKey) *clientv3.Client {
	t.Helper()
	tlsCfg, err := transport.TLSInfo{CertFile: ck.CertFile, KeyFile: ck.KeyFile, TrustedCAFile: c.EtcdCA.CertFile}.ClientConfig()
	if err != nil {
		t.Fatalf("client TLS: %v", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	c := testPKI(t)
	dataDir := filepath.Join(t.TempDir(), "etcd")
	cfg := testConfig(t, c, dataDir)
	r := start(t, cfg)
	if got, want := r.srv.Endpoint(), fmt.Sprintf("https://127.0.0.1:%d", cfg.ClientPort); got != want {
		t.Errorf("Endpoint() = %s, want %s", got, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli := newClient(t, c, r.srv.Endpoint(), c.EtcdClient)
	if _, err := cli.Put(ctx, "/k1s/test", "value"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	resp, err := cli.Get(ctx, "/k1s/test")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "value" {
		t.Fatalf("Get returned %v, want value", resp.Kvs)
	}

	t.Run("client certificate of another CA is refused", func(t *testing.T) {
		other := testPKI(t)
		tlsCfg, err := transport.TLSInfo{CertFile: other.EtcdClient.CertFile, KeyFile: other.EtcdClient.KeyFile, TrustedCAFile: c.EtcdCA.CertFile}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		bad, err := clientv3.New(clientv3.Config{Endpoints: []string{r.srv.Endpoint()}, TLS: tlsCfg, DialTimeout: time.Second})
		if err != nil {
			return // refused at dial
		}
		defer bad.Close()
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		defer ccancel()
		if _, err := bad.Get(cctx, "/k1s/test"); err == nil {
			t.Errorf("Get with a foreign client certificate succeeded")
		}
	})

	t.Run("second server on the same client port", func(t *testing.T) {
		cfg2 := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
		cfg2.ClientPort = cfg.ClientPort
		assertPortInUse(t, cfg2, cfg.ClientPort)
	})
	t.Run("second server on the same peer port", func(t *testing.T) {
		cfg2 := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
		cfg2.PeerPort = cfg.PeerPort
		assertPortInUse(t, cfg2, cfg.PeerPort)
	})

	if err := r.stop(t); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.ClientPort), time.Second); err == nil {
		t.Errorf("client port still accepts connections after stop")
	}

	// The data directory is reused: the key is still there.
	cfg.ClientPort, cfg.PeerPort = freePort(t), freePort(t)
	r2 := start(t, cfg)
	cli2 := newClient(t, c, r2.srv.Endpoint(), c.EtcdClient)
	resp, err = cli2.Get(ctx, "/k1s/test")
	if err != nil {
		t.Fatalf("Get after restart: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "value" {
		t.Fatalf("Get after restart returned %v, want value", resp.Kvs)
	}
	if err := r2.stop(t); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
}

func TestLocalClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	c := testPKI(t)
	cfg := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.LocalClient(); err == nil {
		t.Fatal("LocalClient before Run succeeded, want an error")
	}
	r := start(t, cfg)
	local, err := r.srv.LocalClient()
	if err != nil {
		t.Fatalf("LocalClient: %v", err)
	}
	defer local.Close()
	remote := newClient(t, c, r.srv.Endpoint(), c.EtcdClient)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A watch through the in-process client sees a write made over TLS,
	// and a write made in process is read back over TLS.
	wch := local.Watch(ctx, "/k1s/local/", clientv3.WithPrefix())
	if _, err := remote.Put(ctx, "/k1s/local/a", "over-tls"); err != nil {
		t.Fatalf("Put over TLS: %v", err)
	}
	select {
	case wr := <-wch:
		if err := wr.Err(); err != nil {
			t.Fatalf("watch: %v", err)
		}
		if len(wr.Events) != 1 || string(wr.Events[0].Kv.Value) != "over-tls" {
			t.Fatalf("watch events %v, want one put of over-tls", wr.Events)
		}
	case <-ctx.Done():
		t.Fatal("no watch event through the in-process client")
	}
	put, err := local.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("/k1s/local/b"), "=", 0)).
		Then(clientv3.OpPut("/k1s/local/b", "in-process")).Commit()
	if err != nil || !put.Succeeded {
		t.Fatalf("Txn in process: %v (succeeded %v)", err, put != nil && put.Succeeded)
	}
	resp, err := remote.Get(ctx, "/k1s/local/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("Get over TLS: %v", err)
	}
	if len(resp.Kvs) != 2 || string(resp.Kvs[1].Value) != "in-process" {
		t.Fatalf("Get over TLS returned %v, want both keys", resp.Kvs)
	}
	st, err := local.Status(ctx, "in-process")
	if err != nil || st.Version == "" {
		t.Fatalf("Status in process: %v, %v", st, err)
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	if _, err := local.Get(sctx, "/k1s/local/a"); err == nil {
		t.Error("Get through the in-process client after stop succeeded, want an error")
	}
	if _, err := r.srv.LocalClient(); err == nil {
		t.Error("LocalClient after stop succeeded, want an error")
	}
}

func assertPortInUse(t *testing.T, cfg Config, port int) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", port)) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Run = %v, want an error saying 127.0.0.1:%d is in use", err, port)
	}
	select {
	case <-srv.Ready():
		t.Errorf("Ready closed for a server that failed")
	default:
	}
	entries, _ := os.ReadDir(cfg.DataDir)
	if len(entries) != 0 {
		t.Errorf("failed server left %d entries in its data directory", len(entries))
	}
}

func TestRunRefusesBadDataDir(t *testing.T) {
	c := testPKI(t)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string
		want  string
	}{
		{"foreign", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "etcd")
			mkdir(t, d)
			touch(t, d, "passwd")
			return d
		}, "foreign"},
		{"corrupt member", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "etcd")
			mkdir(t, d, "member", "wal")
			return d
		}, "corrupt"},
		{"data dir under a file", func(t *testing.T, dir string) string {
			touch(t, dir, "file")
			return filepath.Join(dir, "file", "etcd")
		}, "--data-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, c, tt.setup(t, t.TempDir()))
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := srv.Run(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRunBadLogLevel(t *testing.T) {
	c := testPKI(t)
	cfg := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
	cfg.LogLevel = "chatty"
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Run(ctx); err == nil || !strings.Contains(err.Error(), `"chatty"`) {
		t.Fatalf("Run = %v, want an error naming the log level", err)
	}
}
