package manager

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
)

// Defaults of Config, the same as kube-controller-manager's.
const (
	DefaultLeaseNamespace  = "kube-system"
	DefaultLeaseName       = "kube-controller-manager"
	DefaultLeaseDuration   = 15 * time.Second
	DefaultRenewDeadline   = 10 * time.Second
	DefaultRetryPeriod     = 2 * time.Second
	DefaultKubeAPIQPS      = 20
	DefaultKubeAPIBurst    = 30
	DefaultMinResyncPeriod = 12 * time.Hour
	// DefaultKubeAPIContentType is protobuf, as kube-controller-manager's:
	// decoding it costs a fraction of JSON's CPU and garbage.
	DefaultKubeAPIContentType = "application/vnd.kubernetes.protobuf"
)

// Config is the controller manager's configuration. Start from
// DefaultConfig: the zero value of the two booleans means false, not their
// default.
type Config struct {
	// Controllers selects the controllers to run (--controllers), with
	// kube-controller-manager's syntax: "*" enables every controller that
	// is on by default, "name" enables one, "-name" disables one; the first
	// entry naming a controller decides for it. Names may be a controller's
	// canonical name or one of its aliases. Default ["*"].
	Controllers []string

	// LeaderElect runs the controllers only while holding the Lease
	// LeaseNamespace/LeaseName (--leader-elect), so that several servers
	// sharing a datastore run one active set. Default true.
	LeaderElect bool
	// LeaseNamespace (--leader-elect-resource-namespace). Default kube-system.
	LeaseNamespace string
	// LeaseName (--leader-elect-resource-name). Default kube-controller-manager.
	LeaseName string
	// LeaseDuration is how long followers wait before taking over a lease
	// that is not renewed (--leader-elect-lease-duration). Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying to renew before
	// it gives up leadership (--leader-elect-renew-deadline). Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts to acquire or renew
	// (--leader-elect-retry-period). Default 2s.
	RetryPeriod time.Duration
	// Identity is this manager's holder identity in the lease. Default:
	// hostname + "_" + a random UUID, so two processes on one host differ.
	Identity string

	// UseServiceAccountCredentials gives each controller the credentials of
	// its own service account in kube-system (--use-service-account-credentials),
	// so RBAC limits it to its system:controller:<name> role. When false,
	// every controller uses the manager's own credentials. Default true.
	UseServiceAccountCredentials bool

	// KubeAPIQPS and KubeAPIBurst limit each client's request rate
	// (--kube-api-qps, --kube-api-burst). Default 20 and 30.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// KubeAPIContentType is the wire format of the typed clients and the
	// shared informers (--kube-api-content-type). Default protobuf.
	KubeAPIContentType string

	// MinResyncPeriod: informers resync at a random period between it and
	// twice it (--min-resync-period). Default 12h.
	MinResyncPeriod time.Duration

	// InProcess, when set, rewrites every client config the manager makes
	// (its own and each controller's) to reach an apiserver in the same
	// process without a connection (internal/loopback). Not a flag.
	InProcess func(*rest.Config) (*rest.Config, error) `json:"-"`
}

// DefaultConfig returns a Config with every default set.
func DefaultConfig() Config {
	c := Config{LeaderElect: true, UseServiceAccountCredentials: true}
	c.SetDefaults()
	return c
}

// SetDefaults fills unset (zero) fields other than the booleans.
func (c *Config) SetDefaults() {
	if len(c.Controllers) == 0 {
		c.Controllers = []string{"*"}
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = DefaultLeaseNamespace
	}
	if c.LeaseName == "" {
		c.LeaseName = DefaultLeaseName
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.KubeAPIQPS == 0 {
		c.KubeAPIQPS = DefaultKubeAPIQPS
	}
	if c.KubeAPIBurst == 0 {
		c.KubeAPIBurst = DefaultKubeAPIBurst
	}
	if c.MinResyncPeriod == 0 {
		c.MinResyncPeriod = DefaultMinResyncPeriod
	}
	if c.KubeAPIContentType == "" {
		c.KubeAPIContentType = DefaultKubeAPIContentType
	}
}

// Validate checks c, after SetDefaults. When registered is given, every
// name in Controllers must be one of theirs (or an alias). Each error
// names the flag it comes from; all are joined.
func (c *Config) Validate(registered ...Controller) error {
	var errs []error
	known := map[string]bool{}
	for _, r := range registered {
		known[r.Name] = true
		for _, a := range r.Aliases {
			known[a] = true
		}
	}
	for _, entry := range c.Controllers {
		name := strings.TrimPrefix(entry, "-")
		switch {
		case entry == "*":
		case name == "":
			errs = append(errs, fmt.Errorf("--controllers: empty controller name in %q", strings.Join(c.Controllers, ",")))
		case name == "*":
			errs = append(errs, fmt.Errorf("--controllers: %q is not allowed, list the controllers to disable", entry))
		case len(registered) > 0 && !known[name]:
			errs = append(errs, fmt.Errorf("--controllers: unknown controller %q", name))
		}
	}
	if c.LeaderElect {
		if c.LeaseNamespace == "" {
			errs = append(errs, errors.New("--leader-elect-resource-namespace: must not be empty"))
		}
		if c.LeaseName == "" {
			errs = append(errs, errors.New("--leader-elect-resource-name: must not be empty"))
		}
		for _, d := range []struct {
			flag string
			v    time.Duration
		}{
			{"--leader-elect-lease-duration", c.LeaseDuration},
			{"--leader-elect-renew-deadline", c.RenewDeadline},
			{"--leader-elect-retry-period", c.RetryPeriod},
		} {
			if d.v <= 0 {
				errs = append(errs, fmt.Errorf("%s: %s must be greater than zero", d.flag, d.v))
			}
		}
		if c.LeaseDuration > 0 && c.RenewDeadline > 0 && c.LeaseDuration <= c.RenewDeadline {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration: %s must be greater than --leader-elect-renew-deadline %s", c.LeaseDuration, c.RenewDeadline))
		}
		if c.RetryPeriod > 0 && c.RenewDeadline > 0 && c.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(c.RetryPeriod)) {
			errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline: %s must be greater than --leader-elect-retry-period %s times %.1f", c.RenewDeadline, c.RetryPeriod, leaderelection.JitterFactor))
		}
	}
	if c.KubeAPIQPS < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps: %v must not be negative", c.KubeAPIQPS))
	}
	if c.KubeAPIBurst < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: %d must not be negative", c.KubeAPIBurst))
	}
	if c.KubeAPIContentType != "application/json" && c.KubeAPIContentType != DefaultKubeAPIContentType {
		errs = append(errs, fmt.Errorf("--kube-api-content-type: %q must be application/json or %s", c.KubeAPIContentType, DefaultKubeAPIContentType))
	}
	if c.MinResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--min-resync-period: %s must not be negative", c.MinResyncPeriod))
	}
	return errors.Join(errs...)
}

// Enabled reports whether c.Controllers turns on the controller ctl, with
// upstream's rules: the first entry naming it (by name or alias, with or
// without "-") decides; otherwise "*" enables it unless it is disabled by
// default; without "*" it is off.
func (c *Config) Enabled(ctl Controller) bool {
	names := map[string]bool{ctl.Name: true}
	for _, a := range ctl.Aliases {
		names[a] = true
	}
	star := false
	for _, entry := range c.Controllers {
		switch {
		case entry == "*":
			star = true
		case strings.HasPrefix(entry, "-") && names[entry[1:]]:
			return false
		case names[entry]:
			return true
		}
	}
	return star && !ctl.DisabledByDefault
}
