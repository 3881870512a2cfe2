// Package server assembles `k1s server`: the PKI, embedded etcd (or an
// external datastore), the API server and, in later tiers, the controllers
// and the node agent, all run by one supervisor in one process.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/agent"
	"github.com/k1s/k1s/agent/logs"
	"github.com/k1s/k1s/controllers/helm"
	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/nodeipam"
	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/loopback"
	"github.com/k1s/k1s/internal/memtrim"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/internal/supervisor"
	"github.com/k1s/k1s/server/apiserver"
	"github.com/k1s/k1s/server/auth/serviceaccount"
	"github.com/k1s/k1s/server/etcdsnapshot"
)

// Config is the configuration of `k1s server`, filled from its flags.
type Config struct {
	// DataDir holds all state (--data-dir). Default /var/lib/k1s.
	DataDir string
	// BindAddress is the apiserver's listen address (--bind-address). Default 0.0.0.0.
	BindAddress string
	// HTTPSPort is the apiserver port (--https-listen-port). Default 6443.
	HTTPSPort int
	// AdvertiseAddress is the address other nodes and the kubernetes service
	// use (--advertise-address). Default: NodeIP.
	AdvertiseAddress string
	// NodeIP is this node's address (--node-ip). Default: the address of the
	// interface holding the default route, else 127.0.0.1.
	NodeIP string
	// TLSSANs are extra names in the serving certificate (--tls-san).
	TLSSANs []string
	// ServiceCIDR (--service-cidr). Default 10.43.0.0/16.
	ServiceCIDR string
	// ClusterCIDR (--cluster-cidr). Default 10.42.0.0/16.
	ClusterCIDR string
	// ServiceNodePortRange (--service-node-port-range). Default 30000-32767.
	ServiceNodePortRange string
	// ClusterDomain (--cluster-domain). Default cluster.local.
	ClusterDomain string
	// WriteKubeconfig is where the admin kubeconfig goes (--write-kubeconfig).
	// Default /etc/k1s/k1s.yaml.
	WriteKubeconfig string
	// WriteKubeconfigMode is its file mode (--write-kubeconfig-mode). Default 0600.
	WriteKubeconfigMode os.FileMode
	// DatastoreEndpoint selects an external etcd (--datastore-endpoint);
	// empty means embedded etcd. Comma-separated URLs.
	DatastoreEndpoint                                    string
	DatastoreCAFile, DatastoreCertFile, DatastoreKeyFile string
	// EtcdClientPort and EtcdPeerPort are the embedded etcd's loopback ports
	// (--etcd-client-port, --etcd-peer-port). Default 2379, 2380.
	EtcdClientPort, EtcdPeerPort int
	// DefaultNotReadyTolerationSeconds / DefaultUnreachableTolerationSeconds
	// (--default-not-ready-toleration-seconds ...). Default 300.
	DefaultNotReadyTolerationSeconds, DefaultUnreachableTolerationSeconds int64
	// DisableAgent runs no node agent (and no containerd) in this server
	// (--disable-agent).
	DisableAgent bool
	// NodeName is this node's name (--node-name). Default: the hostname.
	NodeName string
	// NodeLabels (--node-label key=value) and NodeTaints (--node-taint
	// key=value:Effect) apply when the node registers.
	NodeLabels, NodeTaints []string
	// PodManifests is the static pod directory (--pod-manifests).
	// Default <data-dir>/agent/pod-manifests.
	PodManifests string
	// ContainerRuntimeEndpoint names an external CRI runtime
	// (--container-runtime-endpoint); empty runs the embedded containerd.
	ContainerRuntimeEndpoint string
	// ClusterDNS is the cluster DNS address in pods' resolv.conf, answered
	// by every node's built-in DNS (--cluster-dns). Default 10.43.0.10.
	ClusterDNS string
	// ResolvConf is the host resolver configuration: the upstream servers
	// of the cluster DNS and the resolv.conf of dnsPolicy: Default pods
	// (--resolv-conf). Default /etc/resolv.conf, or systemd-resolved's
	// list of real servers when /etc/resolv.conf names only its stub.
	ResolvConf string
	// FlannelBackend routes pod traffic between nodes: vxlan, host-gw or
	// none (--flannel-backend, k3s's flag). Default vxlan.
	FlannelBackend string
	// DisableKubeProxy runs no service proxy on this server's node
	// (--disable-kube-proxy).
	DisableKubeProxy bool
	// Disable turns off packaged components (--disable, k3s's names):
	// "servicelb" (load-balancer addresses from the nodes), "coredns"
	// (the built-in cluster DNS and its kube-dns Service), "local-storage"
	// (the local-path StorageClass and this server's node's provisioner),
	// "metrics-server" (the built-in metrics.k8s.io API and its scraping
	// of the nodes). Default none.
	Disable []string
	// DefaultLocalStoragePath is where this server's node provisions
	// local-path volumes (--default-local-storage-path, k3s's flag).
	// Default <data-dir>/storage.
	DefaultLocalStoragePath string
	// ContainerLogMaxSize and ContainerLogMaxFiles bound container logs
	// (--container-log-max-size 10Mi, --container-log-max-files 5).
	ContainerLogMaxSize  string
	ContainerLogMaxFiles int
	// ReadOnlyPort serves the agent's read-only API (--read-only-port). Default 0, off.
	ReadOnlyPort int
	// NodeOptions are k3s's node and join settings (--private-registry,
	// --node-external-ip, --agent-token, --egress-selector-mode,
	// --kubelet-arg=max-pods); see server/k3soptions.go.
	NodeOptions
	// SecurityOptions are PodSecurity admission's configuration, Secrets
	// encrypted at rest and the audit log; see server/security.go.
	SecurityOptions
	// NodeCIDRMaskSize is the prefix length of each node's pod CIDR
	// (--node-cidr-mask-size). Default 24.
	NodeCIDRMaskSize int
	// ControllerManager configures the controllers (--controllers,
	// --leader-elect ...). Default: manager.DefaultConfig().
	ControllerManager *manager.Config
	// Controllers tunes the controllers and the scheduler
	// (--concurrent-deployment-syncs, --node-monitor-grace-period ...).
	// Default: DefaultControllerSettings().
	Controllers *ControllerSettings
	// ClusterInit starts the embedded etcd as the first member of a
	// cluster that other servers join (--cluster-init): its peer listener
	// on NodeIP:EtcdPeerPort with TLS. Default false: a lone member on
	// loopback. A server that was part of a cluster stays one.
	ClusterInit bool
	// JoinServer is the URL of a server of the cluster this server joins
	// (--server, K1S_URL): it takes the cluster's CAs and keys from it,
	// adds its etcd member to the cluster's (or shares
	// --datastore-endpoint) and runs its own apiserver, controllers and
	// node. Default: none, a cluster of its own.
	JoinServer string
	// Token is the server token (--token, K1S_TOKEN; or TokenFile,
	// --token-file): with JoinServer the K10… token of a server of the
	// cluster (<data-dir>/server/token); without, the "<id>.<secret>"
	// (or K10… form) a new cluster's token takes instead of a random one.
	Token, TokenFile string
	// CertificateRenewBefore: a leaf certificate of the server's (its
	// serving and client certificates, etcd's, its node's) with less time
	// left is issued again, at start and while the server runs; leaves
	// live a year. Default 90 days (k3s's). No flag: tests shorten the
	// wait.
	CertificateRenewBefore time.Duration
	// EtcdSnapshots configures the scheduled snapshots of the embedded
	// etcd (--etcd-snapshot-schedule-cron "0 */12 * * *",
	// --etcd-snapshot-retention 5 (0 keeps all), --etcd-snapshot-dir
	// <data-dir>/server/db/snapshots, --etcd-snapshot-name etcd-snapshot,
	// --etcd-snapshot-compress); NodeName is the node's.
	EtcdSnapshots etcdsnapshot.ScheduleConfig
	// DisableSnapshots takes no scheduled snapshots
	// (--etcd-disable-snapshots). With DatastoreEndpoint none are taken.
	DisableSnapshots bool
	// ClusterReset makes the embedded etcd member a cluster of itself
	// alone, from ClusterResetRestorePath's snapshot when set, and
	// returns (--cluster-reset, --cluster-reset-restore-path; k3s's).
	ClusterReset            bool
	ClusterResetRestorePath string
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	c.SecurityOptions.setDefaults()
	if c.DataDir == "" {
		c.DataDir = "/var/lib/k1s"
	}
	if c.BindAddress == "" {
		c.BindAddress = "0.0.0.0"
	}
	if c.HTTPSPort == 0 {
		c.HTTPSPort = 6443
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.43.0.0/16"
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = "10.42.0.0/16"
	}
	if c.ServiceNodePortRange == "" {
		c.ServiceNodePortRange = "30000-32767"
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.WriteKubeconfig == "" {
		c.WriteKubeconfig = "/etc/k1s/k1s.yaml"
	}
	if c.WriteKubeconfigMode == 0 {
		c.WriteKubeconfigMode = 0o600
	}
	if c.CertificateRenewBefore == 0 {
		c.CertificateRenewBefore = pki.DefaultRenewBefore
	}
	if c.EtcdClientPort == 0 {
		c.EtcdClientPort = 2379
	}
	if c.EtcdPeerPort == 0 {
		c.EtcdPeerPort = 2380
	}
	if c.NodeIP == "" {
		c.NodeIP = DefaultNodeIP().String()
	}
	if c.NodeName == "" {
		h, _ := os.Hostname()
		c.NodeName = strings.ToLower(h)
	}
	if c.ClusterDNS == "" {
		c.ClusterDNS = "10.43.0.10"
	}
	if c.FlannelBackend == "" {
		c.FlannelBackend = "vxlan"
	}
	if c.ContainerLogMaxSize == "" {
		c.ContainerLogMaxSize = "10Mi"
	}
	if c.ContainerLogMaxFiles == 0 {
		c.ContainerLogMaxFiles = 5
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = 24
	}
	if c.DefaultLocalStoragePath == "" {
		c.DefaultLocalStoragePath = filepath.Join(c.DataDir, "storage")
	}
	if c.ControllerManager == nil {
		cm := manager.DefaultConfig()
		c.ControllerManager = &cm
	}
	c.ControllerManager.SetDefaults()
	if c.Controllers == nil {
		cs := DefaultControllerSettings()
		c.Controllers = &cs
	}
	c.Controllers.SetDefaults()
	if c.AdvertiseAddress == "" {
		c.AdvertiseAddress = c.NodeIP
	}
	c.EtcdSnapshots.SetDefaults()
	if c.EtcdSnapshots.Dir == "" {
		c.EtcdSnapshots.Dir = etcdsnapshot.DefaultDir(c.DataDir)
	}
	c.EtcdSnapshots.NodeName = c.NodeName
}

// parsed holds the validated, typed form of Config.
type parsed struct {
	bindAddress, nodeIP, advertise net.IP
	serviceCIDR, clusterCIDR       *net.IPNet
	nodePorts                      *utilnet.PortRange
	nodeLabels                     map[string]string
	disabled                       map[string]bool
}

// Packaged components --disable turns off, under k3s's names.
const (
	ComponentServiceLB    = "servicelb"
	ComponentCoreDNS      = "coredns"
	ComponentLocalStorage = "local-storage"
	// ComponentMetricsServer is the built-in metrics API
	// (server/metricsapi), k3s's packaged metrics-server.
	ComponentMetricsServer = "metrics-server"
)

var disableable = map[string]bool{ComponentServiceLB: true, ComponentCoreDNS: true, ComponentLocalStorage: true, ComponentMetricsServer: true}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *Config) parse() (*parsed, error) {
	var errs []error
	p := &parsed{}
	if c.CertificateRenewBefore < 0 || c.CertificateRenewBefore >= pki.LeafValidity {
		errs = append(errs, fmt.Errorf("CertificateRenewBefore: %s is not within a leaf's life, %s", c.CertificateRenewBefore, pki.LeafValidity))
	}
	if p.bindAddress = net.ParseIP(c.BindAddress); p.bindAddress == nil {
		errs = append(errs, fmt.Errorf("--bind-address: %q is not an IP address", c.BindAddress))
	}
	if p.nodeIP = net.ParseIP(c.NodeIP); p.nodeIP == nil {
		errs = append(errs, fmt.Errorf("--node-ip: %q is not an IP address", c.NodeIP))
	}
	if p.advertise = net.ParseIP(c.AdvertiseAddress); p.advertise == nil {
		errs = append(errs, fmt.Errorf("--advertise-address: %q is not an IP address", c.AdvertiseAddress))
	}
	var err error
	if _, p.serviceCIDR, err = net.ParseCIDR(c.ServiceCIDR); err != nil {
		errs = append(errs, fmt.Errorf("--service-cidr: %q is not a CIDR", c.ServiceCIDR))
	}
	if _, p.clusterCIDR, err = net.ParseCIDR(c.ClusterCIDR); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-cidr: %q is not a CIDR", c.ClusterCIDR))
	}
	if p.serviceCIDR != nil && p.clusterCIDR != nil && (p.serviceCIDR.Contains(p.clusterCIDR.IP) || p.clusterCIDR.Contains(p.serviceCIDR.IP)) {
		errs = append(errs, fmt.Errorf("--service-cidr %s overlaps --cluster-cidr %s", c.ServiceCIDR, c.ClusterCIDR))
	}
	if p.nodePorts, err = utilnet.ParsePortRange(c.ServiceNodePortRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-node-port-range: %w", err))
	}
	if c.HTTPSPort < 1 || c.HTTPSPort > 65535 {
		errs = append(errs, fmt.Errorf("--https-listen-port: %d is not a valid port", c.HTTPSPort))
	}
	if c.WriteKubeconfigMode&^0o777 != 0 {
		errs = append(errs, fmt.Errorf("--write-kubeconfig-mode: %o is not a file mode", c.WriteKubeconfigMode))
	}
	if c.DatastoreEndpoint != "" {
		for _, u := range strings.Split(c.DatastoreEndpoint, ",") {
			if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
				errs = append(errs, fmt.Errorf("--datastore-endpoint: %q must be an http(s) etcd URL", u))
			}
		}
	}
	if net.ParseIP(c.ClusterDNS) == nil {
		errs = append(errs, fmt.Errorf("--cluster-dns: %q is not an IP address", c.ClusterDNS))
	}
	switch c.FlannelBackend {
	case "vxlan", "host-gw", "none":
	default:
		errs = append(errs, fmt.Errorf("--flannel-backend: %q is not vxlan, host-gw or none", c.FlannelBackend))
	}
	p.disabled = map[string]bool{}
	for _, d := range c.Disable {
		for _, name := range strings.Split(d, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if !disableable[name] && !packagedManifest(name) {
				errs = append(errs, fmt.Errorf("--disable: %q is not a component k1s packages (want one of %s)", name, strings.Join(sortedNames(disableable), ", ")))
				continue
			}
			p.disabled[name] = true
		}
	}
	if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--node-name: %q: %s", c.NodeName, strings.Join(msgs, "; ")))
	}
	p.nodeLabels = map[string]string{}
	for _, l := range c.NodeLabels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			errs = append(errs, fmt.Errorf("--node-label: %q is not a valid key=value label", l))
			continue
		}
		p.nodeLabels[k] = v
	}
	if _, err := agent.ParseTaints(c.NodeTaints); err != nil {
		errs = append(errs, err)
	}
	// The agent's log rotation checks its own flags (both named).
	if err := (logs.Config{MaxSize: c.ContainerLogMaxSize, MaxFiles: c.ContainerLogMaxFiles}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ReadOnlyPort < 0 || c.ReadOnlyPort > 65535 {
		errs = append(errs, fmt.Errorf("--read-only-port: %d is not a valid port", c.ReadOnlyPort))
	}
	if p.clusterCIDR != nil {
		nc := nodeipam.Config{ClusterCIDR: p.clusterCIDR, NodeMaskSize: c.NodeCIDRMaskSize}
		if err := nc.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.ControllerManager.Validate(append(controllers(nil, clusterCAs{}, p.clusterCIDR, c.NodeCIDRMaskSize, *c.Controllers, !p.disabled[ComponentServiceLB]), helm.Descriptor(helmConfig(c.DataDir)))...); err != nil {
		errs = append(errs, err)
	}
	if err := c.Controllers.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.JoinServer != "" {
		if u, err := url.Parse(c.JoinServer); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--server: %q is not an https:// URL of a k1s server", c.JoinServer))
		}
		if c.Token == "" && c.TokenFile == "" {
			errs = append(errs, errors.New("--token: required with --server (the K10… token of <data-dir>/server/token of a server of the cluster)"))
		}
		if c.ClusterInit {
			errs = append(errs, errors.New("--cluster-init: a server either starts a cluster or joins one (--server)"))
		}
	}
	if c.ClusterInit && c.DatastoreEndpoint != "" {
		errs = append(errs, errors.New("--cluster-init: the embedded etcd's cluster; with --datastore-endpoint servers share that datastore"))
	}
	if c.Token != "" {
		if _, err := jointoken.Parse(c.Token); err != nil {
			errs = append(errs, fmt.Errorf("--token: %w", err))
		}
	}
	for _, port := range []struct {
		flag string
		v    int
	}{{"--etcd-client-port", c.EtcdClientPort}, {"--etcd-peer-port", c.EtcdPeerPort}} {
		if port.v < 1 || port.v > 65535 {
			errs = append(errs, fmt.Errorf("%s: %d is not a valid port", port.flag, port.v))
		}
	}
	errs = append(errs, c.validateSnapshots()...)
	errs = append(errs, c.SecurityOptions.validate()...)
	errs = append(errs, c.NodeOptions.validate(!c.DisableAgent && c.ContainerRuntimeEndpoint == "")...)
	return p, errors.Join(errs...)
}

