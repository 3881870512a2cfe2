package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/server"
)

// runServerCommand runs `k1s server args...` with the real flags and
// action, and returns the configuration the action would start the server with.
func runServerCommand(t *testing.T, args ...string) (server.Config, error) {
	t.Helper()
	var got server.Config
	var ran bool
	cmd := newServerCommand(func(_ context.Context, cfg server.Config) error {
		got, ran = cfg, true
		return nil
	})
	app := &cli.App{
		Name:           "k1s",
		Commands:       []*cli.Command{cmd},
		Writer:         io.Discard,
		ErrWriter:      io.Discard,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	err := app.Run(append([]string{"k1s", "server"}, args...))
	if err == nil && !ran {
		t.Fatalf("server action did not run")
	}
	return got, err
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clearEnv unsets the K1S_* variables of `k1s server` for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "K1S_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

func TestServerConfigFile(t *testing.T) {
	tests := []struct {
		name    string
		file    string // config file content; "" means no --config
		args    []string
		env     map[string]string
		check   func(t *testing.T, cfg server.Config)
		wantErr []string
	}{
		{
			name: "defaults without a file",
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/var/lib/k1s" || cfg.HTTPSPort != 6443 || cfg.WriteKubeconfigMode != 0o600 || len(cfg.TLSSANs) != 0 {
					t.Errorf("defaults = data-dir %q port %d mode %o SANs %v", cfg.DataDir, cfg.HTTPSPort, cfg.WriteKubeconfigMode, cfg.TLSSANs)
				}
				if cm := cfg.ControllerManager; cm == nil || !slices.Equal(cm.Controllers, []string{"*"}) || !cm.LeaderElect {
					t.Errorf("controller manager defaults = %+v", cm)
				}
			},
		},
		{
			name: "keys set flags",
			file: `
data-dir: /srv/k1s
https-listen-port: 7443
tls-san:
  - k1s.example.com
  - 192.0.2.10
cluster-domain: corp.local
write-kubeconfig-mode: "0644"
default-not-ready-toleration-seconds: 60
leader-elect: false
leader-elect-lease-duration: 30s
controllers: ["*", "-serviceaccount"]
`,
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/srv/k1s" || cfg.HTTPSPort != 7443 || cfg.ClusterDomain != "corp.local" ||
					cfg.WriteKubeconfigMode != 0o644 || cfg.DefaultNotReadyTolerationSeconds != 60 {
					t.Errorf("config = data-dir %q port %d domain %q mode %o toleration %d",
						cfg.DataDir, cfg.HTTPSPort, cfg.ClusterDomain, cfg.WriteKubeconfigMode, cfg.DefaultNotReadyTolerationSeconds)
				}
				if !slices.Equal(cfg.TLSSANs, []string{"k1s.example.com", "192.0.2.10"}) {
					t.Errorf("TLSSANs = %v", cfg.TLSSANs)
				}
				cm := cfg.ControllerManager
				if cm.LeaderElect || cm.LeaseDuration != 30*time.Second || !slices.Equal(cm.Controllers, []string{"*", "-serviceaccount"}) {
					t.Errorf("controller manager = leader-elect %v lease %v controllers %v", cm.LeaderElect, cm.LeaseDuration, cm.Controllers)
				}
			},
		},
		{
			name: "controller settings",
			file: `
disable-scheduler: true
terminated-pod-gc-threshold: 0
node-monitor-grace-period: 20s
node-eviction-rate: 0.5
large-cluster-size-threshold: 7
concurrent-deployment-syncs: 2
`,
			check: func(t *testing.T, cfg server.Config) {
				if !slices.Equal(cfg.ControllerManager.Controllers, []string{"-scheduler", "*"}) {
					t.Errorf("controllers = %v, want the scheduler off", cfg.ControllerManager.Controllers)
				}
				cs := cfg.Controllers
				if cs == nil {
					t.Fatal("no controller settings")
				}
				nl := cs.NodeLifecycle
				if cs.PodGC.TerminatedPodGCThreshold != 0 || nl.NodeMonitorGracePeriod != 20*time.Second ||
					nl.NodeEvictionRate != 0.5 || nl.LargeClusterSizeThreshold != 7 || cs.Deployment.ConcurrentSyncs != 2 {
					t.Errorf("settings = podgc %+v node lifecycle %+v deployment %+v", cs.PodGC, nl, cs.Deployment)
				}
				if nl.NodeMonitorPeriod != 5*time.Second || nl.SecondaryNodeEvictionRate != 0.01 || cs.ReplicaSet.ConcurrentSyncs != 5 {
					t.Errorf("unset settings lost their defaults: node lifecycle %+v replicaset %+v", nl, cs.ReplicaSet)
				}
			},
		},
		{
			name: "alias key",
			file: "d: /alias\n",
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/alias" {
					t.Errorf("data-dir = %q, want /alias", cfg.DataDir)
				}
			},
		},
		{
			name: "comma-separated tls-san string",
			file: "tls-san: a.example.com, b.example.com\n",
			check: func(t *testing.T, cfg server.Config) {
				if !slices.Equal(cfg.TLSSANs, []string{"a.example.com", "b.example.com"}) {
					t.Errorf("TLSSANs = %v", cfg.TLSSANs)
				}
			},
		},
		{
			name: "null value keeps the default",
			file: "data-dir: null\ncluster-domain: ~\n",
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/var/lib/k1s" || cfg.ClusterDomain != "cluster.local" {
					t.Errorf("data-dir %q domain %q, want defaults", cfg.DataDir, cfg.ClusterDomain)
				}
			},
		},
		{
			name: "large integers",
			file: "default-not-ready-toleration-seconds: 1000000\ndefault-unreachable-toleration-seconds: 86400000\n",
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DefaultNotReadyTolerationSeconds != 1000000 || cfg.DefaultUnreachableTolerationSeconds != 86400000 {
					t.Errorf("tolerations = %d, %d", cfg.DefaultNotReadyTolerationSeconds, cfg.DefaultUnreachableTolerationSeconds)
				}
			},
		},
		{
			name: "booleans",
			file: "leader-elect: false\nuse-service-account-credentials: FALSE\n",
			check: func(t *testing.T, cfg server.Config) {
				if cm := cfg.ControllerManager; cm.LeaderElect || cm.UseServiceAccountCredentials {
					t.Errorf("leader-elect %v use-service-account-credentials %v, want both false", cm.LeaderElect, cm.UseServiceAccountCredentials)
				}
			},
		},
		{
			name: "empty file",
			file: "# nothing\n",
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/var/lib/k1s" {
					t.Errorf("data-dir %q, want the default", cfg.DataDir)
				}
			},
		},
		{
			name: "unquoted octal mode",
			file: "write-kubeconfig-mode: 0644\n",
			check: func(t *testing.T, cfg server.Config) {
				if cfg.WriteKubeconfigMode != 0o644 {
					t.Errorf("mode = %o, want 644", cfg.WriteKubeconfigMode)
				}
			},
		},
		{
			name: "command line wins over the file",
			file: "data-dir: /file\ntls-san: [file.example.com]\nhttps-listen-port: 7443\n",
			args: []string{"--data-dir", "/cli", "--tls-san", "cli.example.com"},
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/cli" || !slices.Equal(cfg.TLSSANs, []string{"cli.example.com"}) {
					t.Errorf("data-dir %q SANs %v, want the command line's", cfg.DataDir, cfg.TLSSANs)
				}
				if cfg.HTTPSPort != 7443 {
					t.Errorf("port %d, want the file's 7443", cfg.HTTPSPort)
				}
			},
		},
		{
			name: "environment wins over the file",
			file: "data-dir: /file\ncluster-domain: file.local\n",
			env:  map[string]string{"K1S_DATA_DIR": "/env"},
			check: func(t *testing.T, cfg server.Config) {
				if cfg.DataDir != "/env" || cfg.ClusterDomain != "file.local" {
					t.Errorf("data-dir %q domain %q, want /env and file.local", cfg.DataDir, cfg.ClusterDomain)
				}
			},
		},
		{name: "unknown key", file: "data-dir: /x\nbogus-flag: 1\n", wantErr: []string{"--config", `unknown key "bogus-flag"`}},
		{name: "list for a single-valued flag", file: "data-dir: [/a, /b]\n", wantErr: []string{`key "data-dir" takes one value`}},
		{name: "bad value", file: "https-listen-port: many\n", wantErr: []string{`key "https-listen-port"`}},
		{name: "not a map", file: "- data-dir\n", wantErr: []string{"not a YAML map"}},
		{name: "nested map", file: "data-dir:\n  path: /x\n", wantErr: []string{`key "data-dir": not a value or a list`}},
		{name: "nested list item", file: "tls-san:\n  - [a, b]\n", wantErr: []string{`key "tls-san": list items must be plain values`}},
		{name: "yes is not a boolean", file: "leader-elect: yes\n", wantErr: []string{`key "leader-elect"`}},
		{name: "missing explicit file", args: []string{"--config", "/nonexistent/k1s/config.yaml"}, wantErr: []string{"--config", "/nonexistent/k1s/config.yaml"}},
		{name: "missing file named by the environment", env: map[string]string{"K1S_CONFIG_FILE": "/nonexistent/k1s/env.yaml"}, wantErr: []string{"--config", "/nonexistent/k1s/env.yaml"}},
		{name: "arguments refused", args: []string{"extra"}, wantErr: []string{"takes no arguments", "extra"}},
		{name: "bad kubeconfig mode", args: []string{"--write-kubeconfig-mode", "0999"}, wantErr: []string{"--write-kubeconfig-mode"}},
		{name: "kubeconfig mode too wide", args: []string{"--write-kubeconfig-mode", "1777"}, wantErr: []string{"--write-kubeconfig-mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeFile(t, tt.file)}, args...)
			} else if tt.env["K1S_CONFIG_FILE"] == "" && !slices.Contains(args, "--config") {
				if _, err := os.Stat(DefaultConfigFile); err == nil {
					t.Skipf("%s exists on this machine", DefaultConfigFile)
				}
			}
			cfg, err := runServerCommand(t, args...)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("k1s server %v succeeded, want an error containing %v", args, tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("k1s server %v: %v", args, err)
			}
			tt.check(t, cfg)
		})
	}
}

