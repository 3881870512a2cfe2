package containerd

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	srvconfig "github.com/containerd/containerd/v2/cmd/containerd/server/config"
	"github.com/pelletier/go-toml/v2"

	"github.com/k1s/k1s/internal/registries"
)

func TestSetDefaults(t *testing.T) {
	var c Config
	c.CNIBinDirs = []string{"/opt/cni/bin"} // keep the machine's /opt out of the result
	c.SetDefaults()
	want := Config{
		DataDir:      "/var/lib/k1s",
		Root:         "/var/lib/k1s/agent/containerd",
		State:        "/run/k1s/containerd",
		Socket:       "/run/k1s/containerd/containerd.sock",
		ConfigFile:   "/var/lib/k1s/agent/etc/containerd/config.toml",
		LogFile:      "/var/lib/k1s/agent/containerd.log",
		PidFile:      "/run/k1s/containerd/containerd.pid",
		SandboxImage: "k1s.local/pause:3.10",
		Snapshotter:  "overlayfs",
		CNIConfDir:   "/var/lib/k1s/agent/etc/cni/net.d",
		CNIBinDirs:   []string{"/opt/cni/bin"},
		ImagesDir:    "/var/lib/k1s/agent/images",
		HostsDir:     "/var/lib/k1s/agent/etc/containerd/certs.d",
		LogLevel:     "info",
		ReadyTimeout: time.Minute,
		StopTimeout:  10 * time.Second,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c.Endpoint() != DefaultEndpoint {
		t.Errorf("Endpoint() = %q, want %q", c.Endpoint(), DefaultEndpoint)
	}
	if got := c.ShimSocketDir(); got != "/run/k1s/containerd/s" || len(got) > 38 {
		t.Errorf("shim socket dir = %q (%d chars), want /run/k1s/containerd/s within 38", got, len(got))
	}

	c = Config{DataDir: "/data"}
	c.SetDefaults()
	if c.Root != "/data/agent/containerd" || c.ImagesDir != "/data/agent/images" || c.State != "/run/k1s/containerd" {
		t.Errorf("paths follow --data-dir except the state: %+v", c)
	}
	if c.CNIBinDirs[0] != "/usr/lib/cni" {
		t.Errorf("CNI bin dirs = %v, want /usr/lib/cni first", c.CNIBinDirs)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"relative data dir", func(c *Config) { c.DataDir = "data" }, `--data-dir: data directory "data" must be an absolute path`},
		{"relative root", func(c *Config) { c.Root = "r" }, `--data-dir: containerd root "r" must be an absolute path`},
		{"long state", func(c *Config) { c.State = "/run/a-very-long-directory-name/containerd" }, `containerd state directory "/run/a-very-long-directory-name/containerd" is longer than 36 characters`},
		{"state at the limit", func(c *Config) { c.State = "/run/k1s-test-abcdef/containerd" }, ""},
		{"long socket", func(c *Config) { c.Socket = "/" + strings.Repeat("s", 107) }, "is longer than 107 characters"},
		{"relative CNI bin dir", func(c *Config) { c.CNIBinDirs = []string{"cni"} }, `CNI bin dirs: CNI plugin directory "cni" must be an absolute path`},
		{"empty sandbox image", func(c *Config) { c.SandboxImage = "" }, "--pause-image: sandbox image must not be empty"},
		{"bad log level", func(c *Config) { c.LogLevel = "loud" }, `containerd log level "loud"`},
		{"negative timeout", func(c *Config) { c.StopTimeout = -time.Second }, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{}
			c.SetDefaults()
			tc.mutate(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{DataDir: "relative"}); err == nil {
		t.Fatal("New accepted a relative data dir")
	}
	c, err := New(Config{DataDir: "/data", Executable: "/usr/bin/k1s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config().Executable != "/usr/bin/k1s" || c.Endpoint() != "unix:///run/k1s/containerd/containerd.sock" {
		t.Errorf("config %+v, endpoint %s", c.Config(), c.Endpoint())
	}
	select {
	case <-c.Ready():
		t.Error("ready before Run")
	default:
	}
}

// get walks a decoded TOML document.
func get(t *testing.T, doc map[string]any, path ...string) any {
	t.Helper()
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%v: %q is not a table", path, p)
		}
		if cur, ok = m[p]; !ok {
			t.Fatalf("config has no %v", path)
		}
	}
	return cur
}

func TestRenderConfig(t *testing.T) {
	c := Config{DataDir: "/data", State: "/run/k1s-x/containerd", CNIBinDirs: []string{"/usr/lib/cni", "/opt/cni/bin"}, SandboxImage: `k1s.local/pause:"q"`}
	c.SetDefaults()
	text := renderConfig(c, nil)
	var doc map[string]any
	if err := toml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("generated config is not TOML: %v\n%s", err, text)
	}
	cri := "io.containerd.cri.v1.runtime"
	runc := []string{"plugins", cri, "containerd", "runtimes", "runc"}
	checks := []struct {
		path []string
		want any
	}{
		{[]string{"version"}, int64(4)},
		{[]string{"root"}, "/data/agent/containerd"},
		{[]string{"state"}, "/run/k1s-x/containerd"},
		{[]string{"imports"}, []any{}},
		{[]string{"plugins", "io.containerd.server.v1.grpc", "address"}, "/run/k1s-x/containerd/containerd.sock"},
		{[]string{"plugins", "io.containerd.server.v1.ttrpc", "address"}, "/run/k1s-x/containerd/containerd.sock.ttrpc"},
		{[]string{"plugins", "io.containerd.grpc.v1.cri", "stream_server_address"}, "127.0.0.1"},
		{[]string{"plugins", "io.containerd.grpc.v1.cri", "stream_server_port"}, "0"},
		{[]string{"plugins", cri, "restrict_oom_score_adj"}, true},
		{[]string{"plugins", cri, "cdi_spec_dirs"}, []any{}},
		{[]string{"plugins", cri, "netns_mounts_under_state_dir"}, true},
		{append(runc, "runtime_type"), "io.containerd.runc.v2"},
		{append(runc, "snapshotter"), "overlayfs"},
		{append(runc, "options", "SystemdCgroup"), false},
		{append(runc, "options", "Root"), "/run/k1s-x/containerd/runc"},
		{[]string{"plugins", cri, "cni", "conf_dir"}, "/data/agent/etc/cni/net.d"},
		{[]string{"plugins", cri, "cni", "bin_dirs"}, []any{"/usr/lib/cni", "/opt/cni/bin"}},
		{[]string{"plugins", cri, "cni", "use_internal_loopback"}, true},
		{[]string{"plugins", "io.containerd.cri.v1.images", "snapshotter"}, "overlayfs"},
		{[]string{"plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox"}, `k1s.local/pause:"q"`},
		{[]string{"plugins", "io.containerd.shim.v1.manager", "socket_dir"}, "/run/k1s-x/containerd/s"},
	}
	for _, ch := range checks {
		if got := get(t, doc, ch.path...); !reflect.DeepEqual(got, ch.want) {
			t.Errorf("%v = %#v, want %#v", ch.path, got, ch.want)
		}
	}
	// No registry is configured anywhere.
	images := get(t, doc, "plugins", "io.containerd.cri.v1.images").(map[string]any)
	if _, ok := images["registry"]; ok {
		t.Errorf("the config configures a registry: %v", images["registry"])
	}
	if strings.Contains(text, "mirrors") || strings.Contains(text, "config_path") {
		t.Errorf("the config mentions registry mirrors or a hosts config path:\n%s", text)
	}
	disabled := get(t, doc, "disabled_plugins").([]any)
	for _, p := range []string{"io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt"} {
		if !containsAny(disabled, p) {
			t.Errorf("plugin %s is not disabled (it claims a machine-wide path)", p)
		}
	}
}