// Server is `k1s server`.
type Server struct {
	cfg   Config
	p     *parsed
	ready chan struct{}
	// inProcess is how the controllers, the scheduler and the node agent
	// in this process reach the apiserver: its handler, called directly
	// (internal/loopback), not a TLS connection to 127.0.0.1.
	inProcess *loopback.Server
}

// Ready is closed once the apiserver serves and its bootstrap is done.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// InProcessClientConfig rewrites cfg to reach this server's apiserver in
// process, as the built-in controllers and the node agent do (see
// internal/loopback). Its requests wait for the apiserver to serve.
func (s *Server) InProcessClientConfig(cfg *rest.Config) (*rest.Config, error) {
	return s.inProcess.ClientConfig(cfg)
}

// New validates cfg. It starts nothing and writes nothing.
func New(cfg Config) (*Server, error) {
	cfg.SetDefaults()
	p, err := cfg.parse()
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, p: p, ready: make(chan struct{}), inProcess: loopback.NewServer()}, nil
}

// Paths under the data directory.
func (s *Server) serverDir() string { return filepath.Join(s.cfg.DataDir, "server") }

// AdminKubeconfigPath is the admin kubeconfig kept inside the data dir.
func (s *Server) AdminKubeconfigPath() string {
	return filepath.Join(s.serverDir(), "cred", "admin.kubeconfig")
}

