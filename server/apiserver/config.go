// Package apiserver assembles the k1s API server: k8s.io/apiserver's generic
// server with etcd3 storage serving the k8s.io/api groups through k1s's own
// registry strategies, k8s.io/apiextensions-apiserver for CRDs in the same
// handler chain behind it and k8s.io/kube-aggregator (APIServices,
// aggregated API servers) in front, authentication (x509, requestheader,
// service-account and bootstrap tokens), API Priority and Fairness,
// authorization (node authorizer and RBAC) and admission.
package apiserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/k1s/k1s/internal/loopback"
)

// Config configures the API server. Every field documents its default.
type Config struct {
	// BindAddress is the address to serve on (--bind-address). Default 0.0.0.0.
	BindAddress net.IP
	// SecurePort is the HTTPS port (--https-listen-port). Default 6443.
	SecurePort int
	// AdvertiseAddress is the address the kubernetes service points to
	// (--advertise-address). Default: the node IP.
	AdvertiseAddress net.IP
	// ServiceCIDR is the service cluster IP range (--service-cidr). Default 10.43.0.0/16.
	ServiceCIDR *net.IPNet
	// NodePortRange is the NodePort range (--service-node-port-range). Default 30000-32767.
	NodePortRange utilnet.PortRange
	// ClusterDomain is the cluster's DNS domain (--cluster-domain). Default cluster.local.
	ClusterDomain string

	// EtcdServers are the etcd client URLs. Required.
	EtcdServers []string
	// EtcdCAFile, EtcdCertFile, EtcdKeyFile secure the etcd connection.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdPrefix is the key prefix in etcd. Default /registry.
	EtcdPrefix string
	// EtcdLocalClient, when set, gives an in-process client to the etcd
	// member at EtcdServers (the embedded one): resource storage and k1s's
	// own keys use it instead of dialling. Health checks still dial.
	EtcdLocalClient func() (*clientv3.Client, error)

	// PublicHandlers are served at their paths in front of the handler
	// chain (no authentication, audit or priority and fairness): each
	// checks its caller itself (the endpoints servers joining the
	// cluster call with the server token). Default: none.
	PublicHandlers map[string]http.Handler

	// InProcess, when set, is handed the server's handler once it serves,
	// for clients in the same process (internal/loopback); the
	// apiserver's own loopback clients use it too.
	InProcess *loopback.Server

	// ServingCertFile and ServingKeyFile are the HTTPS certificate. Required.
	ServingCertFile, ServingKeyFile string
	// ClientCAFile verifies client certificates. Required.
	ClientCAFile string
	// ServerCAFile is the CA of serving certificates (published in kube-root-ca.crt
	// and used to verify node agents). Required.
	ServerCAFile string
	// AgentClientCertFile/KeyFile is what the apiserver presents to node agents.
	AgentClientCertFile, AgentClientKeyFile string
	// NoAgentTunnels reaches node agents only directly, never through
	// the tunnels they open (--egress-selector-mode=disabled). Default
	// false: directly, else through the node's tunnel.
	NoAgentTunnels bool
	// MetricsAPI serves metrics.k8s.io/v1beta1 from the nodes'
	// /metrics/resource (server/metricsapi), as metrics-server would;
	// false leaves the group to a real metrics-server
	// (--disable=metrics-server).
	MetricsAPI bool

	// RequestHeaderCAFile verifies the client certificate of a front
	// proxy that names its user in X-Remote-User/-Uid/-Group/-Extra-*
	// headers (requestheader authentication; the proxy's name must be
	// pki.AuthProxyUser). It is published, with ClientCAFile, in
	// kube-system/extension-apiserver-authentication for aggregated API
	// servers. Default: none, no requestheader authentication.
	RequestHeaderCAFile string
	// ProxyClientCertFile/KeyFile is the front-proxy client certificate
	// (signed by RequestHeaderCAFile's CA) the aggregator presents to
	// aggregated API servers; read again when the files change. Default:
	// none, the aggregator presents no certificate.
	ProxyClientCertFile, ProxyClientKeyFile string

	// ServiceAccountKeyFile is the PEM private key signing service-account
	// tokens; created if missing. Required.
	ServiceAccountKeyFile string
	// ServiceAccountIssuer is the iss claim of bound tokens. Default
	// https://kubernetes.default.svc.<cluster-domain>.
	ServiceAccountIssuer string
	// ServiceAccountMaxTokenExpiration caps TokenRequest lifetimes. Default 24h.
	ServiceAccountMaxTokenExpiration time.Duration
	// APIAudiences are the audiences tokens must carry. Default [ServiceAccountIssuer].
	APIAudiences []string

	// DefaultNotReadyTolerationSeconds and DefaultUnreachableTolerationSeconds
	// are added to pods by admission. Default 300 each.
	DefaultNotReadyTolerationSeconds    int64
	DefaultUnreachableTolerationSeconds int64

	// AdmissionControlConfigFile is an AdmissionConfiguration whose
	// PodSecurity entry holds a PodSecurityConfiguration: the default
	// levels of namespaces without labels, and exemptions
	// (--pod-security-admission-config-file, k3s's; kube-apiserver's
	// --admission-control-config-file). Default: none, upstream's
	// defaults (privileged, no exemptions).
	AdmissionControlConfigFile string

	// Audit is the audit log (--audit-log-path, --audit-policy-file ...).
	// Default: none.
	Audit AuditConfig

	// EncryptionProviderConfigFile is an EncryptionConfiguration
	// (apiserver.config.k8s.io/v1) saying how resources are encrypted in
	// etcd (kube-apiserver's --encryption-provider-config; k1s writes it
	// with --secrets-encryption). Default: none, stored as they are.
	EncryptionProviderConfigFile string
	// EncryptionProviderConfigAutomaticReload reads the file again when
	// it changes (--encryption-provider-config-automatic-reload), polled
	// every EncryptionConfigPollPeriod. Default false.
	EncryptionProviderConfigAutomaticReload bool

	// EnableWatchCache keeps an in-memory cache per resource (faster lists and
	// watches, more memory). Default true.
	DisableWatchCache bool
}

