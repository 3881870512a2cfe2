package app

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// k3s's pass-through flags (--kube-apiserver-arg=name=value …) hand a flag
// to one of the upstream components k3s runs. k1s has no such components:
// each upstream flag name it implements maps to the k1s flag of the same
// setting; every other name is refused, naming the flag, rather than
// ignored. The table is per command: `k1s agent` takes only the node's.

// DefaultPrivateRegistry is --private-registry's default (k3s's is
// /etc/rancher/k3s/registries.yaml).
const DefaultPrivateRegistry = "/etc/k1s/registries.yaml"

// argList is the value of a pass-through flag: each occurrence is one
// name=value, never split on commas (--kubelet-arg=node-labels=a=b,c=d is
// one kubelet flag), as k3s takes them.
type argList struct{ items []string }

func (a *argList) Set(v string) error { a.items = append(a.items, v); return nil }
func (a *argList) String() string     { return strings.Join(a.items, " ") }

// passTarget is what k1s does with one upstream flag.
type passTarget struct {
	// flag is the k1s flag of this command that takes the value.
	flag string
	// check, when set, validates the value first (e.g. a mode k1s has
	// only one of); it may accept a value with no flag to set.
	check func(value string) error
	// refuse, when set, refuses the flag with this reason.
	refuse string
}

// passComponent is one pass-through flag and the flags it accepts.
type passComponent struct {
	flag      string // k1s/k3s flag: kube-apiserver-arg
	component string // upstream binary: kube-apiserver
	targets   map[string]passTarget
}

func to(flag string) passTarget        { return passTarget{flag: flag} }
func refused(reason string) passTarget { return passTarget{refuse: reason} }
func same(names ...string) map[string]passTarget {
	m := map[string]passTarget{}
	for _, n := range names {
		m[n] = to(n)
	}
	return m
}