// Run starts every component and blocks until ctx is cancelled or one fails.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if err := checkWritable(s.cfg.DataDir); err != nil {
		return err
	}
	token := s.cfg.Token
	if token == "" && s.cfg.TokenFile != "" {
		data, err := os.ReadFile(s.cfg.TokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	// A server joining a cluster takes the cluster's CAs and keys first.
	cs, err := s.prepareCluster(ctx, token)
	if err != nil {
		return err
	}
	// A new service-account signing key (RSA 2048: 0.1–0.5 s of CPU here)
	// is made while the PKI is written and etcd starts, not after.
	saKeyFile := filepath.Join(s.serverDir(), "tls", "service.key")
	saKey := make(chan error, 1)
	go func() {
		if err := os.MkdirAll(filepath.Dir(saKeyFile), 0o700); err != nil {
			saKey <- err
			return
		}
		_, created, err := serviceaccount.LoadOrCreateSigningKey(saKeyFile)
		if created {
			logger.Info("Created service-account signing key", "path", saKeyFile)
		}
		saKey <- err
	}()
	firstServiceIP := make(net.IP, len(s.p.serviceCIDR.IP))
	copy(firstServiceIP, s.p.serviceCIDR.IP)
	firstServiceIP[len(firstServiceIP)-1]++

	hostname, _ := os.Hostname()
	pkiCfg := pki.Config{
		Dir:           filepath.Join(s.serverDir(), "tls"),
		Hostname:      hostname,
		IPs:           s.servingIPs(),
		ServiceIP:     firstServiceIP,
		SANs:          s.cfg.TLSSANs,
		ClusterDomain: s.cfg.ClusterDomain,
		RenewBefore:   s.cfg.CertificateRenewBefore,
	}
	cluster, err := pki.Ensure(pkiCfg)
	if err != nil {
		return fmt.Errorf("PKI: %w", err)
	}
	local := localURL(s.p.bindAddress, s.cfg.HTTPSPort)
	if err := s.writeKubeconfigs(cluster, local); err != nil {
		return err
	}

	var tiers []supervisor.Tier
	var node *agent.Node
	apiReady := make(chan struct{})
	if !s.cfg.DisableAgent {
		if node, err = s.nodeComponent(cluster, local, apiReady); err != nil {
			return err
		}
	}
	first := supervisor.Tier{}
	if node != nil {
		// The node (containerd first, then the agent) starts with etcd, not
		// after the apiserver: its static pods run without the apiserver,
		// as kubelet's do; it contacts the apiserver once apiReady is
		// closed. It gates nothing, and stops after the apiserver.
		first = append(first, supervisor.Named{Name: "node", Component: notGating{node}})
	}
	etcdServers := strings.Split(s.cfg.DatastoreEndpoint, ",")
	etcdCA, etcdCert, etcdKey := s.cfg.DatastoreCAFile, s.cfg.DatastoreCertFile, s.cfg.DatastoreKeyFile
	var etcdLocal func() (*clientv3.Client, error)
	var snapshots *etcdsnapshot.Scheduler
	endpoints := &clusterEndpoints{serverDir: s.serverDir(), settings: s.criticalSettings()}
	if s.cfg.DatastoreEndpoint == "" {
		ec := etcd.Config{
			DataDir:       filepath.Join(s.serverDir(), "db", "etcd"),
			ClientPort:    s.cfg.EtcdClientPort,
			PeerPort:      s.cfg.EtcdPeerPort,
			CertFile:      cluster.EtcdServer.CertFile,
			KeyFile:       cluster.EtcdServer.KeyFile,
			TrustedCAFile: cluster.EtcdCA.CertFile,
		}
		if s.cfg.NodeFlags.LowWrite {
			// Batched backend commits; the WAL keeps every acknowledged write.
			ec.BackendBatchInterval = etcd.LowWriteBackendBatchInterval
		}
		if cs.clustered {
			ec.Name = cs.etcdName
			ec.PeerIP = s.p.nodeIP
			ec.PeerCertFile, ec.PeerKeyFile = cluster.EtcdPeer.CertFile, cluster.EtcdPeer.KeyFile
			ec.InitialCluster = cs.initialCluster
		}
		if s.cfg.ClusterReset {
			return s.clusterReset(ctx, ec)
		}
		// A normal start ends a finished reset (k3s's).
		os.Remove(filepath.Join(s.serverDir(), "db", resetFlagFile))
		e, err := etcd.New(ec)
		if err != nil {
			return err
		}
		endpoints.etcd = e
		if s.cfg.snapshotsEnabled() {
			sched, err := s.snapshotScheduler(e.Endpoint(), cluster)
			if err != nil {
				return err
			}
			snapshots = sched
		}
		first = append(first, supervisor.Named{Name: "etcd", Component: e})
		etcdServers = []string{e.Endpoint()}
		etcdLocal = e.LocalClient
		etcdCA, etcdCert, etcdKey = cluster.EtcdCA.CertFile, cluster.EtcdClient.CertFile, cluster.EtcdClient.KeyFile
	}

	if len(first) > 0 {
		tiers = append(tiers, first)
	}
	encryptionConfig, err := s.cfg.encryptionConfig(ctx, s.cfg.DataDir, s.cfg.JoinServer != "")
	if err != nil {
		return err
	}
	api, err := apiserver.New(apiserver.Config{
		BindAddress:                         s.p.bindAddress,
		SecurePort:                          s.cfg.HTTPSPort,
		AdvertiseAddress:                    s.p.advertise,
		ServiceCIDR:                         s.p.serviceCIDR,
		NodePortRange:                       *s.p.nodePorts,
		ClusterDomain:                       s.cfg.ClusterDomain,
		EtcdServers:                         etcdServers,
		EtcdCAFile:                          etcdCA,
		EtcdCertFile:                        etcdCert,
		EtcdKeyFile:                         etcdKey,
		EtcdLocalClient:                     etcdLocal,
		InProcess:                           s.inProcess,
		ServingCertFile:                     cluster.APIServerServing.CertFile,
		ServingKeyFile:                      cluster.APIServerServing.KeyFile,
		ClientCAFile:                        cluster.ClientCA.CertFile,
		ServerCAFile:                        cluster.ServerCA.CertFile,
		AgentClientCertFile:                 cluster.APIServerClient.CertFile,
		AgentClientKeyFile:                  cluster.APIServerClient.KeyFile,
		NoAgentTunnels:                      s.cfg.EgressSelectorMode == EgressDisabled,
		MetricsAPI:                          !s.p.disabled[ComponentMetricsServer],
		RequestHeaderCAFile:                 cluster.RequestHeaderCA.CertFile,
		ProxyClientCertFile:                 cluster.AuthProxyClient.CertFile,
		ProxyClientKeyFile:                  cluster.AuthProxyClient.KeyFile,
		ServiceAccountKeyFile:               saKeyFile,
		DefaultNotReadyTolerationSeconds:    s.cfg.DefaultNotReadyTolerationSeconds,
		DefaultUnreachableTolerationSeconds: s.cfg.DefaultUnreachableTolerationSeconds,
		PublicHandlers:                      endpoints.handlers(),

		AdmissionControlConfigFile:              s.cfg.PodSecurityAdmissionConfigFile,
		Audit:                                   s.cfg.Audit,
		EncryptionProviderConfigFile:            encryptionConfig,
		EncryptionProviderConfigAutomaticReload: encryptionConfig != "",
	})
	if err != nil {
		return err
	}
	tiers = append(tiers, supervisor.Tier{{Name: "apiserver", Component: afterKey{key: saKey, Server: api}}})

	rootCA, err := os.ReadFile(cluster.ServerCA.CertFile)
	if err != nil {
		return fmt.Errorf("read server CA: %w", err)
	}
	// In-process clients present the certificates of the files, read
	// again as they are renewed.
	controllerConfig := fileClientConfig(local, cluster.ServerCA, cluster.Controller)
	// In-process clients call the apiserver's handler directly (no TLS,
	// no HTTP/2, no gzip).
	cmConfig := *s.cfg.ControllerManager
	cmConfig.InProcess = s.inProcess.ClientConfig
	cm, err := manager.New(cmConfig, controllerConfig, append(controllers(rootCA, clusterCAs{client: pki.CertKey{CertFile: cluster.ClientCA.CertFile, KeyFile: cluster.ClientCA.KeyFile}, server: pki.CertKey{CertFile: cluster.ServerCA.CertFile, KeyFile: cluster.ServerCA.KeyFile}}, s.p.clusterCIDR, s.cfg.NodeCIDRMaskSize, *s.cfg.Controllers, !s.p.disabled[ComponentServiceLB]), helm.Descriptor(helmConfig(s.cfg.DataDir)))...)
	if err != nil {
		return err
	}
	last := supervisor.Tier{{Name: "controller-manager", Component: cm}}
	adminCfg, err := s.inProcess.ClientConfig(fileClientConfig(local, cluster.ServerCA, cluster.Admin))
	if err != nil {
		return err
	}
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		return err
	}
	if node != nil {
		labeler := &controlPlaneLabeler{client: admin, nodeName: s.cfg.NodeName}
		last = append(last, supervisor.Named{Name: "node-labels", Component: ignoreCancel{labeler}})
	}
	agentBearer, err := s.cfg.agentBearer()
	if err != nil {
		return err
	}
	join := &joinInfo{client: admin, dir: s.serverDir(), caFile: cluster.ServerCA.CertFile, retry: time.Second, bearer: firstToken(token, s.cfg.JoinServer), agentBearer: agentBearer, settings: map[string]string{
		jointoken.ClusterInfoClusterCIDR: s.p.clusterCIDR.String(), jointoken.ClusterInfoServiceCIDR: s.p.serviceCIDR.String(),
		jointoken.ClusterInfoClusterDNS: s.cfg.ClusterDNS, jointoken.ClusterInfoClusterDomain: s.cfg.ClusterDomain,
		jointoken.ClusterInfoFlannelBackend: s.cfg.FlannelBackend,
		jointoken.ClusterInfoNodeDNS:        strconv.FormatBool(!s.p.disabled[ComponentCoreDNS]),
	}}
	clientCA, err := os.ReadFile(cluster.ClientCA.CertFile)
	if err != nil {
		return fmt.Errorf("read the client CA: %w", err)
	}
	join.settings[jointoken.ClusterInfoClientCA] = string(clientCA)
	last = append(last, supervisor.Named{Name: "join-token", Component: ignoreCancel{join}})
	// The manifests folder (packaged manifests such as the kube-dns
	// Service, and the operator's) and the CRDs it needs.
	last = append(last, supervisor.Named{Name: "deploy", Component: ignoreCancel{&manifestsComponent{s: s, config: adminCfg}}})
	last = append(last, supervisor.Named{Name: "certificate-renewal", Component: &certRenewer{
		files: func() []string { return s.leafFiles(cluster) }, renewBefore: s.cfg.CertificateRenewBefore, clock: clock.RealClock{},
		renew: func(context.Context) error { return s.renewCertificates(pkiCfg, local, node != nil) },
	}})
	if snapshots != nil {
		last = append(last, supervisor.Named{Name: "etcd-snapshots", Component: snapshots})
	}
	if s.cfg.DatastoreEndpoint == "" {
		// k3s's ETCDSnapshotFile objects of this server's snapshot files;
		// optional: a node name that is no label value only loses them.
		if files, err := s.snapshotFiles(adminCfg, snapshots); err != nil {
			logger.Error(err, "The etcd snapshots are not reflected as ETCDSnapshotFile objects")
		} else {
			last = append(last, supervisor.Named{Name: "etcd-snapshot-files", Component: files})
		}
	}
	tiers = append(tiers, last)
	go func() {
		select {
		case <-api.Ready():
			close(apiReady)
			close(s.ready)
		case <-ctx.Done():
			return
		}
		var nodeReady <-chan struct{}
		if node != nil {
			nodeReady = node.Ready()
		}
		trimAfterStartup(ctx, logger, startupSignals{controllers: cm.Ready(), node: nodeReady, apiSettled: api.Settled()},
			memtrim.TrimMapped, memtrim.Trim)
	}()

	logger.Info("Starting k1s server", "dataDir", s.cfg.DataDir, "kubeconfig", s.cfg.WriteKubeconfig)
	return supervisor.New(tiers...).Run(ctx)
}

