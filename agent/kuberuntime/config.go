package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/k1s/k1s/agent/volume"
	"github.com/k1s/k1s/internal/resolvconf"
)

// PodLogDir is the directory of a pod's container logs.
func (m *Manager) PodLogDir(pod *corev1.Pod) string {
	return filepath.Join(m.cfg.PodLogsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// sandboxConfig is the CRI config of a pod's sandbox.
func (m *Manager) sandboxConfig(ctx context.Context, pod *corev1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	hostname := m.podHostname(pod)
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     hostname,
		LogDirectory: m.PodLogDir(pod),
		Labels:       sandboxLabels(pod),
		Annotations:  copyMap(pod.Annotations),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaceOptions(pod),
			},
		},
	}
	if pod.Spec.HostNetwork {
		// The node's UTS namespace: the runtime may not set a hostname.
		cfg.Hostname = ""
	}
	if m.cgroupParent != nil {
		// The pod's cgroup (agent/cm): the runtime puts the sandbox and
		// every container of the pod under it.
		cfg.Linux.CgroupParent = m.cgroupParent(pod)
	}
	// The runtime runs a privileged container only in a privileged
	// sandbox ("no privileged container allowed in sandbox").
	cfg.Linux.SecurityContext.Privileged = hasPrivileged(pod)
	dns, err := m.dnsConfig(pod)
	if err != nil {
		return nil, err
	}
	cfg.DnsConfig = dns
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		lsc := cfg.Linux.SecurityContext
		if sc.RunAsUser != nil {
			lsc.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
		if sc.RunAsGroup != nil {
			lsc.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
		}
		lsc.SupplementalGroups = append(lsc.SupplementalGroups, sc.SupplementalGroups...)
		if sc.FSGroup != nil {
			lsc.SupplementalGroups = append(lsc.SupplementalGroups, *sc.FSGroup)
		}
		if len(sc.Sysctls) > 0 {
			cfg.Linux.Sysctls = map[string]string{}
			for _, s := range sc.Sysctls {
				cfg.Linux.Sysctls[s.Name] = s.Value
			}
		}
	}
	return cfg, nil
}

// hasPrivileged reports whether a container of pod (init, regular or
// ephemeral) is privileged.
func hasPrivileged(pod *corev1.Pod) bool {
	privileged := func(sc *corev1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if privileged(pod.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if privileged(pod.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

func (m *Manager) podHostname(pod *corev1.Pod) string {
	// The same name the volume manager writes into the pod's /etc/hosts.
	if h, _, err := volume.PodHostnameAndDomain(pod, m.cfg.ClusterDomain); err == nil {
		return h
	}
	h := pod.Name
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	o := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		o.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		o.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		o.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		o.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return o
}

func protocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// dnsConfig builds the pod's resolver configuration from its dnsPolicy.
func (m *Manager) dnsConfig(pod *corev1.Pod) (*runtimeapi.DNSConfig, error) {
	policy := pod.Spec.DNSPolicy
	if policy == corev1.DNSClusterFirstWithHostNet && !pod.Spec.HostNetwork {
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		// ClusterFirst under hostNetwork falls back to the node's resolver.
		policy = corev1.DNSDefault
	}
	host := readResolvConf(m.cfg.ResolvConf)
	out := &runtimeapi.DNSConfig{}
	switch policy {
	case corev1.DNSNone:
	case corev1.DNSDefault:
		out.Servers, out.Searches, out.Options = host.servers, host.searches, host.options
	default: // ClusterFirst, ClusterFirstWithHostNet
		out.Servers = append([]string(nil), m.cfg.ClusterDNS...)
		d := m.cfg.ClusterDomain
		out.Searches = append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, host.searches...)
		out.Options = []string{"ndots:5"}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		out.Servers = append(out.Servers, dc.Nameservers...)
		out.Searches = append(out.Searches, dc.Searches...)
		for _, o := range dc.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			out.Options = mergeOption(out.Options, opt)
		}
	}
	out.Servers = dedupe(out.Servers, 3)
	out.Searches = dedupe(out.Searches, 32)
	return out, nil
}

func mergeOption(opts []string, opt string) []string {
	name := strings.SplitN(opt, ":", 2)[0]
	for i, o := range opts {
		if strings.SplitN(o, ":", 2)[0] == name {
			opts[i] = opt
			return opts
		}
	}
	return append(opts, opt)
}

func dedupe(in []string, max int) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		if len(out) == max {
			break
		}
	}
	return out
}

type resolvConf struct{ servers, searches, options []string }

