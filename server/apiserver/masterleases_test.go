package apiserver

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/freeport"
	"github.com/k1s/k1s/internal/pki"
)

// TestEtcdLeasesRenewWithoutWriting: the apiserver's endpoint lease is
// written once and then only kept alive (no etcd revision per reconcile,
// which --low-write counts on); a lost lease or key is written again.
func TestEtcdLeasesRenewWithoutWriting(t *testing.T) {
	c := startTestEtcd(t)
	ctx := context.Background()
	l := newEtcdLeases(c, "/registry")
	ip := net.ParseIP("10.0.0.7")
	revision := func() int64 {
		t.Helper()
		resp, err := c.Get(ctx, "/registry/masterleases/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	if err := l.Update(ctx, ip); err != nil {
		t.Fatal(err)
	}
	first := revision()
	for range 3 {
		if err := l.Update(ctx, ip); err != nil {
			t.Fatal(err)
		}
	}
	if got := revision(); got != first {
		t.Errorf("revision moved from %d to %d over three renewals, want no write", first, got)
	}
	ips, err := l.List(ctx)
	if err != nil || len(ips) != 1 || !ips[0].Equal(ip) {
		t.Fatalf("List = %v, %v; want [%s]", ips, err, ip)
	}
	// The lease expired (revoked here): the key is gone and comes back.
	if _, err := c.Revoke(ctx, l.lease); err != nil {
		t.Fatal(err)
	}
	if ips, _ := l.List(ctx); len(ips) != 0 {
		t.Fatalf("key still there after its lease went: %v", ips)
	}
	if err := l.Update(ctx, ip); err != nil {
		t.Fatal(err)
	}
	if ips, err := l.List(ctx); err != nil || len(ips) != 1 {
		t.Fatalf("List after re-grant = %v, %v", ips, err)
	}
	// The key deleted under a live lease comes back too.
	if err := l.Remove(ctx, ip); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, ip); err != nil {
		t.Fatal(err)
	}
	if ips, err := l.List(ctx); err != nil || len(ips) != 1 {
		t.Fatalf("List after the key was removed and updated = %v, %v", ips, err)
	}
}

func startTestEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	dir := t.TempDir()
	cluster, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "tls"), Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	port := func() int {
		p, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv, err := etcd.New(etcd.Config{
		DataDir: filepath.Join(dir, "etcd"), ClientPort: port(), PeerPort: port(),
		CertFile: cluster.EtcdServer.CertFile, KeyFile: cluster.EtcdServer.KeyFile, TrustedCAFile: cluster.EtcdCA.CertFile,
		LogLevel: "error",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("etcd stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("etcd not ready within 60s")
	}
	c, err := srv.LocalClient()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