// writeKubeconfigs writes the admin, controller and scheduler kubeconfigs
// (they carry the certificates) and --write-kubeconfig.
func (s *Server) writeKubeconfigs(cluster *pki.Cluster, local string) error {
	if err := pki.WriteKubeconfig(s.AdminKubeconfigPath(), local, cluster.ServerCA, cluster.Admin, 0o600); err != nil {
		return err
	}
	for name, ck := range map[string]pki.CertKey{"controller": cluster.Controller, "scheduler": cluster.Scheduler} {
		path := filepath.Join(s.serverDir(), "cred", name+".kubeconfig")
		if err := pki.WriteKubeconfig(path, local, cluster.ServerCA, ck, 0o600); err != nil {
			return err
		}
	}
	return pki.WriteKubeconfig(s.cfg.WriteKubeconfig, local, cluster.ServerCA, cluster.Admin, s.cfg.WriteKubeconfigMode)
}

// fileClientConfig reaches the apiserver at host as ck's certificate
// files say; in process, its identity follows the files as they are
// renewed (loopback.Server.Reload).
func fileClientConfig(host string, ca *pki.CA, ck pki.CertKey) *rest.Config {
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAFile: ca.CertFile, CertFile: ck.CertFile, KeyFile: ck.KeyFile}}
}

