package registries

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker/config"
)

// TestContainerdReadsTheHostsDir checks containerd's own hosts.toml loader
// makes of the written directory the hosts k3s's documentation describes.
func TestContainerdReadsTheHostsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs.d")
	r, err := Parse([]byte(`
mirrors:
  docker.io:
    endpoint: ["http://registry.example.com:5000", "https://m2.example.com/mirror/path"]
  "*":
    endpoint: ["https://any.example.com"]
configs:
  m2.example.com:
    tls: {insecure_skip_verify: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHostsDir(dir, r); err != nil {
		t.Fatal(err)
	}
	hosts := config.ConfigureHosts(context.Background(), config.HostOptions{HostDir: config.HostDirFromRoot(dir)})
	type host struct{ scheme, host, path string }
	for _, tc := range []struct {
		registry string
		want     []host
	}{
		{"docker.io", []host{{"http", "registry.example.com:5000", "/v2"}, {"https", "m2.example.com", "/mirror/path"}, {"https", "registry-1.docker.io", "/v2"}}},
		{"quay.io", []host{{"https", "any.example.com", "/v2"}, {"https", "quay.io", "/v2"}}},
	} {
		got, err := hosts(tc.registry)
		if err != nil {
			t.Fatalf("%s: %v", tc.registry, err)
		}
		var have []host
		for _, h := range got {
			have = append(have, host{h.Scheme, h.Host, h.Path})
		}
		if len(have) != len(tc.want) {
			t.Fatalf("%s: hosts %v, want %v", tc.registry, have, tc.want)
		}
		for i := range have {
			if have[i] != tc.want[i] {
				t.Errorf("%s: host %d is %v, want %v", tc.registry, i, have[i], tc.want[i])
			}
		}
	}
}
