package etcd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
)

// TestRestore saves a snapshot of a member with etcd's snapshot library,
// restores it into a new data directory and starts a member there: the
// keys written before the snapshot are there with their revisions, the
// one written after is not, and the member is a cluster of itself alone
// that takes writes.
func TestRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	c := testPKI(t)
	cfg := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
	r := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := newClient(t, c, r.srv.Endpoint(), c.EtcdClient)
	for i := range 50 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/k1s/key-%02d", i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := cli.Get(ctx, "/k1s/key-49")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := transport.TLSInfo{CertFile: c.EtcdClient.CertFile, KeyFile: c.EtcdClient.KeyFile, TrustedCAFile: c.EtcdCA.CertFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	snapPath := filepath.Join(t.TempDir(), "snap.db")
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: []string{r.srv.Endpoint()}, TLS: tlsCfg}, snapPath); err != nil {
		t.Fatalf("save: %v", err)
	}
	if _, err := cli.Put(ctx, "/k1s/after", "x"); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	cfg2 := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
	cfg2.Name = "restored"
	cfg2.ForceNewCluster = true
	srv, err := New(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Restore(snapPath); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if err := srv.Restore(snapPath); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Restore into a member's directory = %v, want a refusal", err)
	}
	r2 := start(t, cfg2)
	cli2 := newClient(t, c, r2.srv.Endpoint(), c.EtcdClient)
	resp, err := cli2.Get(ctx, "/k1s/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("Get after restore: %v", err)
	}
	if len(resp.Kvs) != 50 {
		t.Errorf("restored %d keys, want the 50 written before the snapshot", len(resp.Kvs))
	}
	got, err := cli2.Get(ctx, "/k1s/key-49")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || got.Kvs[0].ModRevision != before.Kvs[0].ModRevision {
		t.Errorf("key-49 after restore = %v, want mod revision %d", got.Kvs, before.Kvs[0].ModRevision)
	}
	if _, err := cli2.Put(ctx, "/k1s/new", "y"); err != nil {
		t.Errorf("Put after restore: %v", err)
	}
	members, err := r2.srv.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0].Name != "restored" || members[0].PeerURLs[0] != r2.srv.PeerURL() {
		t.Errorf("members after restore = %+v, want restored at %s alone", members, r2.srv.PeerURL())
	}
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
	// And it starts again without ForceNewCluster, data kept.
	cfg2.ForceNewCluster = false
	cfg2.ClientPort, cfg2.PeerPort = freePort(t), freePort(t)
	r3 := start(t, cfg2)
	cli3 := newClient(t, c, r3.srv.Endpoint(), c.EtcdClient)
	if resp, err := cli3.Get(ctx, "/k1s/new"); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("Get after a restart = %v, %v", resp, err)
	}
}

func TestRestoreRefusesBadSnapshot(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"short":   []byte("not a snapshot"),
		"corrupt": make([]byte, 1024+32),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "etcd")
			err := restore(path, out, "k1s", "http://127.0.0.1:2380")
			if err == nil {
				t.Fatal("restore succeeded")
			}
			if _, statErr := os.Stat(filepath.Join(out, "member")); !os.IsNotExist(statErr) {
				t.Errorf("a failed restore left %s/member behind", out)
			}
		})
	}
}
