package server

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config is the agent API's configuration.
type Config struct {
	// Address is the IP the API and the read-only port listen on
	// (--address). Default "0.0.0.0".
	Address string
	// Port is the API's TLS port (--port). Default 10250.
	Port int
	// HealthzAddress is the IP of the unauthenticated health listener
	// (--healthz-bind-address). Default "127.0.0.1".
	HealthzAddress string
	// HealthzPort is the port of the health listener, serving only /healthz
	// without authentication (--healthz-port). Default 10248; a negative
	// port turns the listener off.
	HealthzPort int
	// ReadOnlyPort, when set, serves /healthz, /pods, /stats and /metrics
	// over plain HTTP without authentication on Address
	// (--read-only-port). Default 0: off.
	ReadOnlyPort int
	// TLSCertFile and TLSPrivateKeyFile are the serving certificate and key
	// (--tls-cert-file, --tls-private-key-file), issued from the cluster's
	// server CA with the node's names and addresses. Required.
	TLSCertFile, TLSPrivateKeyFile string
	// ClientCAFile holds the CAs whose client certificates authenticate
	// users, the common name being the user and the organizations its
	// groups (--client-ca-file). Empty: only bearer tokens authenticate.
	ClientCAFile string
	// NodeName is the node's name, the object authorization checks name
	// (--node-name). Required.
	NodeName string
	// AuthenticationCacheTTL is how long a TokenReview answer is cached.
	// Default 2m.
	AuthenticationCacheTTL time.Duration
	// AuthorizationAllowTTL and AuthorizationDenyTTL are how long allowing
	// and denying SubjectAccessReview answers are cached. Defaults 5m and
	// 30s.
	AuthorizationAllowTTL, AuthorizationDenyTTL time.Duration
	// ShutdownTimeout bounds how long Run waits for requests in flight
	// once its context ends. Default 5s.
	ShutdownTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Address == "" {
		c.Address = "0.0.0.0"
	}
	if c.Port == 0 {
		c.Port = 10250
	}
	if c.HealthzAddress == "" {
		c.HealthzAddress = "127.0.0.1"
	}
	if c.HealthzPort == 0 {
		c.HealthzPort = 10248
	}
	if c.AuthenticationCacheTTL == 0 {
		c.AuthenticationCacheTTL = 2 * time.Minute
	}
	if c.AuthorizationAllowTTL == 0 {
		c.AuthorizationAllowTTL = 5 * time.Minute
	}
	if c.AuthorizationDenyTTL == 0 {
		c.AuthorizationDenyTTL = 30 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
}

// Validate reports configuration errors naming the flag. Zero fields are
// valid where they have defaults.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if net.ParseIP(c.Address) == nil {
		errs = append(errs, fmt.Errorf("--address: %q is not an IP address", c.Address))
	}
	if net.ParseIP(c.HealthzAddress) == nil {
		errs = append(errs, fmt.Errorf("--healthz-bind-address: %q is not an IP address", c.HealthzAddress))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port: %d is not a valid port", c.Port))
	}
	if c.HealthzPort > 65535 {
		errs = append(errs, fmt.Errorf("--healthz-port: %d is not a valid port", c.HealthzPort))
	}
	if c.ReadOnlyPort < 0 || c.ReadOnlyPort > 65535 {
		errs = append(errs, fmt.Errorf("--read-only-port: %d is not a valid port", c.ReadOnlyPort))
	}
	if c.ReadOnlyPort != 0 && c.ReadOnlyPort == c.Port {
		errs = append(errs, fmt.Errorf("--read-only-port: %d is also --port", c.ReadOnlyPort))
	}
	if c.TLSCertFile == "" {
		errs = append(errs, errors.New("--tls-cert-file: the agent API needs a serving certificate"))
	}
	if c.TLSPrivateKeyFile == "" {
		errs = append(errs, errors.New("--tls-private-key-file: the agent API needs the serving certificate's key"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("--node-name: must not be empty"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"authentication cache TTL", c.AuthenticationCacheTTL},
		{"authorization allow cache TTL", c.AuthorizationAllowTTL},
		{"authorization deny cache TTL", c.AuthorizationDenyTTL},
		{"shutdown timeout", c.ShutdownTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v must not be negative", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}
