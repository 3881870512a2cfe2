package proxy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Conntrack clears UDP flows whose NAT points at an endpoint that no longer
// serves: UDP has no connection to break, so without this a client keeps
// sending to a deleted pod for as long as it keeps the flow alive.
type Conntrack interface {
	ClearStale(frontends []udpFrontend) error
}

// netlinkConntrack talks to the kernel's conntrack table over netlink.
type netlinkConntrack struct{}

func (netlinkConntrack) ClearStale(frontends []udpFrontend) error {
	f := newStaleFilter(frontends)
	if f.empty() {
		return nil
	}
	var errs []error
	for _, family := range []netlink.InetFamily{unix.AF_INET, unix.AF_INET6} {
		if _, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, f); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clear conntrack entries: %v", errs)
	}
	return nil
}

// staleFilter matches UDP flows to a frontend (service address and port,
// or node port) whose reply does not come from one of its serving
// endpoints.
type staleFilter struct {
	byFrontend map[string]map[string]bool // ip:port → endpoints
	byNodePort map[int]map[string]bool
}

func newStaleFilter(frontends []udpFrontend) *staleFilter {
	f := &staleFilter{byFrontend: map[string]map[string]bool{}, byNodePort: map[int]map[string]bool{}}
	for _, fe := range frontends {
		eps := map[string]bool{}
		for _, e := range fe.endpoints {
			eps[e] = true
		}
		for _, ip := range fe.ips {
			f.byFrontend[net.JoinHostPort(ip, strconv.Itoa(int(fe.port)))] = eps
		}
		// A node port is matched on the port alone: with no endpoint
		// left that would clear unrelated flows, so only then skip it.
		if fe.nodePort != 0 && len(eps) > 0 {
			f.byNodePort[int(fe.nodePort)] = eps
		}
	}
	return f
}

func (f *staleFilter) empty() bool { return len(f.byFrontend) == 0 && len(f.byNodePort) == 0 }

func (f *staleFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	reply := net.JoinHostPort(flow.Reverse.SrcIP.String(), strconv.Itoa(int(flow.Reverse.SrcPort)))
	if eps, ok := f.byFrontend[net.JoinHostPort(flow.Forward.DstIP.String(), strconv.Itoa(int(flow.Forward.DstPort)))]; ok {
		return !eps[reply]
	}
	if eps, ok := f.byNodePort[int(flow.Forward.DstPort)]; ok {
		return !eps[reply]
	}
	return false
}

// writeSysctl sets a /proc/sys setting; name uses slashes (net/ipv4/ip_forward).
func writeSysctl(name, value string) error {
	path := filepath.Join("/proc/sys", name)
	if cur, err := os.ReadFile(path); err == nil && string(cur) == value+"\n" {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", name, value, err)
	}
	return nil
}
