package server

import (
	"strings"
	"testing"
	"time"

	"github.com/k1s/k1s/controllers/manager"
)

func TestNewRejectsBadConfig(t *testing.T) {
	base := func() Config {
		return Config{DataDir: t.TempDir(), NodeIP: "127.0.0.1", NodeName: "n1"}
	}
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string // every substring must appear in the error
	}{
		{"defaults are valid", func(*Config) {}, nil},
		{"bad bind address", func(c *Config) { c.BindAddress = "nope" }, []string{"--bind-address"}},
		{"overlapping CIDRs", func(c *Config) { c.ServiceCIDR = "10.42.0.0/24" }, []string{"--service-cidr", "overlaps"}},
		{"unknown controller", func(c *Config) {
			c.ControllerManager = &manager.Config{Controllers: []string{"*", "-no-such-controller"}}
		}, []string{"--controllers", "no-such-controller"}},
		{"disabling the scheduler by name", func(c *Config) {
			c.ControllerManager = &manager.Config{Controllers: []string{"-scheduler", "*"}}
		}, nil},
		{"grace below monitor period", func(c *Config) {
			cs := DefaultControllerSettings()
			cs.NodeLifecycle.NodeMonitorGracePeriod = time.Second
			c.Controllers = &cs
		}, []string{"--node-monitor-grace-period"}},
		{"zone threshold above one", func(c *Config) {
			cs := DefaultControllerSettings()
			cs.NodeLifecycle.UnhealthyZoneThreshold = 1.5
			c.Controllers = &cs
		}, []string{"--unhealthy-zone-threshold"}},
		{"negative syncs and oversized slices", func(c *Config) {
			cs := DefaultControllerSettings()
			cs.Deployment.ConcurrentSyncs = -1
			cs.EndpointSlice.MaxEndpointsPerSlice = 5000
			c.Controllers = &cs
		}, []string{"--concurrent-deployment-syncs", "--max-endpoints-per-slice"}},
		{"gc threshold zero is allowed", func(c *Config) {
			cs := DefaultControllerSettings()
			cs.PodGC.TerminatedPodGCThreshold = 0
			c.Controllers = &cs
		}, nil},
		{"log size not a quantity", func(c *Config) { c.ContainerLogMaxSize = "xyz" }, []string{"--container-log-max-size", `"xyz"`}},
		{"one log file", func(c *Config) { c.ContainerLogMaxFiles = 1 }, []string{"--container-log-max-files"}},
		{"partial settings are defaulted", func(c *Config) {
			c.Controllers = &ControllerSettings{}
		}, nil},
		{"certificates renewed beyond their life", func(c *Config) { c.CertificateRenewBefore = 400 * 24 * time.Hour }, []string{"CertificateRenewBefore"}},
		{"joining with a token", func(c *Config) {
			c.JoinServer, c.Token = "https://10.0.0.1:6443", "K10"+strings.Repeat("a", 64)+"::abcdef.0123456789abcdef"
		}, nil},
		{"joining without a token", func(c *Config) { c.JoinServer = "https://10.0.0.1:6443" }, []string{"--token", "--server"}},
		{"joining a plain URL", func(c *Config) { c.JoinServer, c.TokenFile = "10.0.0.1:6443", "/t" }, []string{"--server", "https://"}},
		{"starting and joining a cluster", func(c *Config) {
			c.JoinServer, c.TokenFile, c.ClusterInit = "https://10.0.0.1:6443", "/t", true
		}, []string{"--cluster-init", "--server"}},
		{"a cluster of an external datastore", func(c *Config) {
			c.ClusterInit, c.DatastoreEndpoint = true, "https://10.0.0.9:2379"
		}, []string{"--cluster-init", "--datastore-endpoint"}},
		{"a token that is no token", func(c *Config) { c.Token = "secret" }, []string{"--token"}},
		{"a new cluster's own token", func(c *Config) { c.ClusterInit, c.Token = true, "abcdef.0123456789abcdef" }, nil},
		{"certificates renewed a second after issue", func(c *Config) { c.CertificateRenewBefore = 365*24*time.Hour - time.Second }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mutate(&c)
			_, err := New(c)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New accepted the config, want an error naming %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