// readResolvConf reads the node's resolver file for dnsPolicy: Default
// pods; a systemd-resolved stub address, which a pod cannot reach, is
// replaced by resolved's real servers.
func readResolvConf(path string) resolvConf {
	f, _, err := resolvconf.Upstream(path, "")
	if err != nil {
		return resolvConf{}
	}
	return resolvConf{servers: f.Nameservers, searches: f.Search, options: f.Options}
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// defaultMaskedPaths and defaultReadonlyPaths hide kernel interfaces from
// unprivileged containers, as upstream does.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// containerConfig is the CRI config of one container attempt.
func (m *Manager) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIPs []string, restartCount int, init bool, volumePaths map[string]string, imageRef string) (*runtimeapi.ContainerConfig, error) {
	env, err := m.makeEnvironment(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Key] = string(e.Value)
	}
	var mounts []*runtimeapi.Mount
	if m.volumes != nil {
		if mounts, err = m.volumes.Mounts(pod, c, volumePaths, volume.ContainerOptions{PodIPs: podIPs, Env: vars}); err != nil {
			return nil, err
		}
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, vars),
		Args:        expandAll(c.Args, vars),
		WorkingDir:  c.WorkingDir,
		Envs:        env,
		Mounts:      mounts,
		Labels:      containerLabels(pod, c.Name),
		Annotations: containerAnnotations(pod, c, restartCount, init),
		LogPath:     filepath.Join(c.Name, fmt.Sprintf("%d.log", restartCount)),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       m.linuxContainerConfig(pod, c),
	}
	return cfg, nil
}

func (m *Manager) linuxContainerConfig(pod *corev1.Pod, c *corev1.Container) *runtimeapi.LinuxContainerConfig {
	res := CgroupResources(c)
	res.OomScoreAdj = oomScoreAdj(pod, c, m.cfg.MemoryCapacity)

	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	psc := pod.Spec.SecurityContext
	if psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
	}
	privileged := false
	if csc := c.SecurityContext; csc != nil {
		if csc.Privileged != nil && *csc.Privileged {
			privileged = true
			sc.Privileged = true
		}
		if csc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *csc.RunAsUser}
		}
		if csc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *csc.RunAsGroup}
		}
		if csc.ReadOnlyRootFilesystem != nil {
			sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
		}
		if csc.AllowPrivilegeEscalation != nil {
			sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
		}
		if caps := csc.Capabilities; caps != nil {
			sc.Capabilities = &runtimeapi.Capability{}
			for _, a := range caps.Add {
				sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, capName(a))
			}
			for _, d := range caps.Drop {
				sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, capName(d))
			}
		}
	}
	if !privileged {
		sc.MaskedPaths = defaultMaskedPaths
		sc.ReadonlyPaths = defaultReadonlyPaths
	}
	return &runtimeapi.LinuxContainerConfig{Resources: res, SecurityContext: sc}
}

// CgroupResources are the cgroup settings container c runs with: cpu
// shares from its cpu request (at least 2), a CFS quota over a 100 ms
// period from its cpu limit (at least 1 ms), its memory limit; as kubelet
// computes them.
func CgroupResources(c *corev1.Container) *runtimeapi.LinuxContainerResources {
	res := &runtimeapi.LinuxContainerResources{}
	cpuReq := c.Resources.Requests.Cpu().MilliValue()
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		// A limit without a request: the request is the limit, as the
		// apiserver defaults it (kubelet repeats it for older pods).
		cpuReq = c.Resources.Limits.Cpu().MilliValue()
	}
	shares := cpuReq * 1024 / 1000
	if shares < 2 {
		shares = 2
	}
	res.CpuShares = shares
	if lim, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		res.CpuPeriod = 100000
		q := lim.MilliValue() * 100000 / 1000
		if q < 1000 {
			q = 1000
		}
		res.CpuQuota = q
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		res.MemoryLimitInBytes = lim.Value()
	}
	return res
}

// resizeNeeds says which of a running container's resources differ from
// what its spec asks (actual is what the runtime reports; nil: unknown,
// nothing to do).
func resizeNeeds(c *corev1.Container, actual *runtimeapi.LinuxContainerResources) (cpu, memory bool) {
	if actual == nil {
		return false, false
	}
	want := CgroupResources(c)
	cpu = want.CpuShares != actual.CpuShares || want.CpuQuota != quotaOf(actual)
	memory = want.MemoryLimitInBytes != actual.MemoryLimitInBytes
	return cpu, memory
}

// quotaOf is a reported CFS quota, 0 for none (runtimes report -1 or 0).
func quotaOf(r *runtimeapi.LinuxContainerResources) int64 {
	if r.CpuQuota <= 0 {
		return 0
	}
	return r.CpuQuota
}

// ResourcesActuated reports whether a running container runs with the
// cgroup settings its spec asks (true when the runtime does not say).
func ResourcesActuated(c *corev1.Container, actual *runtimeapi.LinuxContainerResources) bool {
	cpu, memory := resizeNeeds(c, actual)
	return !cpu && !memory
}

func capName(c corev1.Capability) string {
	s := strings.ToUpper(string(c))
	if s == "ALL" || strings.HasPrefix(s, "CAP_") {
		return s
	}
	return "CAP_" + s
}

// oomScoreAdj follows upstream's QoS policy: guaranteed pods are killed
// last, best-effort first, burstable in between by their memory request.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, capacity int64) int64 {
	switch qos.GetPodQOS(pod) {
	case corev1.PodQOSGuaranteed:
		return -997
	case corev1.PodQOSBestEffort:
		return 1000
	}
	req := c.Resources.Requests.Memory().Value()
	if capacity <= 0 {
		capacity = 8 << 30
	}
	adj := 1000 - (1000*req)/capacity
	if adj < 3 {
		adj = 3
	}
	if adj > 999 {
		adj = 999
	}
	return adj
}
