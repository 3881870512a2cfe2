package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/server"
)

// runSnapshotCommand runs `k1s etcd-snapshot args...` and returns its output.
func runSnapshotCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{
		Name:           "k1s",
		Commands:       []*cli.Command{etcdSnapshotCommand()},
		Writer:         &out,
		ErrWriter:      &out,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	err := app.Run(append([]string{"k1s", "etcd-snapshot"}, args...))
	return out.String(), err
}

func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestEtcdSnapshotFiles(t *testing.T) {
	clearEnv(t)
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "server", "db", "snapshots")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"on-demand-n-100", "on-demand-n-200", "on-demand-n-300.zip", "etcd-snapshot-n-150"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("db"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--config", writeFile(t, "{}\n"), "--data-dir", dataDir}

	out, err := runSnapshotCommand(t, append([]string{"ls"}, common...)...)
	if err != nil {
		t.Fatalf("ls: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Name") || !strings.HasPrefix(lines[1], "on-demand-n-300.zip") || !strings.Contains(lines[1], "file://"+dir) {
		t.Errorf("ls printed:\n%s", out)
	}
	out, err = runSnapshotCommand(t, append([]string{"list", "-o", "json"}, common...)...)
	if err != nil {
		t.Fatalf("ls -o json: %v", err)
	}
	var items []snapshotListItem
	if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) != 4 || !items[0].Compressed {
		t.Errorf("ls -o json = %v (%v):\n%s", items, err, out)
	}

	if _, err := runSnapshotCommand(t, append([]string{"prune", "--snapshot-retention", "1"}, common...)...); err != nil {
		t.Fatalf("prune: %v", err)
	}
	if got, want := snapshotFiles(t, dir), []string{"etcd-snapshot-n-150", "on-demand-n-300.zip"}; !slices.Equal(got, want) {
		t.Errorf("after prune: %v, want %v (the newest on-demand one and the other name's)", got, want)
	}

	if _, err := runSnapshotCommand(t, append([]string{"delete"}, append(common, "etcd-snapshot-n-150")...)...); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if got := snapshotFiles(t, dir); !slices.Equal(got, []string{"on-demand-n-300.zip"}) {
		t.Errorf("after delete: %v", got)
	}
	if _, err := runSnapshotCommand(t, append([]string{"delete"}, append(common, "missing")...)...); err == nil || !strings.Contains(err.Error(), "missing not found") {
		t.Errorf("delete of a missing snapshot = %v", err)
	}
}

func TestEtcdSnapshotRefusals(t *testing.T) {
	clearEnv(t)
	dataDir := t.TempDir()
	serverConfig := writeFile(t, "datastore-endpoint: https://db.example:2379\nnode-name: n\ncluster-cidr: 10.42.0.0/16\n")
	empty := writeFile(t, "{}\n")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"external datastore from the server's config file", []string{"save", "--config", serverConfig, "--data-dir", dataDir}, "external datastore"},
		{"no server data", []string{"save", "--config", empty, "--data-dir", dataDir}, "no etcd client certificate"},
		{"bad name", []string{"save", "--config", empty, "--data-dir", dataDir, "--name", "a/b"}, "--name"},
		{"bad retention", []string{"prune", "--config", empty, "--data-dir", dataDir, "--snapshot-retention", "0"}, "--snapshot-retention"},
		{"delete without names", []string{"delete", "--config", empty, "--data-dir", dataDir}, "name the snapshots"},
		{"bad output", []string{"ls", "--config", empty, "--data-dir", dataDir, "-o", "yaml"}, "--output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runSnapshotCommand(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}

func TestServerSnapshotFlags(t *testing.T) {
	clearEnv(t)
	restore := filepath.Join(t.TempDir(), "snap")
	if err := os.WriteFile(restore, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, cfg server.Config)
		wantErr string
	}{{
		name: "defaults",
		check: func(t *testing.T, cfg server.Config) {
			s := cfg.EtcdSnapshots
			if s.Cron != "0 */12 * * *" || s.Retention != 5 || s.Name != "etcd-snapshot" || s.Dir != "" || s.Compress || cfg.DisableSnapshots || cfg.ClusterReset {
				t.Errorf("snapshot defaults = %+v", s)
			}
		},
	}, {
		name: "set",
		args: []string{"--etcd-snapshot-schedule-cron", "@every 5s", "--etcd-snapshot-retention", "2", "--etcd-snapshot-dir", "/snap", "--etcd-snapshot-compress", "--disable-snapshots", "--cluster-reset", "--cluster-reset-restore-path", restore},
		check: func(t *testing.T, cfg server.Config) {
			s := cfg.EtcdSnapshots
			if s.Cron != "@every 5s" || s.Retention != 2 || s.Dir != "/snap" || !s.Compress || !cfg.DisableSnapshots || !cfg.ClusterReset || cfg.ClusterResetRestorePath != restore {
				t.Errorf("snapshot flags = %+v", cfg)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := runServerCommand(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}

	// The server's validation names the flags.
	for _, tt := range []struct {
		mutate  func(*server.Config)
		wantErr string
	}{
		{func(c *server.Config) { c.EtcdSnapshots.Cron = "every day" }, "--etcd-snapshot-schedule-cron"},
		{func(c *server.Config) { c.EtcdSnapshots.Retention = -1 }, "--etcd-snapshot-retention"},
		{func(c *server.Config) { c.ClusterResetRestorePath = restore }, "needs --cluster-reset"},
		{func(c *server.Config) { c.ClusterReset, c.ClusterResetRestorePath = true, "/nonexistent" }, "--cluster-reset-restore-path"},
		{func(c *server.Config) { c.ClusterReset, c.DatastoreEndpoint = true, "https://db:2379" }, "--cluster-reset"},
	} {
		cfg := server.Config{NodeName: "n", NodeIP: "127.0.0.1"}
		cfg.EtcdSnapshots.Retention = 5
		tt.mutate(&cfg)
		if _, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("server.New = %v, want an error naming %s", err, tt.wantErr)
		}
	}
}
