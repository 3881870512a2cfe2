package kuberuntime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

const hostResolvConf = `# generated
nameserver 1.1.1.1
nameserver 8.8.8.8
search corp.example lab.example
options ndots:2 timeout:1
`

func TestDNSConfig(t *testing.T) {
	te := newTestEnv(t)
	te.m.cfg.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(te.m.cfg.ResolvConf, []byte(hostResolvConf), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := &runtimeapi.DNSConfig{
		Servers:  []string{"10.43.0.10"},
		Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example"},
		Options:  []string{"ndots:5"},
	}
	host := &runtimeapi.DNSConfig{
		Servers:  []string{"1.1.1.1", "8.8.8.8"},
		Searches: []string{"corp.example", "lab.example"},
		Options:  []string{"ndots:2", "timeout:1"},
	}
	tests := []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		dnsConfig   *corev1.PodDNSConfig
		want        *runtimeapi.DNSConfig
	}{
		{name: "ClusterFirst", policy: corev1.DNSClusterFirst, want: cluster},
		{name: "unset is ClusterFirst", policy: "", want: cluster},
		{name: "ClusterFirst on the host network falls back to Default", policy: corev1.DNSClusterFirst, hostNetwork: true, want: host},
		{name: "ClusterFirstWithHostNet on the host network", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true, want: cluster},
		{name: "ClusterFirstWithHostNet off the host network", policy: corev1.DNSClusterFirstWithHostNet, want: cluster},
		{name: "Default", policy: corev1.DNSDefault, want: host},
		{name: "None with dnsConfig", policy: corev1.DNSNone, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"9.9.9.9"}, Searches: []string{"a.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "edns0"}},
		}, want: &runtimeapi.DNSConfig{Servers: []string{"9.9.9.9"}, Searches: []string{"a.example"}, Options: []string{"ndots:1", "edns0"}}},
		{name: "None without dnsConfig", policy: corev1.DNSNone, want: &runtimeapi.DNSConfig{}},
		{name: "ClusterFirst merged with dnsConfig", policy: corev1.DNSClusterFirst, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"10.43.0.10", "9.9.9.9", "8.8.4.4", "4.4.4.4"},
			Searches:    []string{"svc.cluster.local", "extra.example"},
			Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "rotate"}},
		}, want: &runtimeapi.DNSConfig{
			Servers:  []string{"10.43.0.10", "9.9.9.9", "8.8.4.4"}, // at most 3, no duplicates
			Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example", "extra.example"},
			Options:  []string{"ndots:2", "rotate"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(corev1.Container{Name: "app"})
			pod.Spec.DNSPolicy = tt.policy
			pod.Spec.HostNetwork = tt.hostNetwork
			pod.Spec.DNSConfig = tt.dnsConfig
			got, err := te.m.dnsConfig(pod)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("DNS config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxSecurityAndHostname(t *testing.T) {
	te := newTestEnv(t)
	pod := testPod(corev1.Container{Name: "app"})
	pod.Spec.Hostname = "db-0"
	pod.Spec.Subdomain = "db"
	pod.Spec.HostIPC = true
	pod.Spec.ShareProcessNamespace = ptr.To(true)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000),
		SupplementalGroups: []int64{3000}, FSGroup: ptr.To[int64](4000),
		Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
	}
	cfg, err := te.m.sandboxConfig(context.Background(), pod, 2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hostname != "db-0" || cfg.Metadata.Attempt != 2 {
		t.Errorf("hostname %q attempt %d, want db-0 and 2", cfg.Hostname, cfg.Metadata.Attempt)
	}
	want := &runtimeapi.LinuxPodSandboxConfig{
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_NODE},
			RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
			RunAsGroup:         &runtimeapi.Int64Value{Value: 2000},
			SupplementalGroups: []int64{3000, 4000},
		},
		Sysctls: map[string]string{"net.core.somaxconn": "1024"},
	}
	if diff := cmp.Diff(want, cfg.Linux, protocmp.Transform()); diff != "" {
		t.Errorf("sandbox linux config (-want +got):\n%s", diff)
	}

	// A privileged container, even an init or ephemeral one, needs a
	// privileged sandbox.
	for _, mutate := range []func(p *corev1.Pod, sc *corev1.SecurityContext){
		func(p *corev1.Pod, sc *corev1.SecurityContext) { p.Spec.Containers[0].SecurityContext = sc },
		func(p *corev1.Pod, sc *corev1.SecurityContext) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", SecurityContext: sc}}
		},
		func(p *corev1.Pod, sc *corev1.SecurityContext) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", SecurityContext: sc}}}
		},
	} {
		p := testPod(corev1.Container{Name: "app"})
		mutate(p, &corev1.SecurityContext{Privileged: ptr.To(true)})
		cfg, err := te.m.sandboxConfig(context.Background(), p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.Linux.SecurityContext.Privileged {
			t.Errorf("sandbox of a pod with a privileged container is not privileged")
		}
	}

	long := testPod(corev1.Container{Name: "app"})
	long.Name = "a-very-long-pod-name-that-goes-on-and-on-and-on-past-sixty-three-chars-x"
	cfg, err = te.m.sandboxConfig(context.Background(), long, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Hostname) > 63 || cfg.Hostname[len(cfg.Hostname)-1] == '-' {
		t.Errorf("hostname %q: longer than 63 or ends in '-'", cfg.Hostname)
	}
}

