package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/k1s/k1s/agent"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/registries"
)

// Egress selector modes (--egress-selector-mode, k3s's flag): how the
// apiserver reaches a node's agent API (logs, exec, attach, port-forward,
// nodes/proxy).
const (
	// EgressAgent dials the agent directly and, failing that, goes
	// through the tunnel the agent opened to the server (internal/tunnel).
	// k1s's default. k3s's "agent" always uses the tunnel; k1s tries the
	// direct connection first, as it is cheaper where the network allows.
	EgressAgent = "agent"
	// EgressDisabled never uses the tunnel: the agent must be reachable.
	EgressDisabled = "disabled"
)

// NodeOptions are k3s's settings of the node and of joining that `k1s
// server` takes besides its own.
type NodeOptions struct {
	// PrivateRegistry is k3s's registries.yaml for the embedded containerd
	// (--private-registry): mirrors, credentials and TLS of registries. The
	// command's default is /etc/k1s/registries.yaml; a missing file
	// configures nothing. Default here: none.
	PrivateRegistry string
	// NodeExternalIPs are the node's ExternalIP addresses
	// (--node-external-ip); servicelb then advertises them, rather than
	// the InternalIP ones, as load-balancer ingress. Default none.
	NodeExternalIPs []string
	// NodeExternalDNS are the node's ExternalDNS names
	// (--node-external-dns). Default none.
	NodeExternalDNS []string
	// AgentToken is the token agents join with (--agent-token, or read
	// from AgentTokenFile, --agent-token-file): "<id>.<secret>", or the
	// K10… form of this cluster; kept in <data-dir>/server/agent-token. It
	// never lets a server join. Default: none; agents join with the
	// server token, and agent-token is a copy of it, as in k3s.
	AgentToken, AgentTokenFile string
	// EgressSelectorMode is EgressAgent or EgressDisabled
	// (--egress-selector-mode). Default agent. k3s's pod and cluster
	// modes are refused: k1s's tunnel carries only the agent API.
	EgressSelectorMode string
	// MaxPods is the node's pod capacity and allocatable
	// (--kubelet-arg=max-pods). Default 110.
	MaxPods int
	// NodeFlags are the node's resource flags (--cgroup-root,
	// --kube-reserved, --eviction-hard, …), shared with `k1s agent`.
	NodeFlags agent.NodeFlags
	// SystemDefaultRegistry is k3s's registry prefix for its system
	// images (--system-default-registry). k1s's own images are carried in
	// the binary and imported, never pulled by name, so it changes
	// nothing; it is accepted so k3s configurations start. Default none.
	SystemDefaultRegistry string
}

// validate checks the options, naming the flag. With embeddedRuntime (the
// server runs its node on the embedded containerd, the one reader of the
// registries file) it reads that file, and nothing else, so a file that
// does not parse stops the server before it starts.
func (o NodeOptions) validate(embeddedRuntime bool) []error {
	var errs []error
	if o.PrivateRegistry != "" && embeddedRuntime {
		if _, err := registries.Load(o.PrivateRegistry); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := ParseExternalIPs(o.NodeExternalIPs); err != nil {
		errs = append(errs, err)
	}
	for _, name := range o.NodeExternalDNS {
		if name == "" || strings.ContainsAny(name, " /:") {
			errs = append(errs, fmt.Errorf("--node-external-dns: %q is not a DNS name", name))
		}
	}
	if o.AgentToken != "" && o.AgentTokenFile != "" {
		errs = append(errs, errors.New("--agent-token-file: give --agent-token or --agent-token-file, not both"))
	}
	if o.AgentToken != "" {
		if _, err := jointoken.Parse(o.AgentToken); err != nil {
			errs = append(errs, fmt.Errorf("--agent-token: %w (k1s's tokens are bootstrap tokens, <id>.<secret>: [a-z0-9]{6}.[a-z0-9]{16})", err))
		}
	}
	switch o.EgressSelectorMode {
	case "", EgressAgent, EgressDisabled:
	case "pod", "cluster":
		errs = append(errs, fmt.Errorf("--egress-selector-mode: %q is not supported by k1s: its tunnel carries only the agent API (logs, exec, port-forward), not the apiserver's traffic to pods; use agent or disabled", o.EgressSelectorMode))
	default:
		errs = append(errs, fmt.Errorf("--egress-selector-mode: %q: want agent or disabled (k3s's pod and cluster are not supported)", o.EgressSelectorMode))
	}
	if o.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("--kubelet-arg=max-pods: %d must not be negative", o.MaxPods))
	}
	if _, err := o.NodeFlags.ContainerManager(); err != nil {
		errs = append(errs, err)
	}
	if r := o.SystemDefaultRegistry; r != "" {
		if u, err := url.Parse("//" + r); strings.Contains(r, "://") || err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("--system-default-registry: %q is not a registry host[:port]", r))
		}
	}
	return errs
}

// agentBearer is the agent token's "<id>.<secret>" from --agent-token or
// --agent-token-file; "" when neither is given. Of a K10… token only the
// bootstrap token is kept: agent-token gets this cluster's CA hash.
func (o NodeOptions) agentBearer() (string, error) {
	raw, flag := o.AgentToken, "--agent-token"
	if o.AgentTokenFile != "" {
		data, err := os.ReadFile(o.AgentTokenFile)
		if err != nil {
			return "", fmt.Errorf("--agent-token-file: %w", err)
		}
		raw, flag = string(data), "--agent-token-file"
	}
	if strings.TrimSpace(raw) == "" {
		return "", nil
	}
	tok, err := jointoken.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return tok.Bearer(), nil
}

// ParseExternalIPs parses --node-external-ip values (each may hold a
// comma-separated list, as k3s's).
func ParseExternalIPs(values []string) ([]net.IP, error) {
	var out []net.IP
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			ip := net.ParseIP(s)
			if ip == nil {
				return nil, fmt.Errorf("--node-external-ip: %q is not an IP address", s)
			}
			out = append(out, ip)
		}
	}
	return out, nil
}