// leafFiles are the leaf certificates the server keeps: its own and, when
// it runs a node, the node's.
func (s *Server) leafFiles(cluster *pki.Cluster) []string {
	var out []string
	for _, ck := range []pki.CertKey{cluster.APIServerServing, cluster.APIServerClient, cluster.AuthProxyClient, cluster.Admin, cluster.Controller, cluster.Scheduler, cluster.EtcdServer, cluster.EtcdClient, cluster.EtcdPeer} {
		out = append(out, ck.CertFile)
	}
	if !s.cfg.DisableAgent {
		for _, l := range pki.Leaves {
			if l.Node {
				out = append(out, filepath.Join(s.cfg.DataDir, "agent", "tls", l.Name+".crt"))
			}
		}
	}
	return out
}

// renewCertificates issues again the leaves that are due (as a start
// does), rewrites the kubeconfigs and has the in-process clients present
// the new certificates.
func (s *Server) renewCertificates(cfg pki.Config, local string, node bool) error {
	cluster, err := pki.Ensure(cfg)
	if err != nil {
		return err
	}
	if err := s.writeKubeconfigs(cluster, local); err != nil {
		return err
	}
	if node {
		if _, err := s.nodeCerts(cluster, local); err != nil {
			return err
		}
	}
	return s.inProcess.Reload()
}

