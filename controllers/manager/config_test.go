package manager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func descriptor(name string, disabled bool, aliases ...string) Controller {
	return Controller{Name: name, Aliases: aliases, ServiceAccount: name, DisabledByDefault: disabled,
		Start: func(context.Context, ControllerContext) error { return nil }}
}

// registry mirrors a few upstream controllers and their aliases.
var registry = []Controller{
	descriptor("serviceaccount-controller", false, "serviceaccount"),
	descriptor("namespace-controller", false, "namespace"),
	descriptor("root-ca-certificate-publisher-controller", false, "root-ca-cert-publisher"),
	descriptor("bootstrap-signer-controller", true, "bootstrapsigner"),
}

func enabledNames(cfg Config) []string {
	var out []string
	for _, c := range registry {
		if cfg.Enabled(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestEnabled(t *testing.T) {
	defaults := []string{"serviceaccount-controller", "namespace-controller", "root-ca-certificate-publisher-controller"}
	tests := []struct {
		name        string
		controllers []string
		want        []string
	}{
		{"default is star", nil, defaults},
		{"star enables the default-on ones", []string{"*"}, defaults},
		{"star then a disabled-by-default one by alias", []string{"*", "bootstrapsigner"}, append(slices.Clone(defaults), "bootstrap-signer-controller")},
		{"minus alias disables", []string{"*", "-namespace"}, []string{"serviceaccount-controller", "root-ca-certificate-publisher-controller"}},
		{"minus canonical name disables, before the star too", []string{"-namespace-controller", "*"}, []string{"serviceaccount-controller", "root-ca-certificate-publisher-controller"}},
		{"first mention wins", []string{"namespace", "-namespace"}, []string{"namespace-controller"}},
		{"first mention wins, disabling", []string{"-namespace", "namespace", "*"}, []string{"serviceaccount-controller", "root-ca-certificate-publisher-controller"}},
		{"without star only the named ones", []string{"serviceaccount", "root-ca-certificate-publisher-controller"}, []string{"serviceaccount-controller", "root-ca-certificate-publisher-controller"}},
		{"without star, minus leaves nothing", []string{"-namespace"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Controllers: tt.controllers}
			cfg.SetDefaults()
			if got := enabledNames(cfg); !slices.Equal(got, tt.want) {
				t.Errorf("enabled %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if !c.LeaderElect || !c.UseServiceAccountCredentials {
		t.Errorf("booleans not defaulted to true: %+v", c)
	}
	if !slices.Equal(c.Controllers, []string{"*"}) || c.LeaseNamespace != "kube-system" || c.LeaseName != "kube-controller-manager" ||
		c.LeaseDuration != 15*time.Second || c.RenewDeadline != 10*time.Second || c.RetryPeriod != 2*time.Second ||
		c.KubeAPIQPS != 20 || c.KubeAPIBurst != 30 || c.MinResyncPeriod != 12*time.Hour {
		t.Errorf("defaults = %+v", c)
	}
	if err := c.Validate(registry...); err != nil {
		t.Errorf("default config invalid: %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*Config)
		registered []Controller
		want       []string // every error message, in order
	}{
		{
			name:       "unknown controller",
			mutate:     func(c *Config) { c.Controllers = []string{"*", "foo"} },
			registered: registry,
			want:       []string{`--controllers: unknown controller "foo"`},
		},
		{
			name:       "unknown disabled controller",
			mutate:     func(c *Config) { c.Controllers = []string{"-foo", "namespace", "-serviceaccount-controller"} },
			registered: registry,
			want:       []string{`--controllers: unknown controller "foo"`},
		},
		{
			name:   "names are not checked without registered controllers",
			mutate: func(c *Config) { c.Controllers = []string{"foo"} },
		},
		{
			name:       "empty name and minus star",
			mutate:     func(c *Config) { c.Controllers = []string{"*", "", "-*"} },
			registered: registry,
			want: []string{
				`--controllers: empty controller name in "*,,-*"`,
				`--controllers: "-*" is not allowed, list the controllers to disable`,
			},
		},
		{
			name:   "lease duration not above renew deadline",
			mutate: func(c *Config) { c.LeaseDuration = 10 * time.Second },
			want:   []string{"--leader-elect-lease-duration: 10s must be greater than --leader-elect-renew-deadline 10s"},
		},
		{
			name:   "renew deadline within the jittered retry period",
			mutate: func(c *Config) { c.RetryPeriod = 9 * time.Second },
			want:   []string{"--leader-elect-renew-deadline: 10s must be greater than --leader-elect-retry-period 9s times 1.2"},
		},
		{
			name: "negative durations",
			mutate: func(c *Config) {
				c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = -1, -1, -1
			},
			want: []string{
				"--leader-elect-lease-duration: -1ns must be greater than zero",
				"--leader-elect-renew-deadline: -1ns must be greater than zero",
				"--leader-elect-retry-period: -1ns must be greater than zero",
			},
		},
		{
			name: "lease settings are ignored without leader election",
			mutate: func(c *Config) {
				c.LeaderElect = false
				c.LeaseDuration, c.LeaseName = -1, ""
			},
		},
		{
			name:   "empty lease name",
			mutate: func(c *Config) { c.LeaseName, c.LeaseNamespace = "", "" },
			want: []string{
				"--leader-elect-resource-namespace: must not be empty",
				"--leader-elect-resource-name: must not be empty",
			},
		},
		{
			name:   "negative rates",
			mutate: func(c *Config) { c.KubeAPIQPS, c.KubeAPIBurst, c.MinResyncPeriod = -1, -2, -time.Second },
			want: []string{
				"--kube-api-qps: -1 must not be negative",
				"--kube-api-burst: -2 must not be negative",
				"--min-resync-period: -1s must not be negative",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate(tt.registered...)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
