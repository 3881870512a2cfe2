package registries

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// endpoint is one [host."URL"] table of a hosts.toml, or its default
// server.
type endpoint struct {
	url          string
	overridePath bool
	tls          *TLSConfig
}

// hostsFile is one registry's hosts.toml.
type hostsFile struct {
	server    *endpoint // nil: the registry itself, as containerd defaults
	endpoints []endpoint
}

// HostsFiles returns the hosts.toml files containerd reads for r, by
// directory name under the hosts directory (the registry's host[:port],
// or _default for the "*" mirror), as k3s writes them: a registry named
// only in configs gets its TLS settings; a mirrored registry gets its
// endpoints in order, each with the TLS settings of its own host, and its
// own server last. An endpoint that is the registry itself, given last,
// is its server rather than a mirror.
func (r *Registry) HostsFiles() map[string]string {
	if r == nil {
		return nil
	}
	files := map[string]*hostsFile{}
	for _, host := range sortedKeys(r.Configs) {
		files[host] = &hostsFile{server: r.serverOf(host)}
	}
	for _, host := range sortedKeys(r.Mirrors) {
		f := files[host]
		if f == nil {
			f = &hostsFile{}
			if host != "*" {
				f.server = r.serverOf(host)
			}
			files[host] = f
		}
		seen := map[string]bool{}
		eps := r.Mirrors[host].Endpoints
		for i, raw := range eps {
			name, u, override, err := normalizeEndpoint(raw)
			if err != nil || seen[u.String()] {
				continue // validate refused the first; a repeat adds nothing
			}
			seen[u.String()] = true
			ep := endpoint{url: u.String(), overridePath: override, tls: r.tlsOf(name)}
			if i == len(eps)-1 && name == host {
				f.server = &ep
				continue
			}
			f.endpoints = append(f.endpoints, ep)
		}
	}
	out := map[string]string{}
	for host, f := range files {
		dir := host
		if host == "*" {
			dir = "_default"
		}
		out[dir] = f.render()
	}
	return out
}

// serverOf is a registry's own endpoint with its TLS settings.
func (r *Registry) serverOf(host string) *endpoint {
	_, u, override, err := normalizeEndpoint(host)
	if err != nil {
		return nil
	}
	return &endpoint{url: u.String(), overridePath: override, tls: r.tlsOf(host)}
}

// tlsOf finds a host's TLS settings, under its name as written or as
// normalized (docker.io is registry-1.docker.io's).
func (r *Registry) tlsOf(host string) *TLSConfig {
	if c, ok := r.Configs[host]; ok {
		return c.TLS
	}
	for k, c := range r.Configs {
		if name, _, _, err := normalizeEndpoint(k); err == nil && name == host {
			return c.TLS
		}
	}
	return nil
}

func (f *hostsFile) render() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by k1s from --private-registry on every start: edit that file, not this one.")
	if s := f.server; s != nil {
		w("server = %s", tomlString(s.url))
		w(`capabilities = ["pull", "resolve", "push"]`)
		if s.overridePath {
			w("override_path = true")
		}
		writeTLS(w, "", s.tls)
	}
	for _, ep := range f.endpoints {
		w("")
		w("[host.%s]", tomlString(ep.url))
		w(`  capabilities = ["pull", "resolve"]`)
		if ep.overridePath {
			w("  override_path = true")
		}
		writeTLS(w, "  ", ep.tls)
	}
	return b.String()
}

func writeTLS(w func(string, ...any), indent string, t *TLSConfig) {
	if t == nil {
		return
	}
	if t.CAFile != "" {
		w("%sca = [%s]", indent, tomlString(t.CAFile))
	}
	if t.CertFile != "" {
		w("%sclient = [[%s, %s]]", indent, tomlString(t.CertFile), tomlString(t.KeyFile))
	}
	if t.InsecureSkipVerify {
		w("%sskip_verify = true", indent)
	}
}

// Credentials are the hosts' credentials for the CRI's registry configs,
// keyed by the host containerd contacts (Docker Hub's docker.io is
// registry-1.docker.io).
func (r *Registry) Credentials() map[string]AuthConfig {
	if r == nil {
		return nil
	}
	out := map[string]AuthConfig{}
	for host, c := range r.Configs {
		if c.Auth == nil || *c.Auth == (AuthConfig{}) {
			continue
		}
		_, u, _, err := normalizeEndpoint(host)
		if err != nil {
			continue
		}
		out[u.Host] = *c.Auth
	}
	return out
}

// CredentialHosts are Credentials' keys, sorted.
func CredentialHosts(creds map[string]AuthConfig) []string {
	keys := make([]string, 0, len(creds))
	for k := range creds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteHostsDir makes dir hold exactly r's hosts files (none for a nil
// r): they are written beside it and swapped in, so containerd never
// reads a half-written directory.
func WriteHostsDir(dir string, r *Registry) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return fmt.Errorf("write registry hosts: %w", err)
	}
	defer os.RemoveAll(tmp)
	for name, content := range r.HostsFiles() {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("write registry hosts: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write registry hosts: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write registry hosts: %w", err)
	}
	old := dir + ".old"
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("write registry hosts: %w", err)
	}
	if err := os.Rename(dir, old); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("write registry hosts: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("write registry hosts: %w", err)
	}
	return os.RemoveAll(old)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
