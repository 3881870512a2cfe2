package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/freeport"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server/etcdsnapshot"
)

// TestClusterReset takes a snapshot of a member with the scheduler's save
// (etcd's snapshot library, over TLS), writes after it, and runs the
// reset with the snapshot: the old directory is moved aside, the
// snapshot's data is back, the later write is gone, reset-flag is
// written, and a second reset is refused.
func TestClusterReset(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	dataDir := t.TempDir()
	cluster, err := pki.Ensure(pki.Config{Dir: filepath.Join(dataDir, "server", "tls"), Hostname: "test"})
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
	ec := etcd.Config{
		DataDir: filepath.Join(dataDir, "server", "db", "etcd"), ClientPort: port(), PeerPort: port(),
		CertFile: cluster.EtcdServer.CertFile, KeyFile: cluster.EtcdServer.KeyFile, TrustedCAFile: cluster.EtcdCA.CertFile, LogLevel: "error",
	}
	e, err := etcd.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), klog.Background())
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	<-e.Ready()
	cli, err := e.LocalClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/before", "1"); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{DataDir: dataDir, NodeName: "n", NodeIP: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.snapshotScheduler(e.Endpoint(), cluster); err != nil {
		t.Fatalf("the default schedule: %v", err)
	}
	f, err := etcdsnapshot.Take(ctx, etcdsnapshot.SaveFrom(etcdsnapshot.Etcd{Endpoint: e.Endpoint(), CAFile: cluster.EtcdCA.CertFile, CertFile: cluster.EtcdClient.CertFile, KeyFile: cluster.EtcdClient.KeyFile}),
		etcdsnapshot.Options{Dir: etcdsnapshot.DefaultDir(dataDir), Name: "t", NodeName: "n", Compress: true}, time.Now())
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := cli.Put(ctx, "/registry/after", "2"); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s, err = New(Config{DataDir: dataDir, NodeName: "n", NodeIP: "127.0.0.1", ClusterReset: true, ClusterResetRestorePath: f.Path})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.clusterReset(ctx, ec); err != nil {
		t.Fatalf("clusterReset: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "server", "db"))
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	joined := strings.Join(names, " ")
	if !strings.Contains(joined, "etcd-old-") || !strings.Contains(joined, "reset-flag") || strings.Contains(joined, ".restore-") {
		t.Errorf("db dir after the reset: %v, want etcd-old-<time>, reset-flag and no decompressed snapshot", names)
	}
	if err := s.clusterReset(ctx, ec); err == nil || !strings.Contains(err.Error(), "cluster-reset was successfully performed") {
		t.Errorf("a second reset = %v, want k3s's refusal", err)
	}

	e, err = etcd.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop = context.WithCancel(ctx)
	defer stop()
	go func() { done <- e.Run(runCtx) }()
	<-e.Ready()
	cli, err = e.LocalClient()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != "/registry/before" {
		t.Errorf("after the restore: %v, want /registry/before alone", resp.Kvs)
	}
	stop()
	<-done
}
