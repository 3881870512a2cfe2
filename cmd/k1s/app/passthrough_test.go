package app

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/agent"
	"github.com/k1s/k1s/agent/standalone"
	"github.com/k1s/k1s/server"
)

// runAgentCommand runs `k1s agent args...` and returns the configuration
// the action would start the agent with.
func runAgentCommand(t *testing.T, args ...string) (standalone.Config, error) {
	t.Helper()
	var got standalone.Config
	cmd := newAgentCommand(func(_ context.Context, cfg standalone.Config) error {
		got = cfg
		return nil
	})
	app := &cli.App{Name: "k1s", Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard, ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"k1s", "agent"}, args...))
	return got, err
}

func TestServerPassthrough(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, c server.Config)
		wantErr string
	}{
		{name: "apiserver service ranges",
			args: []string{"--kube-apiserver-arg=service-node-port-range=20000-22767", "--kube-apiserver-arg", "--service-cluster-ip-range=10.96.0.0/12"},
			check: func(t *testing.T, c server.Config) {
				if c.ServiceNodePortRange != "20000-22767" || c.ServiceCIDR != "10.96.0.0/12" {
					t.Errorf("node port range %q, service CIDR %q", c.ServiceNodePortRange, c.ServiceCIDR)
				}
			}},
		{name: "pass-through wins over the k1s flag",
			args: []string{"--service-node-port-range=1-2", "--kube-apiserver-arg=service-node-port-range=3-4"},
			check: func(t *testing.T, c server.Config) {
				if c.ServiceNodePortRange != "3-4" {
					t.Errorf("node port range %q, want 3-4", c.ServiceNodePortRange)
				}
			}},
		{name: "controller manager settings",
			args: []string{"--kube-controller-manager-arg=controllers=*,-horizontalpodautoscaling", "--kube-controller-manager-arg=node-monitor-grace-period=20s",
				"--kube-controller-manager-arg=terminated-pod-gc-threshold=10", "--kube-controller-manager-arg=cluster-signing-duration=720h",
				"--kube-controller-manager-arg=concurrent-deployment-syncs=9", "--kube-controller-manager-arg=leader-elect=false"},
			check: func(t *testing.T, c server.Config) {
				if got := c.ControllerManager.Controllers; !slices.Equal(got, []string{"*", "-horizontalpodautoscaling"}) {
					t.Errorf("controllers %q", got)
				}
				if c.ControllerManager.LeaderElect {
					t.Error("leader-elect still true")
				}
				s := c.Controllers
				if s.NodeLifecycle.NodeMonitorGracePeriod != 20*time.Second || s.PodGC.TerminatedPodGCThreshold != 10 ||
					s.ClusterSigningDuration != 720*time.Hour || s.Deployment.ConcurrentSyncs != 9 {
					t.Errorf("settings %+v", s)
				}
			}},
		{name: "hpa flags", args: []string{"--kube-controller-manager-arg=horizontal-pod-autoscaler-sync-period=30s",
			"--kube-controller-manager-arg=horizontal-pod-autoscaler-tolerance=0.2", "--horizontal-pod-autoscaler-downscale-stabilization=1m"},
			check: func(t *testing.T, c server.Config) {
				h := c.Controllers.HPA
				if h.SyncPeriod != 30*time.Second || h.Tolerance != 0.2 || h.DownscaleStabilizationWindow != time.Minute || h.InitialReadinessDelay != 30*time.Second {
					t.Errorf("HPA config %+v", h)
				}
			}},
		{name: "kubelet flags, commas kept inside one value",
			args: []string{"--kubelet-arg=node-labels=tier=frontend,zone=a", "--kubelet-arg=register-with-taints=dedicated=edge:NoSchedule",
				"--kubelet-arg=pod-manifest-path=/etc/static", "--kubelet-arg=cluster-dns=10.43.0.53", "--kubelet-arg=resolv-conf=/r.conf"},
			check: func(t *testing.T, c server.Config) {
				if !slices.Equal(c.NodeLabels, []string{"tier=frontend", "zone=a"}) || !slices.Equal(c.NodeTaints, []string{"dedicated=edge:NoSchedule"}) ||
					c.PodManifests != "/etc/static" || c.ClusterDNS != "10.43.0.53" || c.ResolvConf != "/r.conf" {
					t.Errorf("labels %q taints %q manifests %q dns %q resolv %q", c.NodeLabels, c.NodeTaints, c.PodManifests, c.ClusterDNS, c.ResolvConf)
				}
			}},
		{name: "proxy mode nftables", args: []string{"--kube-proxy-arg=proxy-mode=nftables"}},
		{name: "unknown apiserver flag", args: []string{"--kube-apiserver-arg=foo=bar"},
			wantErr: "--kube-apiserver-arg=foo=bar: kube-apiserver flag --foo is not supported by k1s"},
		{name: "max-requests-inflight says APF", args: []string{"--kube-apiserver-arg=max-requests-inflight=800"},
			wantErr: "kube-apiserver flag --max-requests-inflight is not supported by k1s: k1s's API Priority and Fairness"},
		{name: "admission plugins", args: []string{"--kube-apiserver-arg=enable-admission-plugins=NodeRestriction"},
			wantErr: "kube-apiserver flag --enable-admission-plugins is not supported by k1s"},
		{name: "iptables proxy mode", args: []string{"--kube-proxy-arg=proxy-mode=iptables"},
			wantErr: "--kube-proxy-arg=proxy-mode=iptables: kube-proxy flag --proxy-mode=iptables is not supported by k1s: k1s's service proxy is nftables only"},
		{name: "any scheduler flag", args: []string{"--kube-scheduler-arg=v=4"},
			wantErr: "--kube-scheduler-arg=v=4: kube-scheduler flag --v is not supported by k1s"},
		{name: "bad value names both flags", args: []string{"--kube-controller-manager-arg=node-monitor-grace-period=soon"},
			wantErr: "kube-controller-manager flag --node-monitor-grace-period (k1s --node-monitor-grace-period)"},
		{name: "no name", args: []string{"--kubelet-arg==1"}, wantErr: "--kubelet-arg==1: want name=value"},
		{name: "k3s's node and join flags",
			args: []string{"--agent-token=abcdef.0123456789abcdef", "--private-registry=/etc/r.yaml", "--system-default-registry=reg.local",
				"--node-external-ip=203.0.113.1,203.0.113.2", "--node-external-ip=2001:db8::1", "--node-external-dns=node.example.com", "--egress-selector-mode=disabled"},
			check: func(t *testing.T, c server.Config) {
				if c.AgentToken != "abcdef.0123456789abcdef" || c.PrivateRegistry != "/etc/r.yaml" || c.SystemDefaultRegistry != "reg.local" ||
					!slices.Equal(c.NodeExternalIPs, []string{"203.0.113.1", "203.0.113.2", "2001:db8::1"}) ||
					!slices.Equal(c.NodeExternalDNS, []string{"node.example.com"}) || c.EgressSelectorMode != "disabled" {
					t.Errorf("options %+v", c.NodeOptions)
				}
			}},
		{name: "defaults", check: func(t *testing.T, c server.Config) {
			if c.PrivateRegistry != "/etc/k1s/registries.yaml" || c.EgressSelectorMode != "agent" || c.MaxPods != 110 {
				t.Errorf("options %+v", c.NodeOptions)
			}
		}},
		{name: "kubelet max-pods", args: []string{"--kubelet-arg=max-pods=250"},
			check: func(t *testing.T, c server.Config) {
				if c.MaxPods != 250 {
					t.Errorf("max pods %d, want 250", c.MaxPods)
				}
			}},
		{name: "kubelet max-pods not a number", args: []string{"--kubelet-arg=max-pods=many"},
			wantErr: "kubelet flag --max-pods (k1s --max-pods)"},
		{name: "node resource flags and their defaults", check: func(t *testing.T, c server.Config) {
			f := c.NodeFlags
			if f.CgroupRoot != "/" || !f.CgroupsPerQOS || f.EnforceNodeAllocatable != "pods" || f.PodMaxPids != -1 ||
				f.CPUManagerPolicy != "none" || f.EvictionHard != agent.DefaultEvictionHard || f.KubeReserved != "" {
				t.Errorf("node flags %+v", f)
			}
		}},
		{name: "kubelet resource flags", args: []string{"--kubelet-arg=kube-reserved=cpu=500m,memory=1Gi",
			"--kubelet-arg=eviction-hard=memory.available<200Mi", "--kubelet-arg=cgroup-root=/edge", "--system-reserved=memory=100Mi"},
			check: func(t *testing.T, c server.Config) {
				f := c.NodeFlags
				if f.KubeReserved != "cpu=500m,memory=1Gi" || f.EvictionHard != "memory.available<200Mi" || f.CgroupRoot != "/edge" || f.SystemReserved != "memory=100Mi" {
					t.Errorf("node flags %+v", f)
				}
			}},
		{name: "eviction and GC flags: defaults, then through --kubelet-arg", check: func(t *testing.T, c server.Config) {
			f := c.NodeFlags.EvictionFlags
			if f.EvictionPressureTransitionPeriod != 5*time.Minute || f.ImageGCHighThreshold != 85 || f.ImageGCLowThreshold != 80 ||
				f.ImageMinimumGCAge != 2*time.Minute || f.ImageMaximumGCAge != 0 || f.MaximumDeadContainersPerContainer != 1 ||
				f.MaximumDeadContainers != -1 || f.MinimumContainerTTLDuration != 0 || f.EvictionSoft != "" {
				t.Errorf("eviction flags %+v", f)
			}
		}},
		{name: "kubelet eviction and GC flags", args: []string{"--kubelet-arg=eviction-soft=memory.available<1Gi",
			"--kubelet-arg=eviction-soft-grace-period=memory.available=1m", "--kubelet-arg=image-gc-high-threshold=90",
			"--kubelet-arg=maximum-dead-containers=10", "--kubelet-arg=eviction-pressure-transition-period=30s"},
			check: func(t *testing.T, c server.Config) {
				f := c.NodeFlags.EvictionFlags
				if f.EvictionSoft != "memory.available<1Gi" || f.EvictionSoftGracePeriod != "memory.available=1m" || f.ImageGCHighThreshold != 90 ||
					f.MaximumDeadContainers != 10 || f.EvictionPressureTransitionPeriod != 30*time.Second {
					t.Errorf("eviction flags %+v", f)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// An empty file of the test's, not the machine's default one.
			got, err := runServerCommand(t, append([]string{"--config", writeFile(t, "{}")}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestAgentPassthrough(t *testing.T) {
	clearEnv(t)
	base := []string{"--server=https://127.0.0.1:6443", "--token=K10aa::server:secret"}
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, c standalone.Config)
		wantErr string
	}{
		{name: "kubelet flags", args: []string{"--kubelet-arg=node-labels=a=b", "--kubelet-arg=hostname-override=edge-1", "--kubelet-arg=resolv-conf=/r.conf"},
			check: func(t *testing.T, c standalone.Config) {
				if !slices.Equal(c.NodeLabels, []string{"a=b"}) || c.NodeName != "edge-1" || c.ResolvConf != "/r.conf" {
					t.Errorf("labels %q name %q resolv %q", c.NodeLabels, c.NodeName, c.ResolvConf)
				}
			}},
		{name: "cpu manager policy static refused", args: []string{"--cpu-manager-policy=static"},
			wantErr: "--cpu-manager-policy: \"static\" is not supported by k1s"},
		{name: "bad kube-reserved names the flag", args: []string{"--kube-reserved=gpu=1"},
			wantErr: "--kube-reserved: resource \"gpu\""},
		{name: "bad eviction-hard names the flag", args: []string{"--kubelet-arg=eviction-hard=memory.free<1Gi"},
			wantErr: "--eviction-hard: unsupported eviction signal \"memory.free\""},
		{name: "cluster-dns comes from the server", args: []string{"--kubelet-arg=cluster-dns=10.0.0.10"},
			wantErr: "--kubelet-arg=cluster-dns=10.0.0.10: kubelet flag --cluster-dns is not supported by k1s"},
		{name: "no apiserver flags on an agent", args: []string{"--kube-apiserver-arg=x=y"}, wantErr: "flag provided but not defined"},
		{name: "masquerade-all", args: []string{"--kube-proxy-arg=masquerade-all=true"}, wantErr: "kube-proxy flag --masquerade-all is not supported by k1s"},
		{name: "k3s's node flags", args: []string{"--node-external-ip=1.2.3.4", "--node-external-dns=edge.example.com", "--kubelet-arg=max-pods=30", "--private-registry=/r.yaml"},
			check: func(t *testing.T, c standalone.Config) {
				if !slices.Equal(c.NodeExternalIPs, []string{"1.2.3.4"}) || !slices.Equal(c.NodeExternalDNS, []string{"edge.example.com"}) ||
					c.MaxPods != 30 || c.PrivateRegistry != "/r.yaml" {
					t.Errorf("external %q %q max pods %d registry %q", c.NodeExternalIPs, c.NodeExternalDNS, c.MaxPods, c.PrivateRegistry)
				}
			}},
		{name: "bad external ip", args: []string{"--node-external-ip=edge"}, wantErr: `--node-external-ip: "edge" is not an IP address`},
		{name: "agent-token is the server's", args: []string{"--agent-token=x"}, wantErr: "flag provided but not defined: -agent-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runAgentCommand(t, append(append([]string{"--config", writeFile(t, "{}")}, base...), tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}

// TestK3sConfigFiles loads k3s configuration files from its documentation:
// each gives k1s the settings it names, or fails naming the one key k1s
// lacks.
func TestK3sConfigFiles(t *testing.T) {
	clearEnv(t)
	t.Run("server basic", func(t *testing.T) {
		c, err := runServerCommand(t, "--config", "testdata/k3s-server-basic.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if c.WriteKubeconfigMode != 0o644 || !slices.Equal(c.TLSSANs, []string{"foo.local"}) ||
			!slices.Equal(c.NodeLabels, []string{"foo=bar", "something=amazing"}) || !c.ClusterInit {
			t.Errorf("config %+v", c)
		}
	})
	t.Run("server args", func(t *testing.T) {
		c, err := runServerCommand(t, "--config", "testdata/k3s-server-args.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if c.ServiceNodePortRange != "20000-22767" || c.Controllers.NodeLifecycle.NodeMonitorGracePeriod != 20*time.Second ||
			c.Controllers.HPA.DownscaleStabilizationWindow != 2*time.Minute || !slices.Equal(c.NodeLabels, []string{"tier=frontend", "zone=a"}) ||
			c.ResolvConf != "/run/systemd/resolve/resolv.conf" || c.NodeIP != "10.0.10.22" || !slices.Contains(c.Disable, "servicelb") {
			t.Errorf("config %+v", c)
		}
	})
	t.Run("agent", func(t *testing.T) {
		c, err := runAgentCommand(t, "--config", "testdata/k3s-agent.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if c.Server != "https://10.0.10.20:6443" || !slices.Equal(c.NodeLabels, []string{"role=edge"}) ||
			!slices.Equal(c.NodeTaints, []string{"dedicated=edge:NoSchedule"}) || c.ResolvConf != "/run/systemd/resolve/resolv.conf" {
			t.Errorf("config %+v", c)
		}
	})
	t.Run("server max-pods", func(t *testing.T) {
		c, err := runServerCommand(t, "--config", "testdata/k3s-server-maxpods.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if c.MaxPods != 250 {
			t.Errorf("max pods %d, want 250", c.MaxPods)
		}
	})
	t.Run("a key k1s lacks", func(t *testing.T) {
		_, err := runServerCommand(t, "--config", writeFile(t, "write-kubeconfig-mode: \"0644\"\nkube-apiserver-arg:\n  - \"oidc-issuer-url=https://issuer.invalid\"\n"))
		want := "--kube-apiserver-arg=oidc-issuer-url=https://issuer.invalid: kube-apiserver flag --oidc-issuer-url is not supported by k1s"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
	t.Run("audit and admission config", func(t *testing.T) {
		c, err := runServerCommand(t, "--config", writeFile(t, "kube-apiserver-arg:\n  - \"audit-log-path=/var/log/k1s/audit.log\"\n  - \"audit-policy-file=/etc/k1s/audit.yaml\"\n  - \"audit-log-maxage=30\"\n  - \"admission-control-config-file=/etc/k1s/psa.yaml\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Audit.LogPath != "/var/log/k1s/audit.log" || c.Audit.PolicyFile != "/etc/k1s/audit.yaml" || c.Audit.MaxAge != 30 ||
			c.Audit.MaxBackups != 100 || c.Audit.MaxSize != 100 || c.Audit.Format != "json" || c.PodSecurityAdmissionConfigFile != "/etc/k1s/psa.yaml" {
			t.Errorf("audit %+v, pod security config %q", c.Audit, c.PodSecurityAdmissionConfigFile)
		}
	})
	t.Run("a list for a one-value key", func(t *testing.T) {
		_, err := runServerCommand(t, "--config", writeFile(t, "kube-apiserver-arg: [\"a=b\"]\nnode-name: [\"x\", \"y\"]\n"))
		if err == nil || !strings.Contains(err.Error(), `key "node-name" takes one value`) {
			t.Fatalf("error %v", err)
		}
	})
}

// TestK3sConfigFilesStartK1s runs each k3s configuration of testdata
// through the command and the validation server.New (or standalone.New)
// does before anything starts: each is a configuration k1s starts with.
func TestK3sConfigFilesStartK1s(t *testing.T) {
	clearEnv(t)
	files, err := filepath.Glob("testdata/k3s-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no k3s configurations in testdata: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "k3s-registries.yaml") {
			continue // a registries.yaml, not a configuration
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			if strings.Contains(f, "agent") {
				c, err := runAgentCommand(t, "--config", f)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := standalone.New(c); err != nil {
					t.Fatalf("standalone.New: %v", err)
				}
				return
			}
			c, err := runServerCommand(t, "--config", f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := server.New(c); err != nil {
				t.Fatalf("server.New: %v", err)
			}
		})
	}
	t.Run("a registries file that does not parse", func(t *testing.T) {
		bad := writeFile(t, "mirrors:\n  docker.io:\n    endpoints: [\"x\"]\n")
		c, err := runServerCommand(t, "--config", writeFile(t, "private-registry: "+bad+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = server.New(c)
		if err == nil || !strings.Contains(err.Error(), "--private-registry "+bad) || !strings.Contains(err.Error(), "endpoints") {
			t.Fatalf("server.New: %v, want the file and the key named", err)
		}
	})
}