// TestRenderConfigWithRegistry: with --private-registry, the CRI reads
// the hosts directory and the credentials, and containerd's own loader
// takes the file.
func TestRenderConfigWithRegistry(t *testing.T) {
	reg, err := registries.Parse([]byte(`
mirrors:
  docker.io:
    endpoint: ["https://registry.example.com:5000"]
configs:
  "registry.example.com:5000":
    auth: {username: "u\"1", password: p}
  docker.io:
    auth: {auth: dTpw}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := Config{DataDir: "/data"}
	c.SetDefaults()
	text := renderConfig(c, reg)
	var doc map[string]any
	if err := toml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("generated config is not TOML: %v\n%s", err, text)
	}
	registry := []string{"plugins", "io.containerd.cri.v1.images", "registry"}
	for _, ch := range []struct {
		path []string
		want any
	}{
		{append(registry, "config_path"), "/data/agent/etc/containerd/certs.d"},
		{append(registry, "configs", "registry.example.com:5000", "auth", "username"), `u"1`},
		{append(registry, "configs", "registry.example.com:5000", "auth", "password"), "p"},
		{append(registry, "configs", "registry-1.docker.io", "auth", "auth"), "dTpw"},
	} {
		if got := get(t, doc, ch.path...); !reflect.DeepEqual(got, ch.want) {
			t.Errorf("%v = %#v, want %#v", ch.path, got, ch.want)
		}
	}
	if strings.Contains(text, "No registry is configured") {
		t.Error("the config says no registry is configured")
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg srvconfig.Config
	if err := srvconfig.LoadConfig(context.Background(), path, &cfg); err != nil {
		t.Fatalf("containerd cannot load the config: %v", err)
	}
}

func TestNewRefusesABadRegistriesFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "registries.yaml")
	if err := os.WriteFile(bad, []byte("mirrors:\n  docker.io:\n    endpoints: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{DataDir: dir, Executable: "/bin/true", PrivateRegistry: bad})
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "endpoints") {
		t.Fatalf("New = %v, want the file and the key named", err)
	}
	if _, err := New(Config{DataDir: dir, Executable: "/bin/true", PrivateRegistry: filepath.Join(dir, "missing.yaml")}); err != nil {
		t.Fatalf("a missing registries file: %v", err)
	}
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestRenderConfigLoadsInContainerd checks containerd's own loader takes
// the file as a current (version 4) config, with nothing to migrate.
func TestRenderConfigLoadsInContainerd(t *testing.T) {
	c := Config{DataDir: "/data"}
	c.SetDefaults()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(renderConfig(c, nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg srvconfig.Config
	if err := srvconfig.LoadConfig(context.Background(), path, &cfg); err != nil {
		t.Fatalf("containerd cannot load the config: %v", err)
	}
	if err := cfg.ValidateVersion(); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 4 || cfg.Root != "/data/agent/containerd" || cfg.State != "/run/k1s/containerd" {
		t.Errorf("loaded version %d root %q state %q", cfg.Version, cfg.Root, cfg.State)
	}
	if len(cfg.Imports) != 0 {
		t.Errorf("imports = %v, want none (no /etc/containerd drop-ins)", cfg.Imports)
	}
}

func TestTOMLString(t *testing.T) {
	cases := map[string]string{
		"plain":      `"plain"`,
		`a"b`:        `"a\"b"`,
		`c:\d`:       `"c:\\d"`,
		"tab\there":  `"tab\u0009here"`,
		"ünïcode/日本": `"ünïcode/日本"`,
	}
	for in, want := range cases {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
		var v struct{ S string }
		if err := toml.Unmarshal([]byte("S = "+tomlString(in)), &v); err != nil || v.S != in {
			t.Errorf("%q does not round-trip: %q, %v", in, v.S, err)
		}
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"HOME=/root", "PATH=/usr/bin:/custom", "NOTIFY_SOCKET=/run/systemd/notify", "GODEBUG=x=1"}, "/data/bin")
	want := []string{
		"HOME=/root",
		"PATH=/data/bin:/usr/bin:/custom:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin",
		"GODEBUG=x=1,memprofilerate=0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("childEnv:\n got %q\nwant %q", got, want)
	}
	got = childEnv(nil, "/b")
	if got[0] != "PATH=/b:"+systemPath || got[1] != "GODEBUG=memprofilerate=0" {
		t.Errorf("childEnv with no environment = %q", got)
	}
}
