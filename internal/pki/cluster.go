package pki

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Well-known identities of the built-in clients.
const (
	AdminUser          = "system:admin"
	MastersGroup       = "system:masters"
	ControllerUser     = "system:kube-controller-manager"
	SchedulerUser      = "system:kube-scheduler"
	APIServerAgentUser = "system:k1s-apiserver"
	// APIServerAgentGroup lets the apiserver's client certificate reach the
	// node agents' API (bound to system:kubelet-api-admin).
	APIServerAgentGroup = "system:k1s-apiservers"
	// AuthProxyUser is the aggregator's front-proxy client certificate's
	// name: aggregated API servers trust requests from it (the
	// requestheader-allowed-names of extension-apiserver-authentication).
	AuthProxyUser = "system:auth-proxy"
)

// Config says what the cluster PKI must contain.
type Config struct {
	// Dir holds every CA, certificate and key. Required.
	Dir string
	// Hostname is added to the apiserver serving certificate. Default: os.Hostname().
	Hostname string
	// IPs are node addresses added to the apiserver serving certificate.
	IPs []net.IP
	// ServiceIP is the first address of the service CIDR (the kubernetes
	// service), added to the serving certificate.
	ServiceIP net.IP
	// SANs are extra names or addresses for the serving certificate (--tls-san).
	SANs []string
	// ClusterDomain is the DNS domain of services. Default: cluster.local.
	ClusterDomain string
	// RenewBefore: a leaf with less time left is issued again (by Ensure
	// and IssueNodeCerts). Default DefaultRenewBefore, 90 days.
	RenewBefore time.Duration
}

// Validate reports configuration errors naming the offending flag.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("--data-dir: PKI directory must not be empty"))
	}
	for _, san := range c.SANs {
		if san == "" {
			errs = append(errs, errors.New("--tls-san: empty name"))
		}
	}
	return errors.Join(errs...)
}

// Cluster is the set of files the server components use.
type Cluster struct {
	Dir      string
	ServerCA *CA
	ClientCA *CA
	EtcdCA   *CA

	APIServerServing CertKey
	EtcdServer       CertKey
	EtcdClient       CertKey
	// EtcdPeer is what an etcd member presents to its peers and verifies
	// them with (server and client use; the node's addresses): a server
	// started with --cluster-init or joined to one talks to the other
	// members with it.
	EtcdPeer   CertKey
	Admin      CertKey
	Controller CertKey
	Scheduler  CertKey
	// APIServerClient is what the apiserver presents to node agents.
	APIServerClient CertKey
	// RequestHeaderCA signs the front-proxy client certificate
	// (AuthProxyClient) the aggregator presents to aggregated API servers,
	// which trust the user it names in its X-Remote-* headers.
	RequestHeaderCA *CA
	AuthProxyClient CertKey

	renewBefore time.Duration
}

// Ensure creates what is missing under cfg.Dir and returns the cluster PKI.
func Ensure(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	if cfg.RenewBefore == 0 {
		cfg.RenewBefore = DefaultRenewBefore
	}
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("hostname for serving certificate: %w", err)
		}
		cfg.Hostname = h
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "etcd"), 0o700); err != nil {
		return nil, fmt.Errorf("create PKI directory %s (check --data-dir is writable): %w", cfg.Dir, err)
	}
	c := &Cluster{Dir: cfg.Dir, renewBefore: cfg.RenewBefore}
	var err error
	if c.ServerCA, err = loadOrCreateCA(cfg.Dir, "server-ca", "k1s-server-ca"); err != nil {
		return nil, err
	}
	if c.ClientCA, err = loadOrCreateCA(cfg.Dir, "client-ca", "k1s-client-ca"); err != nil {
		return nil, err
	}
	if c.RequestHeaderCA, err = loadOrCreateCA(cfg.Dir, "request-header-ca", "k1s-request-header-ca"); err != nil {
		return nil, err
	}
	etcdDir := filepath.Join(cfg.Dir, "etcd")
	if c.EtcdCA, err = loadOrCreateCA(etcdDir, "server-ca", "etcd-server-ca"); err != nil {
		return nil, err
	}

	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + cfg.ClusterDomain, cfg.Hostname}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	ips = append(ips, cfg.IPs...)
	if cfg.ServiceIP != nil {
		ips = append(ips, cfg.ServiceIP)
	}
	for _, san := range cfg.SANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, san)
		}
	}
	ips = uniqueIPs(ips)
	slices.Sort(dns)
	dns = slices.Compact(dns)

	leaves := []struct {
		ca   *CA
		dir  string
		name string
		spec LeafSpec
		out  *CertKey
	}{
		{c.ServerCA, cfg.Dir, "serving-kube-apiserver", LeafSpec{CommonName: "kube-apiserver", DNSNames: dns, IPs: ips, Server: true}, &c.APIServerServing},
		{c.ClientCA, cfg.Dir, "client-admin", LeafSpec{CommonName: AdminUser, Organization: []string{MastersGroup}, Client: true}, &c.Admin},
		{c.ClientCA, cfg.Dir, "client-controller", LeafSpec{CommonName: ControllerUser, Client: true}, &c.Controller},
		{c.ClientCA, cfg.Dir, "client-scheduler", LeafSpec{CommonName: SchedulerUser, Client: true}, &c.Scheduler},
		{c.ClientCA, cfg.Dir, "client-kube-apiserver", LeafSpec{CommonName: APIServerAgentUser, Organization: []string{APIServerAgentGroup}, Client: true}, &c.APIServerClient},
		{c.RequestHeaderCA, cfg.Dir, "client-auth-proxy", LeafSpec{CommonName: AuthProxyUser, Client: true}, &c.AuthProxyClient},
		{c.EtcdCA, etcdDir, "server-client", LeafSpec{CommonName: "etcd-server", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true}, &c.EtcdServer},
		{c.EtcdCA, etcdDir, "client", LeafSpec{CommonName: "etcd-client", Client: true}, &c.EtcdClient},
		{c.EtcdCA, etcdDir, "peer-server-client", LeafSpec{CommonName: "etcd-peer", DNSNames: peerDNS(cfg.Hostname), IPs: uniqueIPs(append([]net.IP{net.IPv4(127, 0, 0, 1)}, cfg.IPs...)), Server: true, Client: true}, &c.EtcdPeer},
	}
	for _, l := range leaves {
		ck, err := l.ca.ensureLeaf(l.dir, l.name, l.spec, c.renewBefore)
		if err != nil {
			return nil, err
		}
		*l.out = ck
	}
	return c, nil
}