// A missing default file (not named by --config or the environment) is fine.
func TestLoadConfigFileMissingDefault(t *testing.T) {
	clearEnv(t)
	missing := filepath.Join(t.TempDir(), "config.yaml")
	for _, explicit := range []bool{false, true} {
		cmd := newServerCommand(nil)
		var loadErr error
		cmd.Action = func(c *cli.Context) error {
			loadErr = loadConfigFile(c, missing, explicit)
			return nil
		}
		app := &cli.App{Name: "k1s", Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard}
		if err := app.Run([]string{"k1s", "server"}); err != nil {
			t.Fatal(err)
		}
		if explicit && (loadErr == nil || !strings.Contains(loadErr.Error(), "--config")) {
			t.Errorf("missing explicit file: %v, want an error naming --config", loadErr)
		}
		if !explicit && loadErr != nil {
			t.Errorf("missing default file: %v, want nil", loadErr)
		}
	}
}

func TestPickKubeconfig(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first.yaml")
	second := filepath.Join(dir, "second.yaml")
	for _, p := range []string{first, second} {
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.yaml")
	tests := []struct {
		name       string
		args       []string
		env        string
		candidates []string
		want       string
	}{
		{"first readable candidate", []string{"get", "pods"}, "", []string{missing, first, second}, first},
		{"earlier candidate preferred", nil, "", []string{second, first}, second},
		{"none readable", nil, "", []string{missing}, ""},
		{"--kubeconfig wins", []string{"--kubeconfig", "/x", "get", "pods"}, "", []string{first}, ""},
		{"--kubeconfig= wins", []string{"get", "--kubeconfig=/x"}, "", []string{first}, ""},
		{"$KUBECONFIG wins", []string{"get", "pods"}, "/elsewhere", []string{first}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			if got := pickKubeconfig(tt.args, tt.candidates); got != tt.want {
				t.Errorf("pickKubeconfig = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFindKubeconfigHome(t *testing.T) {
	for _, p := range []string{"/etc/k1s/k1s.yaml", "/var/lib/k1s/server/cred/admin.kubeconfig"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists on this machine", p)
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	if got := findKubeconfig(nil); got != "" {
		t.Errorf("findKubeconfig with nothing on disk = %q, want \"\"", got)
	}
	want := filepath.Join(home, ".kube", "k1s.yaml")
	if err := os.MkdirAll(filepath.Dir(want), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := findKubeconfig([]string{"get", "nodes"}); got != want {
		t.Errorf("findKubeconfig = %q, want %q", got, want)
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{"a"}, []string{"a"}},
		{[]string{"a,b", " c ", ",,", "d, e"}, []string{"a", "b", "c", "d", "e"}},
	}
	for _, tt := range tests {
		if got := splitList(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
