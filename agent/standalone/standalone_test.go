package standalone

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/internal/pki"

	"github.com/k1s/k1s/internal/jointoken"
)

func TestNewNamesTheBadFlag(t *testing.T) {
	good := Config{Server: "https://192.0.2.1:6443", Token: "x"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" = accepted
	}{
		{"good", func(*Config) {}, ""},
		{"no server", func(c *Config) { c.Server = "" }, "--server"},
		{"http server", func(c *Config) { c.Server = "http://192.0.2.1:6443" }, "--server"},
		{"bad node IP", func(c *Config) { c.NodeIP = "300.1.1.1" }, "--node-ip"},
		{"bad taint", func(c *Config) { c.NodeTaints = []string{"a=b:Sometimes"} }, "--node-taint"},
		{"bad label", func(c *Config) { c.NodeLabels = []string{"no-equals"} }, "--node-label"},
		{"long run dir", func(c *Config) { c.RunDir = "/run/a-directory-far-too-long-for-shims" }, "--run-dir"},
		{"bad log size", func(c *Config) { c.ContainerLogMaxSize = "lots" }, "container-log-max-size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			_, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	good := map[string]string{
		jointoken.ClusterInfoClusterCIDR: "10.42.0.0/16", jointoken.ClusterInfoServiceCIDR: "10.43.0.0/16",
		jointoken.ClusterInfoClusterDNS: "10.43.0.10",
	}
	cc, sc, dns, domain, err := settings(good)
	if err != nil || cc.String() != "10.42.0.0/16" || sc.String() != "10.43.0.0/16" || dns.String() != "10.43.0.10" || domain != "cluster.local" {
		t.Fatalf("settings: %v %v %v %q %v", cc, sc, dns, domain, err)
	}
	for key, bad := range map[string]string{
		jointoken.ClusterInfoClusterCIDR: "10.42.0.0", jointoken.ClusterInfoServiceCIDR: "", jointoken.ClusterInfoClusterDNS: "ten",
	} {
		info := map[string]string{}
		for k, v := range good {
			info[k] = v
		}
		info[key] = bad
		if _, _, _, _, err := settings(info); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: %v, want an error naming it", key, bad, err)
		}
	}
}

// TestWriteKubeconfig: the agent's kubeconfig names the certificate
// files, so that it follows their renewals.
func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	creds := join.Credentials{ServerCAFile: filepath.Join(dir, "server-ca.crt"),
		Client: pki.CertKey{CertFile: filepath.Join(dir, "client-agent.crt"), KeyFile: filepath.Join(dir, "client-agent.key")}}
	path := filepath.Join(dir, "kubeconfig.yaml")
	if err := writeKubeconfig(path, "https://192.0.2.1:6443", creds); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster.Server != "https://192.0.2.1:6443" || cluster.CertificateAuthority != creds.ServerCAFile ||
		user.ClientCertificate != creds.Client.CertFile || user.ClientKey != creds.Client.KeyFile ||
		len(user.ClientCertificateData) > 0 || len(cluster.CertificateAuthorityData) > 0 {
		t.Errorf("kubeconfig: cluster %+v, user %+v", cluster, user)
	}
}