// settleTime is how long after the controllers and the node have started
// the start-up work (informers listing, discovery, first syncs) is over.
var settleTime = 5 * time.Second

// digestTime is how long the admission plugins are given to digest their
// first OpenAPI v3 index read (apiserver.Server.Settled) before the last
// trim.
var digestTime = 2 * time.Second

// startupSignals are what trimAfterStartup waits for; a nil node means
// no node agent.
type startupSignals struct {
	controllers, node, apiSettled <-chan struct{}
}

// trimAfterStartup gives back the memory only start-up needed, called
// once the apiserver serves: its pages at once and again once the
// controllers and the node have started, keeping them in the page cache
// (the controllers' caches are still filling) with mapped; and a last
// time with full, evicting them, once that has settled. The apiserver
// puts one piece of start-up work off until after it is ready: the
// admission plugins' first read of the OpenAPI v3 index, whose answer
// they go on to digest (apiserver.Server.Settled). The last trim waits for
// it, up to settleTime more: trimmed before that work, the control plane
// idled ~20–40 MB higher.
func trimAfterStartup(ctx context.Context, logger klog.Logger, sig startupSignals, mapped, full func() (int64, error)) {
	wait := func(ch <-chan struct{}, timeout time.Duration) bool {
		var t <-chan time.Time
		if timeout > 0 {
			tm := time.NewTimer(timeout)
			defer tm.Stop()
			t = tm.C
		}
		select {
		case <-ch:
		case <-t:
		case <-ctx.Done():
			return false
		}
		return true
	}
	trim(logger, "apiserver", mapped)
	if !wait(sig.controllers, 0) {
		return
	}
	if sig.node != nil && !wait(sig.node, 0) {
		return
	}
	trim(logger, "all", mapped)
	if !wait(nil, settleTime) || !wait(sig.apiSettled, settleTime) || !wait(nil, digestTime) {
		return
	}
	trim(logger, "settled", full)
}