// peerDNS are the etcd peer certificate's names: members reach each
// other by address, the names are for tools.
func peerDNS(hostname string) []string {
	if hostname == "" || hostname == "localhost" {
		return []string{"localhost"}
	}
	return []string{"localhost", hostname}
}

func uniqueIPs(ips []net.IP) []net.IP {
	seen := map[string]bool{}
	var out []net.IP
	for _, ip := range ips {
		if ip == nil || seen[ip.String()] {
			continue
		}
		seen[ip.String()] = true
		out = append(out, ip)
	}
	return out
}

// WriteKubeconfig writes a kubeconfig for server that authenticates with
// client, trusting ca, with the given file mode.
func WriteKubeconfig(path, server string, ca *CA, client CertKey, mode os.FileMode) error {
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		return fmt.Errorf("read CA for kubeconfig: %w", err)
	}
	certPEM, err := os.ReadFile(client.CertFile)
	if err != nil {
		return fmt.Errorf("read client certificate for kubeconfig: %w", err)
	}
	keyPEM, err := os.ReadFile(client.KeyFile)
	if err != nil {
		return fmt.Errorf("read client key for kubeconfig: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["default"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "default"}
	cfg.CurrentContext = "default"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	if err := WriteFileAtomic(path, data, mode); err != nil {
		return fmt.Errorf("write kubeconfig (check --write-kubeconfig): %w", err)
	}
	return nil
}

// NodeCerts are a node agent's certificates.
type NodeCerts struct {
	// Client authenticates the agent as system:node:<name> (group system:nodes).
	Client CertKey
	// Proxy authenticates the node's service proxy and DNS as
	// system:kube-proxy (RBAC's system:node-proxier: services, endpoint
	// slices and nodes, cluster-wide, read only).
	Proxy CertKey
	// Serving is the agent API's certificate, signed by the server CA.
	Serving CertKey
	// ServerCAFile verifies the apiserver; ClientCAFile verifies callers of the agent API.
	ServerCAFile, ClientCAFile string
}

// IssueNodeCerts writes the certificates of the node agent running in this
// server (files in dir, reused while they match).
func (c *Cluster) IssueNodeCerts(dir, nodeName, hostname string, ips []net.IP) (NodeCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return NodeCerts{}, fmt.Errorf("create %s: %w", dir, err)
	}
	client, err := c.ClientCA.ensureLeaf(dir, "client-agent", LeafSpec{
		CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}, Client: true,
	}, c.renewBefore)
	if err != nil {
		return NodeCerts{}, err
	}
	proxy, err := c.ClientCA.ensureLeaf(dir, "client-kube-proxy", LeafSpec{CommonName: "system:kube-proxy", Client: true}, c.renewBefore)
	if err != nil {
		return NodeCerts{}, err
	}
	dns := []string{"localhost", nodeName}
	if hostname != "" && hostname != nodeName {
		dns = append(dns, hostname)
	}
	serving, err := c.ServerCA.ensureLeaf(dir, "serving-agent", LeafSpec{
		CommonName: nodeName, DNSNames: dns, IPs: uniqueIPs(append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...)), Server: true,
	}, c.renewBefore)
	if err != nil {
		return NodeCerts{}, err
	}
	return NodeCerts{Client: client, Proxy: proxy, Serving: serving, ServerCAFile: c.ServerCA.CertFile, ClientCAFile: c.ClientCA.CertFile}, nil
}