func TestLinuxContainerConfig(t *testing.T) {
	res := func(req, lim corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		want      *runtimeapi.LinuxContainerResources
	}{
		{name: "best effort", want: &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}},
		{name: "guaranteed", resources: res(rl("500m", "256Mi"), rl("500m", "256Mi")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: -997}},
		{name: "burstable by memory request", resources: res(rl("100m", "1Gi"), nil),
			// 1000 - 1000 * 1Gi / 4Gi
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, OomScoreAdj: 750}},
		{name: "burstable with a large request is clamped to 3", resources: res(rl("", "4Gi"), rl("", "8Gi")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, MemoryLimitInBytes: 8 << 30, OomScoreAdj: 3}},
		{name: "burstable with a tiny request is clamped to 999", resources: res(rl("1m", ""), rl("2m", "")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999}},
	}
	te := newTestEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(corev1.Container{Name: "app", Resources: tt.resources})
			got := te.m.linuxContainerConfig(pod, &pod.Spec.Containers[0])
			if diff := cmp.Diff(tt.want, got.Resources, protocmp.Transform()); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerSecurityContext(t *testing.T) {
	te := newTestEnv(t)
	pod := testPod(
		corev1.Container{Name: "plain", SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](7), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "CAP_SYS_TIME"}, Drop: []corev1.Capability{"all"}},
		}},
		corev1.Container{Name: "priv", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}},
	)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](5)}

	plain := te.m.linuxContainerConfig(pod, &pod.Spec.Containers[0]).SecurityContext
	want := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		RunAsUser:          &runtimeapi.Int64Value{Value: 7}, // the container's wins
		RunAsGroup:         &runtimeapi.Int64Value{Value: 1000},
		SupplementalGroups: []int64{5},
		ReadonlyRootfs:     true,
		NoNewPrivs:         true,
		Capabilities:       &runtimeapi.Capability{AddCapabilities: []string{"CAP_NET_ADMIN", "CAP_SYS_TIME"}, DropCapabilities: []string{"ALL"}},
		MaskedPaths:        defaultMaskedPaths,
		ReadonlyPaths:      defaultReadonlyPaths,
	}
	if diff := cmp.Diff(want, plain, protocmp.Transform()); diff != "" {
		t.Errorf("security context (-want +got):\n%s", diff)
	}
	priv := te.m.linuxContainerConfig(pod, &pod.Spec.Containers[1]).SecurityContext
	if !priv.Privileged || len(priv.MaskedPaths) != 0 || len(priv.ReadonlyPaths) != 0 {
		t.Errorf("privileged container: privileged %v, masked %v, readonly %v; want no masked or read-only paths",
			priv.Privileged, priv.MaskedPaths, priv.ReadonlyPaths)
	}
}

func TestContainerConfigAnnotations(t *testing.T) {
	te := newTestEnv(t)
	c := corev1.Container{
		Name: "app", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Lifecycle:  &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"stop"}}}},
		WorkingDir: "/srv", Stdin: true, TTY: true,
	}
	pod := testPod(c)
	cfg, err := te.m.containerConfig(context.Background(), pod, &pod.Spec.Containers[0], nil, 4, true, nil, "sha256:x")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Annotations
	if a[annotationRestarts] != "4" || a[annotationInit] != "true" || a[annotationTermPath] != "/dev/termination-log" ||
		a[annotationTermPolicy] != "FallbackToLogsOnError" || a[annotationPreStop] != `{"exec":{"command":["stop"]}}` {
		t.Errorf("annotations = %v", a)
	}
	if _, ok := a[annotationGracePeriod]; ok {
		t.Errorf("grace period annotation without a spec grace period")
	}
	if cfg.LogPath != "app/4.log" || cfg.Metadata.Attempt != 4 || cfg.WorkingDir != "/srv" || !cfg.Stdin || !cfg.Tty {
		t.Errorf("config = %v", cfg)
	}
}
