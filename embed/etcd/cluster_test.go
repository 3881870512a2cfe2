package etcd

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/k1s/k1s/internal/pki"
)

// clusterConfig is a member of a cluster on loopback: its peers at
// 127.0.0.1 with TLS.
func clusterConfig(t *testing.T, c *pki.Cluster, name string) Config {
	t.Helper()
	cfg := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
	cfg.Name = name
	cfg.PeerIP = net.IPv4(127, 0, 0, 1)
	cfg.PeerCertFile, cfg.PeerKeyFile = c.EtcdPeer.CertFile, c.EtcdPeer.KeyFile
	return cfg
}

func memberNames(t *testing.T, ctx context.Context, s *Server) (names []string, learners int) {
	t.Helper()
	ms, err := s.Members(ctx)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	for _, m := range ms {
		names = append(names, m.Name)
		if m.IsLearner {
			learners++
		}
	}
	slices.Sort(names)
	return names, learners
}

// TestCluster: a member started for a cluster takes two more, each as a
// learner that promotes itself before it is Ready; with one of three
// stopped the others still write; a member back with an empty data dir
// takes its old place.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testPKI(t)
	cfg1 := clusterConfig(t, c, "m1")
	m1 := start(t, cfg1)
	if got, want := m1.srv.PeerURL(), "https://127.0.0.1:"; !strings.HasPrefix(got, want) {
		t.Fatalf("PeerURL() = %s, want %s…", got, want)
	}

	join := func(via *Server, name string) (*running, Config) {
		t.Helper()
		cfg := clusterConfig(t, c, name)
		probe, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		initial, err := via.AddLearner(ctx, name, probe.PeerURL())
		if err != nil {
			t.Fatalf("AddLearner(%s): %v", name, err)
		}
		if !strings.Contains(initial, name+"="+probe.PeerURL()) {
			t.Fatalf("initial cluster %q does not name %s", initial, name)
		}
		cfg.InitialCluster = initial
		return start(t, cfg), cfg
	}
	m2, _ := join(m1.srv, "m2")
	// Ready means promoted.
	if names, learners := memberNames(t, ctx, m2.srv); !slices.Equal(names, []string{"m1", "m2"}) || learners != 0 {
		t.Fatalf("members %v with %d learners, want m1 and m2 voting", names, learners)
	}
	m3, cfg3 := join(m2.srv, "m3")
	if names, learners := memberNames(t, ctx, m1.srv); !slices.Equal(names, []string{"m1", "m2", "m3"}) || learners != 0 {
		t.Fatalf("members %v with %d learners, want m1, m2 and m3 voting", names, learners)
	}

	local1, err := m1.srv.LocalClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local1.Put(ctx, "/k1s/ha", "one"); err != nil {
		t.Fatal(err)
	}
	if err := m1.stop(t); err != nil {
		t.Fatalf("stop m1: %v", err)
	}
	local3, err := m3.srv.LocalClient()
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if _, err := local3.Put(wctx, "/k1s/ha", "two"); err != nil {
		t.Fatalf("write with one member of three down: %v", err)
	}
	resp, err := local3.Get(wctx, "/k1s/ha")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "two" {
		t.Fatalf("read with one member of three down: %v %v", resp, err)
	}

	t.Run("a member back with an empty data dir takes its old place", func(t *testing.T) {
		if err := m3.stop(t); err != nil {
			t.Fatal(err)
		}
		// m1 comes back, so that m2 and m1 are a quorum.
		cfg1.ClientPort = freePort(t)
		m1 = start(t, cfg1)
		fresh := cfg3
		fresh.DataDir = filepath.Join(t.TempDir(), "etcd")
		fresh.InitialCluster = ""
		probe, err := New(fresh)
		if err != nil {
			t.Fatal(err)
		}
		initial, err := m2.srv.AddLearner(ctx, "m3", probe.PeerURL())
		if err != nil {
			t.Fatalf("AddLearner again: %v", err)
		}
		fresh.InitialCluster = initial
		m3b := start(t, fresh)
		names, learners := memberNames(t, ctx, m3b.srv)
		if !slices.Equal(names, []string{"m1", "m2", "m3"}) || learners != 0 {
			t.Fatalf("members %v with %d learners, want m1, m2 and m3 voting", names, learners)
		}
		local, err := m3b.srv.LocalClient()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := local.Get(ctx, "/k1s/ha")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "two" {
			t.Fatalf("the new m3 reads %v %v", resp, err)
		}
	})
}

// TestClusterInitOnALoneMember: a member that ran alone (peer URL on
// loopback, no TLS) started again for a cluster publishes its new peer
// URL; a lone member takes no others.
func TestClusterInitOnALoneMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testPKI(t)
	cfg := testConfig(t, c, filepath.Join(t.TempDir(), "etcd"))
	lone := start(t, cfg)
	if _, err := lone.srv.AddLearner(ctx, "m2", "https://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "--cluster-init") {
		t.Errorf("AddLearner on a lone member = %v, want an error naming --cluster-init", err)
	}
	if err := lone.stop(t); err != nil {
		t.Fatal(err)
	}
	cfg.PeerIP = net.IPv4(127, 0, 0, 1)
	cfg.PeerCertFile, cfg.PeerKeyFile = c.EtcdPeer.CertFile, c.EtcdPeer.KeyFile
	r := start(t, cfg)
	ms, err := r.srv.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || !slices.Equal(ms[0].PeerURLs, []string{r.srv.PeerURL()}) || !strings.HasPrefix(r.srv.PeerURL(), "https://") {
		t.Fatalf("members %+v, want one at %s", ms, r.srv.PeerURL())
	}
}