// SetDefaults fills unset fields with their documented defaults.
func (c *Config) SetDefaults() {
	if c.BindAddress == nil {
		c.BindAddress = net.IPv4zero
	}
	if c.SecurePort == 0 {
		c.SecurePort = 6443
	}
	if c.ServiceCIDR == nil {
		_, c.ServiceCIDR, _ = net.ParseCIDR("10.43.0.0/16")
	}
	if c.NodePortRange.Size == 0 {
		c.NodePortRange = utilnet.PortRange{Base: 30000, Size: 2768}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.EtcdPrefix == "" {
		c.EtcdPrefix = "/registry"
	}
	if c.ServiceAccountIssuer == "" {
		c.ServiceAccountIssuer = "https://kubernetes.default.svc." + c.ClusterDomain
	}
	if c.ServiceAccountMaxTokenExpiration == 0 {
		c.ServiceAccountMaxTokenExpiration = 24 * time.Hour
	}
	if len(c.APIAudiences) == 0 {
		c.APIAudiences = []string{c.ServiceAccountIssuer}
	}
	if c.DefaultNotReadyTolerationSeconds == 0 {
		c.DefaultNotReadyTolerationSeconds = 300
	}
	if c.DefaultUnreachableTolerationSeconds == 0 {
		c.DefaultUnreachableTolerationSeconds = 300
	}
}

// Validate reports configuration errors, naming the flag at fault.
func (c *Config) Validate() error {
	var errs []error
	if c.SecurePort < 1 || c.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--https-listen-port: %d is not a valid port", c.SecurePort))
	}
	if c.ServiceCIDR != nil {
		ones, bits := c.ServiceCIDR.Mask.Size()
		if bits-ones < 4 || bits-ones > 20 {
			errs = append(errs, fmt.Errorf("--service-cidr: %s must hold between 16 and 2^20 addresses", c.ServiceCIDR))
		}
	}
	if c.NodePortRange.Base < 1 || c.NodePortRange.Base+c.NodePortRange.Size-1 > 65535 {
		errs = append(errs, fmt.Errorf("--service-node-port-range: %s is not a valid port range", c.NodePortRange.String()))
	}
	if len(c.EtcdServers) == 0 {
		errs = append(errs, errors.New("--datastore-endpoint: no etcd servers"))
	}
	for name, v := range map[string]string{
		"serving certificate": c.ServingCertFile, "serving key": c.ServingKeyFile,
		"client CA": c.ClientCAFile, "server CA": c.ServerCAFile, "service-account key": c.ServiceAccountKeyFile,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("apiserver: %s file must be set", name))
		}
	}
	if err := c.Audit.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.EncryptionProviderConfigFile != "" {
		if _, err := os.Stat(c.EncryptionProviderConfigFile); err != nil {
			errs = append(errs, fmt.Errorf("--encryption-provider-config: %w", err))
		}
	}
	if c.DefaultNotReadyTolerationSeconds < 0 {
		errs = append(errs, errors.New("--default-not-ready-toleration-seconds: must not be negative"))
	}
	if c.DefaultUnreachableTolerationSeconds < 0 {
		errs = append(errs, errors.New("--default-unreachable-toleration-seconds: must not be negative"))
	}
	return errors.Join(errs...)
}

// FirstServiceIP is the address of the kubernetes service: the first usable
// address of the service CIDR.
func (c *Config) FirstServiceIP() net.IP {
	ip := make(net.IP, len(c.ServiceCIDR.IP))
	copy(ip, c.ServiceCIDR.IP)
	ip[len(ip)-1]++
	return ip
}