func merge(ms ...map[string]passTarget) map[string]passTarget {
	out := map[string]passTarget{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// onlyValue accepts the one value k1s implements and refuses the others.
func onlyValue(flag, want, why string) passTarget {
	return passTarget{check: func(v string) error {
		if v != want {
			return fmt.Errorf("--%s=%s is not supported by k1s: %s", flag, v, why)
		}
		return nil
	}}
}

const (
	whyAPF       = "k1s's API Priority and Fairness shares upstream's default total of 600 concurrent requests, which k1s does not make configurable"
	whyAdmission = "k1s's admission chain is fixed (upstream's default plugins that apply to the resources k1s serves)"
)

// kubeletTargets are the kubelet flags a node (server or agent) takes.
func kubeletTargets(server bool) map[string]passTarget {
	m := map[string]passTarget{
		"node-labels":                to("node-label"),
		"register-with-taints":       to("node-taint"),
		"pod-manifest-path":          to("pod-manifests"),
		"resolv-conf":                to("resolv-conf"),
		"hostname-override":          to("node-name"),
		"node-ip":                    to("node-ip"),
		"container-runtime-endpoint": to("container-runtime-endpoint"),
		"container-log-max-size":     to("container-log-max-size"),
		"container-log-max-files":    to("container-log-max-files"),
		"read-only-port":             to("read-only-port"),
		"max-pods":                   to("max-pods"),
		"eviction-hard":              to("eviction-hard"),
		"cgroup-root":                to("cgroup-root"),
		"cgroups-per-qos":            to("cgroups-per-qos"),
		"enforce-node-allocatable":   to("enforce-node-allocatable"),
		"pod-max-pids":               to("pod-max-pids"),
		"cpu-manager-policy":         to("cpu-manager-policy"),
		"kube-reserved":              to("kube-reserved"),
		"system-reserved":            to("system-reserved"),
	}
	// Node-pressure eviction and image/container GC (agent/evictionflags.go).
	for _, n := range []string{"eviction-soft", "eviction-soft-grace-period", "eviction-minimum-reclaim",
		"eviction-pressure-transition-period", "eviction-max-pod-grace-period",
		"image-gc-high-threshold", "image-gc-low-threshold", "image-minimum-gc-age", "image-maximum-gc-age",
		"maximum-dead-containers-per-container", "maximum-dead-containers", "minimum-container-ttl-duration"} {
		m[n] = to(n)
	}
	if server {
		// An agent learns these from its server.
		m["cluster-dns"] = to("cluster-dns")
		m["cluster-domain"] = to("cluster-domain")
	}
	return m
}

func kubeProxyTargets() map[string]passTarget {
	return map[string]passTarget{
		"proxy-mode":         onlyValue("proxy-mode", "nftables", "k1s's service proxy is nftables only"),
		"hostname-override":  to("node-name"),
		"masquerade-all":     refused("k1s's service proxy masquerades only traffic that needs it, as kube-proxy's default"),
		"nodeport-addresses": refused("k1s's service proxy serves NodePorts on every node address, as kube-proxy's default"),
	}
}

// serverPassthrough is `k1s server`'s table.
func serverPassthrough() []passComponent {
	return []passComponent{
		{flag: "kube-apiserver-arg", component: "kube-apiserver", targets: merge(
			same("service-node-port-range", "advertise-address", "bind-address",
				"default-not-ready-toleration-seconds", "default-unreachable-toleration-seconds",
				"audit-log-path", "audit-policy-file", "audit-log-maxage", "audit-log-maxbackup", "audit-log-maxsize", "audit-log-format"),
			map[string]passTarget{
				"service-cluster-ip-range":       to("service-cidr"),
				"secure-port":                    to("https-listen-port"),
				"etcd-servers":                   to("datastore-endpoint"),
				"etcd-cafile":                    to("datastore-cafile"),
				"etcd-certfile":                  to("datastore-certfile"),
				"etcd-keyfile":                   to("datastore-keyfile"),
				"max-requests-inflight":          refused(whyAPF),
				"max-mutating-requests-inflight": refused(whyAPF),
				"enable-admission-plugins":       refused(whyAdmission),
				"disable-admission-plugins":      refused(whyAdmission),
				"admission-control-config-file":  to("pod-security-admission-config-file"),
				"encryption-provider-config":     refused("k1s writes its own EncryptionConfiguration, <data-dir>/server/cred/encryption-config.json, with --secrets-encryption (k1s secrets-encrypt edits it)"),
				"enable-priority-and-fairness":   onlyValue("enable-priority-and-fairness", "true", "k1s always runs API Priority and Fairness"),
			}),
		},
		{flag: "kube-controller-manager-arg", component: "kube-controller-manager", targets: merge(
			same("controllers", "leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period",
				"use-service-account-credentials", "node-cidr-mask-size", "cluster-cidr",
				"node-monitor-period", "node-monitor-grace-period", "node-startup-grace-period",
				"node-eviction-rate", "secondary-node-eviction-rate", "large-cluster-size-threshold", "unhealthy-zone-threshold",
				"cluster-signing-duration", "terminated-pod-gc-threshold",
				"concurrent-replicaset-syncs", "concurrent-rc-syncs", "concurrent-deployment-syncs",
				"concurrent-endpoint-syncs", "endpoint-updates-batch-period",
				"concurrent-service-endpoint-syncs", "max-endpoints-per-slice", "endpointslice-updates-batch-period",
				"concurrent-gc-syncs", "concurrent-resource-quota-syncs", "resource-quota-sync-period",
				"horizontal-pod-autoscaler-sync-period", "horizontal-pod-autoscaler-downscale-stabilization",
				"horizontal-pod-autoscaler-tolerance", "horizontal-pod-autoscaler-cpu-initialization-period",
				"horizontal-pod-autoscaler-initial-readiness-delay", "concurrent-horizontal-pod-autoscaler-syncs"),
			map[string]passTarget{
				"service-cluster-ip-range": to("service-cidr"),
				"allocate-node-cidrs":      onlyValue("allocate-node-cidrs", "true", "k1s always gives nodes pod CIDRs"),
				"pod-eviction-timeout":     refused("upstream removed it in v1.27; set tolerationSeconds (--default-not-ready-toleration-seconds, --default-unreachable-toleration-seconds)"),
			}),
		},
		// k1s's scheduler runs inside the controller manager with
		// upstream's default profile; none of kube-scheduler's flags
		// have a k1s setting.
		{flag: "kube-scheduler-arg", component: "kube-scheduler", targets: map[string]passTarget{}},
		{flag: "kubelet-arg", component: "kubelet", targets: kubeletTargets(true)},
		{flag: "kube-proxy-arg", component: "kube-proxy", targets: kubeProxyTargets()},
	}
}

// agentPassthrough is `k1s agent`'s table.
func agentPassthrough() []passComponent {
	return []passComponent{
		{flag: "kubelet-arg", component: "kubelet", targets: kubeletTargets(false)},
		{flag: "kube-proxy-arg", component: "kube-proxy", targets: kubeProxyTargets()},
	}
}

// passthroughFlags are the pass-through flags of a table.
func passthroughFlags(table []passComponent) []cli.Flag {
	var out []cli.Flag
	for _, p := range table {
		out = append(out, &cli.GenericFlag{
			Name:  p.flag,
			Usage: fmt.Sprintf("%s flag, name=value (repeatable): the ones k1s implements map to its own settings, others are refused", p.component),
			Value: &argList{},
		})
	}
	return out
}

// applyPassthrough maps every pass-through value given (command line or
// config file) to the k1s flag of the same setting, in table order. A
// pass-through flag wins over the k1s flag given directly, as in k3s,
// where it is appended to the component's command line.
func applyPassthrough(c *cli.Context, table []passComponent) error {
	for _, p := range table {
		list, _ := c.Generic(p.flag).(*argList)
		if list == nil {
			continue
		}
		for _, raw := range list.items {
			if err := applyOne(c, p, raw); err != nil {
				return fmt.Errorf("--%s=%s: %w", p.flag, raw, err)
			}
		}
	}
	return nil
}

func applyOne(c *cli.Context, p passComponent, raw string) error {
	arg := strings.TrimLeft(raw, "-")
	name, value, hasValue := strings.Cut(arg, "=")
	if name == "" {
		return fmt.Errorf("want name=value")
	}
	if !hasValue {
		// A boolean given alone, as on the component's command line.
		value = "true"
	}
	t, ok := p.targets[name]
	if !ok {
		return fmt.Errorf("%s flag --%s is not supported by k1s", p.component, name)
	}
	if t.refuse != "" {
		return fmt.Errorf("%s flag --%s is not supported by k1s: %s", p.component, name, t.refuse)
	}
	if t.check != nil {
		if err := t.check(value); err != nil {
			return fmt.Errorf("%s flag %w", p.component, err)
		}
	}
	if t.flag == "" {
		return nil
	}
	if err := c.Set(t.flag, value); err != nil {
		return fmt.Errorf("%s flag --%s (k1s --%s): %w", p.component, name, t.flag, err)
	}
	return nil
}

// unsupportedK3s are k3s flags that k1s accepts as names, so that a k3s
// configuration gets a precise refusal rather than "unknown flag".
type unsupportedK3s struct{ name, why string }

// serverUnsupported and agentUnsupported list the k3s flags each command
// refuses by name; none today (--agent-token, --node-external-ip,
// --egress-selector-mode, --system-default-registry and
// --private-registry are taken).
func serverUnsupported() []unsupportedK3s { return nil }

func agentUnsupported() []unsupportedK3s { return nil }

func unsupportedFlags(us []unsupportedK3s) []cli.Flag {
	var out []cli.Flag
	for _, u := range us {
		out = append(out, &cli.StringSliceFlag{Name: u.name, Usage: "k3s's; not supported by k1s: " + u.why, Hidden: true})
	}
	return out
}

// checkUnsupported refuses any of us that was given.
func checkUnsupported(c *cli.Context, us []unsupportedK3s) error {
	for _, u := range us {
		if c.IsSet(u.name) {
			return fmt.Errorf("--%s is not supported by k1s: %s", u.name, u.why)
		}
	}
	return nil
}

// takesList tells whether a config-file key may hold a list.
func takesList(f cli.Flag) bool {
	switch f := f.(type) {
	case *cli.StringSliceFlag:
		return true
	case *cli.GenericFlag:
		_, ok := f.Value.(*argList)
		return ok
	}
	return false
}
