package service

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/pki"
)

// One embedded etcd serves every test of the package; each test works under
// its own key prefix. It is started on first use and stopped by TestMain.
var shared struct {
	once   sync.Once
	err    error
	client *clientv3.Client
	cancel context.CancelFunc
	done   chan error
	dir    string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.client.Close()
		shared.cancel()
		select {
		case err := <-shared.done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "etcd stopped with error: %v\n", err)
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "etcd did not stop within 30s")
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startEtcd() error {
	dir, err := os.MkdirTemp("", "k1s-service-test-")
	if err != nil {
		return err
	}
	shared.dir = dir
	c, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "tls"), Hostname: "test"})
	if err != nil {
		return err
	}
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	srv, err := etcd.New(etcd.Config{
		DataDir: filepath.Join(dir, "etcd"), ClientPort: clientPort, PeerPort: peerPort,
		CertFile: c.EtcdServer.CertFile, KeyFile: c.EtcdServer.KeyFile, TrustedCAFile: c.EtcdCA.CertFile,
		LogLevel: "error",
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	shared.cancel = cancel
	shared.done = make(chan error, 1)
	go func() { shared.done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-shared.done:
		shared.cancel = nil
		cancel()
		return fmt.Errorf("etcd stopped before ready: %w", err)
	case <-time.After(60 * time.Second):
		return fmt.Errorf("etcd not ready within 60s")
	}
	tlsCfg, err := transport.TLSInfo{CertFile: c.EtcdClient.CertFile, KeyFile: c.EtcdClient.KeyFile, TrustedCAFile: c.EtcdCA.CertFile}.ClientConfig()
	if err != nil {
		return err
	}
	shared.client, err = clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, TLS: tlsCfg, DialTimeout: 5 * time.Second})
	return err
}

// testKV returns the shared etcd client and a key prefix unique to the test.
func testKV(t *testing.T) (*clientv3.Client, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs etcd")
	}
	shared.once.Do(func() { shared.err = startEtcd() })
	if shared.err != nil {
		t.Fatalf("embedded etcd: %v", shared.err)
	}
	prefix := "/test/" + strings.ReplaceAll(t.Name(), "/", "_") + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := shared.client.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatalf("clear %s: %v", prefix, err)
	}
	return shared.client, prefix
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