// trim gives back start-up memory (see internal/memtrim).
func trim(logger klog.Logger, after string, trimFn func() (int64, error)) {
	if n, err := trimFn(); err != nil {
		logger.V(2).Info("Could not trim start-up memory", "err", err)
	} else {
		logger.V(4).Info("Trimmed start-up memory", "after", after, "mappedBytes", n)
	}
}

func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data-dir: cannot create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".k1s-write-test")
	if err != nil {
		return fmt.Errorf("--data-dir: %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// DefaultNodeIP is the address of the interface that holds the default
// route, or 127.0.0.1 when there is none.
func DefaultNodeIP() net.IP { return agent.DefaultNodeIP() }

// servingIPs are the addresses in the apiserver's serving certificate
// (and etcd's peer certificate) besides loopback: the node's, the
// advertised one and a specific bind address.
func (s *Server) servingIPs() []net.IP {
	ips := []net.IP{s.p.nodeIP, s.p.advertise}
	if !s.p.bindAddress.IsUnspecified() && !s.p.bindAddress.IsLoopback() {
		ips = append(ips, s.p.bindAddress)
	}
	return uniqueIPs(ips...)
}

// firstToken is the bearer a new cluster's join token takes from
// --token: none when joining (the cluster's token is written then).
func firstToken(token, joinServer string) string {
	if token == "" || joinServer != "" {
		return ""
	}
	tok, err := jointoken.Parse(token)
	if err != nil {
		return ""
	}
	return tok.Bearer()
}

func uniqueIPs(ips ...net.IP) []net.IP {
	var out []net.IP
	seen := map[string]bool{}
	for _, ip := range ips {
		if ip == nil || seen[ip.String()] {
			continue
		}
		seen[ip.String()] = true
		out = append(out, ip)
	}
	return out
}

func kubeletVersion() string { return kubeversion.Get().GitVersion }

// ignoreCancel turns a component's context error on cancel into a clean stop.
// notGating runs a component without holding up the next tiers: it hides
// the component's readiness from the supervisor.
type notGating struct{ c supervisor.Component }

func (n notGating) Run(ctx context.Context) error { return n.c.Run(ctx) }

// afterKey runs the apiserver once its service-account key exists.
type afterKey struct {
	key <-chan error
	*apiserver.Server
}

func (a afterKey) Run(ctx context.Context) error {
	select {
	case err := <-a.key:
		if err != nil {
			return fmt.Errorf("service-account signing key: %w", err)
		}
	case <-ctx.Done():
		return nil
	}
	return a.Server.Run(ctx)
}

type ignoreCancel struct{ supervisor.Component }

func (c ignoreCancel) Run(ctx context.Context) error {
	err := c.Component.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
