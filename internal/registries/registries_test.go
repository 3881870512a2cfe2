package registries

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const header = "# Written by k1s from --private-registry on every start: edit that file, not this one.\n"

// The examples of k3s's "Private Registry Configuration" page.
func TestHostsFilesK3sExamples(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		want  map[string]string
		creds map[string]AuthConfig
	}{
		{name: "mirror with auth and TLS",
			yaml: `
mirrors:
  docker.io:
    endpoint:
      - "https://registry.example.com:5000"
configs:
  "registry.example.com:5000":
    auth:
      username: xxxxxx # this is the registry username
      password: yyyyyy # this is the registry password
    tls:
      cert_file: /etc/ssl/reg.crt
      key_file: /etc/ssl/reg.key
      ca_file: /etc/ssl/ca.crt
`,
			want: map[string]string{
				"docker.io": header + `server = "https://registry-1.docker.io/v2"
capabilities = ["pull", "resolve", "push"]

[host."https://registry.example.com:5000/v2"]
  capabilities = ["pull", "resolve"]
  ca = ["/etc/ssl/ca.crt"]
  client = [["/etc/ssl/reg.crt", "/etc/ssl/reg.key"]]
`,
				"registry.example.com:5000": header + `server = "https://registry.example.com:5000/v2"
capabilities = ["pull", "resolve", "push"]
ca = ["/etc/ssl/ca.crt"]
client = [["/etc/ssl/reg.crt", "/etc/ssl/reg.key"]]
`,
			},
			creds: map[string]AuthConfig{"registry.example.com:5000": {Username: "xxxxxx", Password: "yyyyyy"}},
		},
		{name: "plain http mirror, auth as a token, docker hub credentials",
			yaml: `
mirrors:
  docker.io:
    endpoint:
      - "http://registry.example.com:5000"
      - "https://docker.io"
configs:
  "registry.example.com:5000":
    auth:
      auth: eHh4eHh4Onl5eXl5eQ==
  docker.io:
    auth:
      identitytoken: tok
    tls:
      insecure_skip_verify: true
`,
			want: map[string]string{
				"docker.io": header + `server = "https://registry-1.docker.io/v2"
capabilities = ["pull", "resolve", "push"]
skip_verify = true

[host."http://registry.example.com:5000/v2"]
  capabilities = ["pull", "resolve"]
`,
				"registry.example.com:5000": header + `server = "https://registry.example.com:5000/v2"
capabilities = ["pull", "resolve", "push"]
`,
			},
			creds: map[string]AuthConfig{
				"registry.example.com:5000": {Auth: "eHh4eHh4Onl5eXl5eQ=="},
				"registry-1.docker.io":      {IdentityToken: "tok"},
			},
		},
		{name: "wildcard mirror, a path endpoint, a loopback endpoint",
			yaml: `
mirrors:
  "*":
    endpoint:
      - "https://registry.example.com:5000/some/path"
      - "127.0.0.1:5001"
      - "127.0.0.1:5001"
`,
			want: map[string]string{
				"_default": header + `
[host."https://registry.example.com:5000/some/path"]
  capabilities = ["pull", "resolve"]
  override_path = true

[host."http://127.0.0.1:5001/v2"]
  capabilities = ["pull", "resolve"]
`,
			},
			creds: map[string]AuthConfig{},
		},
		{name: "empty file", yaml: "", want: map[string]string{}, creds: map[string]AuthConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, r.HostsFiles()); diff != "" {
				t.Errorf("hosts files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.creds, r.Credentials()); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "mirrors:\n  docker.io:\n    endpoints: [\"x\"]\n", "field endpoints not found"},
		{"not yaml", "mirrors: [", "not k3s's registries.yaml format"},
		{"rewrite", "mirrors:\n  docker.io:\n    endpoint: [\"m.example.com\"]\n    rewrite:\n      \"^rancher/(.*)\": \"mirrored/$1\"\n",
			`mirrors."docker.io".rewrite: not supported by k1s`},
		{"bad scheme", "mirrors:\n  docker.io:\n    endpoint: [\"ftp://m.example.com\"]\n", `mirrors."docker.io".endpoint[0]: "ftp://m.example.com": scheme "ftp"`},
		{"registry with a path", "mirrors:\n  example.com/x:\n    endpoint: [\"m.example.com\"]\n", `mirrors."example.com/x": a registry is a host[:port]`},
		{"half a key pair", "configs:\n  r.example.com:\n    tls:\n      cert_file: /c\n", `configs."r.example.com".tls: cert_file and key_file go together`},
		{"relative CA", "configs:\n  r.example.com:\n    tls:\n      ca_file: ca.crt\n", `configs."r.example.com".tls.ca_file: "ca.crt" must be an absolute path`},
		{"wildcard config", "configs:\n  \"*\":\n    auth: {username: u}\n", `configs."*": credentials and TLS are per host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if r, err := Load(filepath.Join(dir, "missing.yaml")); r != nil || err != nil {
		t.Fatalf("missing file: %v, %v; want no configuration", r, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("mirror:\n  docker.io: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad)
	if err == nil || !strings.Contains(err.Error(), "--private-registry "+bad) || !strings.Contains(err.Error(), "field mirror not found") {
		t.Fatalf("error %v, want the file and the key named", err)
	}
}

func TestWriteHostsDirReplacesTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs.d")
	r, err := Parse([]byte("mirrors:\n  docker.io:\n    endpoint: [\"m.example.com\"]\n  quay.io:\n    endpoint: [\"q.example.com\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHostsDir(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "quay.io", "hosts.toml"))
	if err != nil || !strings.Contains(string(got), `[host."https://q.example.com/v2"]`) {
		t.Fatalf("quay.io hosts.toml %q, %v", got, err)
	}
	r, _ = Parse([]byte("mirrors:\n  docker.io:\n    endpoint: [\"m.example.com\"]\n"))
	if err := WriteHostsDir(dir, r); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "docker.io" {
		t.Errorf("after rewrite the directory holds %v, want docker.io only", entries)
	}
	if err := WriteHostsDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("no registry configuration left %v", entries)
	}
	siblings, _ := os.ReadDir(filepath.Dir(dir))
	if len(siblings) != 1 {
		t.Errorf("temporary directories left beside the hosts directory: %v", siblings)
	}
}
