// Package resolvconf reads resolver configuration files (resolv.conf(5)):
// the name servers, search domains and options a host's stub resolver
// uses. It knows one host arrangement, systemd-resolved, whose
// /etc/resolv.conf names only its local stub (127.0.0.53); Upstream looks
// through the stub to the servers resolved itself forwards to, as kubelet
// and k3s do for pods, which cannot reach the host's loopback.
package resolvconf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"strings"
)

// Paths of systemd-resolved's configuration.
const (
	// SystemdResolvedStub is the address of systemd-resolved's stub
	// listener (127.0.0.54, its proxy-only listener, is treated alike).
	SystemdResolvedStub = "127.0.0.53"
	// SystemdResolvedUpstream is the file where systemd-resolved lists the
	// upstream servers it uses.
	SystemdResolvedUpstream = "/run/systemd/resolve/resolv.conf"
)

// File is the content of a resolv.conf that matters to k1s.
type File struct {
	// Nameservers in file order, as written (an IPv6 address may carry a
	// %zone).
	Nameservers []string
	// Search is the last search or domain line's domains.
	Search []string
	// Options are the options lines' words, in order.
	Options []string
}

// Parse reads resolv.conf syntax: keyword lines, comments from a '#' or ';'
// to the end of the line, the last search or domain line winning. Malformed
// lines are skipped, as the C library does.
func Parse(r io.Reader) (File, error) {
	var f File
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			f.Nameservers = append(f.Nameservers, fields[1])
		case "search", "domain":
			f.Search = append([]string(nil), fields[1:]...)
		case "options":
			f.Options = append(f.Options, fields[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return File{}, fmt.Errorf("read resolv.conf: %w", err)
	}
	return f, nil
}

// Read parses the file at path.
func Read(path string) (File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer fh.Close()
	f, err := Parse(fh)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// IsStub reports whether addr is a systemd-resolved stub listener.
func IsStub(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	return a == netip.AddrFrom4([4]byte{127, 0, 0, 53}) || a == netip.AddrFrom4([4]byte{127, 0, 0, 54})
}

// Upstream reads path and, when a name server there is systemd-resolved's
// stub, replaces the stub entries with the name servers of resolvedPath
// (SystemdResolvedUpstream when empty). When resolvedPath is missing or
// names no server the stub stays: it still answers on the host. It
// returns the files it read, so a caller can watch them for changes.
func Upstream(path, resolvedPath string) (File, []string, error) {
	if resolvedPath == "" {
		resolvedPath = SystemdResolvedUpstream
	}
	f, err := Read(path)
	if err != nil {
		return File{}, nil, err
	}
	read := []string{path}
	stub := false
	for _, ns := range f.Nameservers {
		if IsStub(ns) {
			stub = true
			break
		}
	}
	if !stub {
		return f, read, nil
	}
	resolved, err := Read(resolvedPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, read, nil
	case err != nil:
		return File{}, nil, err
	}
	read = append(read, resolvedPath)
	if len(resolved.Nameservers) == 0 {
		return f, read, nil
	}
	var out []string
	replaced := false
	for _, ns := range f.Nameservers {
		if !IsStub(ns) {
			out = append(out, ns)
			continue
		}
		if !replaced {
			out = append(out, resolved.Nameservers...)
			replaced = true
		}
	}
	f.Nameservers = dedupe(out)
	return f, read, nil
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
