package dns

import (
	"net"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := Config{ClusterDNS: net.ParseIP("10.43.0.10")}
		c.SetDefaults()
		return c
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error; "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no cluster DNS", func(c *Config) { c.ClusterDNS = nil }, "--cluster-dns"},
		{"unspecified cluster DNS", func(c *Config) { c.ClusterDNS = net.IPv4zero }, "--cluster-dns"},
		{"IPv6 cluster DNS", func(c *Config) { c.ClusterDNS = net.ParseIP("fd00::a") }, ""},
		{"bad domain", func(c *Config) { c.ClusterDomain = "a..b" }, "--cluster-domain"},
		{"domain with trailing dot", func(c *Config) { c.ClusterDomain = "cluster.local." }, ""},
		{"no resolv.conf", func(c *Config) { c.ResolvConf = "" }, "--resolv-conf"},
		{"upstreams replace resolv.conf", func(c *Config) { c.ResolvConf, c.Upstreams = "", []string{"127.0.0.1:5353"} }, ""},
		{"bad upstream", func(c *Config) { c.Upstreams = []string{"dns.example:53"} }, "Upstreams[0]"},
		{"upstream without port", func(c *Config) { c.Upstreams = []string{"192.0.2.1"} }, "Upstreams[0]"},
		{"bad port", func(c *Config) { c.Port = 70000 }, "Port"},
		{"long link name", func(c *Config) { c.LinkName = "a-very-long-link-name" }, "LinkName"},
		{"listen address skips the link", func(c *Config) { c.LinkName, c.ListenAddress = "bad/name", "127.0.0.1:0" }, ""},
		{"bad listen address", func(c *Config) { c.ListenAddress = "localhost" }, "ListenAddress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestSetDefaults(t *testing.T) {
	var c Config
	c.SetDefaults()
	if c.Port != 53 || c.ClusterDomain != "cluster.local" || c.ResolvConf != "/etc/resolv.conf" || c.LinkName != "k1s-dns" || c.CacheSize != 10000 {
		t.Errorf("defaults: %+v", c)
	}
}
