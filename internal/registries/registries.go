// Package registries reads k3s's registries.yaml (--private-registry) and
// turns it into what containerd 2.x reads: one hosts.toml per registry in
// a hosts directory (the CRI's registry config_path) for mirrors and TLS,
// and per-host credentials for the CRI's registry configs.
//
// The file's format is k3s's:
//
//	mirrors:
//	  docker.io:
//	    endpoint: ["https://mirror.example.com:5000"]
//	configs:
//	  mirror.example.com:5000:
//	    auth: {username: u, password: p}   # or auth: <base64 u:p>, identitytoken
//	    tls: {ca_file: ..., cert_file: ..., key_file: ..., insecure_skip_verify: false}
//
// A mirror named "*" applies to every registry (containerd's _default
// directory). k3s's per-mirror `rewrite` is refused: it needs k3s's patched
// containerd; upstream containerd 2.4's hosts.toml has no such key.
package registries

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Registry is the content of registries.yaml.
type Registry struct {
	// Mirrors maps a registry host (or "*") to the endpoints tried, in
	// order, before the registry itself.
	Mirrors map[string]Mirror `yaml:"mirrors"`
	// Configs maps a registry or mirror host to its credentials and TLS.
	Configs map[string]RegistryConfig `yaml:"configs"`
}

// Mirror is one registry's mirrors.
type Mirror struct {
	Endpoints []string `yaml:"endpoint"`
	// Rewrites are k3s's repository rewrites; refused (see the package doc).
	Rewrites map[string]string `yaml:"rewrite"`
}

// RegistryConfig is one host's credentials and TLS settings.
type RegistryConfig struct {
	Auth *AuthConfig `yaml:"auth"`
	TLS  *TLSConfig  `yaml:"tls"`
}

// AuthConfig are the credentials for a host, as the CRI takes them.
type AuthConfig struct {
	Username      string `yaml:"username"`
	Password      string `yaml:"password"`
	Auth          string `yaml:"auth"`
	IdentityToken string `yaml:"identitytoken"`
}

// TLSConfig is how a host's TLS is verified and which client certificate
// is presented.
type TLSConfig struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Load reads path. A missing file is no registry configuration (nil, nil);
// a file that does not parse, or holds an unknown key or a bad value, is an
// error naming the file and the key.
func Load(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--private-registry: %w", err)
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--private-registry %s: %w", path, err)
	}
	return r, nil
}

// Parse reads registries.yaml content and validates it.
func Parse(data []byte) (*Registry, error) {
	r := &Registry{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(r); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not k3s's registries.yaml format: %w", err)
	}
	return r, r.validate()
}

func (r *Registry) validate() error {
	var errs []error
	for _, host := range sortedKeys(r.Mirrors) {
		m := r.Mirrors[host]
		key := fmt.Sprintf("mirrors.%q", host)
		if host != "*" {
			if err := checkHost(host); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
		}
		if len(m.Rewrites) > 0 {
			errs = append(errs, fmt.Errorf("%s.rewrite: not supported by k1s: upstream containerd's hosts.toml has no repository rewrites (k3s patches its containerd for them)", key))
		}
		for i, ep := range m.Endpoints {
			if _, _, _, err := normalizeEndpoint(ep); err != nil {
				errs = append(errs, fmt.Errorf("%s.endpoint[%d]: %q: %w", key, i, ep, err))
			}
		}
	}
	for _, host := range sortedKeys(r.Configs) {
		c := r.Configs[host]
		key := fmt.Sprintf("configs.%q", host)
		if host == "*" {
			errs = append(errs, fmt.Errorf("%s: credentials and TLS are per host, not for every registry", key))
			continue
		}
		if err := checkHost(host); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
		if t := c.TLS; t != nil {
			if (t.CertFile == "") != (t.KeyFile == "") {
				errs = append(errs, fmt.Errorf("%s.tls: cert_file and key_file go together", key))
			}
			for name, p := range map[string]string{"ca_file": t.CAFile, "cert_file": t.CertFile, "key_file": t.KeyFile} {
				if p != "" && !filepath.IsAbs(p) {
					errs = append(errs, fmt.Errorf("%s.tls.%s: %q must be an absolute path", key, name, p))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkHost accepts a registry name as containerd takes it: host or
// host:port, or a URL whose host is taken.
func checkHost(host string) error {
	_, u, _, err := normalizeEndpoint(host)
	if err != nil {
		return err
	}
	if u.Path != "/v2" {
		return fmt.Errorf("a registry is a host[:port], not a path")
	}
	return nil
}

// normalizeEndpoint gives an endpoint a scheme and the /v2 API path, as
// k3s does (and containerd's own hosts parsing): a host without a scheme
// is https, except a loopback host on a port other than 443, which is
// http; a path other than "", "/" or "/v2" is taken as the API root
// (override_path). It returns the registry name (docker.io for Docker
// Hub's endpoint) and the URL.
func normalizeEndpoint(endpoint string) (registry string, u *url.URL, overridePath bool, err error) {
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "//" + raw
	}
	u, err = url.Parse(raw)
	if err != nil {
		return "", nil, false, err
	}
	if u.Host == "" {
		return "", nil, false, errors.New("no host")
	}
	switch u.Scheme {
	case "":
		if isLocalhost(u.Host) && u.Port() != "" && u.Port() != "443" {
			u.Scheme = "http"
		} else {
			u.Scheme = "https"
		}
	case "http", "https":
	default:
		return "", nil, false, fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", nil, false, errors.New("an endpoint has no user, query or fragment")
	}
	registry = u.Host
	if u.Host == "docker.io" {
		u.Host = "registry-1.docker.io"
	}
	if u.Host == "registry-1.docker.io" {
		registry = "docker.io"
	}
	switch u.Path {
	case "", "/", "/v2", "/v2/":
		u.Path = "/v2"
		return registry, u, false, nil
	}
	return registry, u, true, nil
}

// isLocalhost is containerd's test for a registry on this machine.
func isLocalhost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
