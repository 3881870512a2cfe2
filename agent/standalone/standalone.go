// Package standalone is `k1s agent`: a node that joins a k1s server with a
// token and runs the same node as the server's (agent.Node: containerd,
// the agent, its API, the service proxy and the DNS), with no etcd and no
// apiserver of its own.
package standalone

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/agent"
	"github.com/k1s/k1s/agent/apiservers"
	"github.com/k1s/k1s/agent/dns"
	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/agent/localpath"
	"github.com/k1s/k1s/agent/logs"
	"github.com/k1s/k1s/agent/network"
	"github.com/k1s/k1s/agent/proxy"
	agentserver "github.com/k1s/k1s/agent/server"
	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/memtrim"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/internal/registries"
	"github.com/k1s/k1s/internal/tunnel"
)

// Config is `k1s agent`'s configuration, from its flags.
type Config struct {
	// Server is the server's URL (--server, K1S_URL). Required. It is
	// the first contact: the node then learns every apiserver of the
	// cluster, keeps their list in <data-dir>/agent/apiservers.json and
	// fails over between them (agent/apiservers); Server is tried last
	// when it is not among them.
	Server string
	// Token is the join token (--token, K1S_TOKEN), or TokenFile names a
	// file holding it (--token-file). Required until the node holds a
	// valid client certificate.
	Token, TokenFile string
	// CAFile is the server's CA (--ca-file), for a token without CA hash.
	CAFile string
	// DataDir holds the node's state (--data-dir). Default /var/lib/k1s.
	DataDir string
	// DefaultLocalStoragePath is where this node provisions local-path
	// volumes (--default-local-storage-path, k3s's flag). Default
	// <data-dir>/storage.
	DefaultLocalStoragePath string
	// RunDir holds containerd's state and socket (--run-dir); a second
	// node on one machine needs its own. Default /run/k1s.
	RunDir string
	// NodeName (--node-name; default the hostname), WithNodeID appends a
	// random id kept in the data dir (--with-node-id).
	NodeName   string
	WithNodeID bool
	// NodeIP (--node-ip). Default the default route's interface address.
	NodeIP string
	// NodeLabels (key=value) and NodeTaints (key=value:Effect) apply at
	// registration (--node-label, --node-taint).
	NodeLabels, NodeTaints []string
	// ContainerRuntimeEndpoint names an external CRI runtime; empty runs
	// the embedded containerd (--container-runtime-endpoint).
	ContainerRuntimeEndpoint string
	// PodManifests is the static pod directory (--pod-manifests).
	PodManifests string
	// ResolvConf (--resolv-conf). Default /etc/resolv.conf.
	ResolvConf string
	// DisableKubeProxy runs no service proxy (--disable-kube-proxy);
	// DisableDNS runs no node DNS (--disable=coredns on the server).
	DisableKubeProxy, DisableDNS bool
	// Container log rotation and the read-only port, as the server's.
	ContainerLogMaxSize  string
	ContainerLogMaxFiles int
	ReadOnlyPort         int
	// PrivateRegistry is k3s's registries.yaml for the embedded containerd
	// (--private-registry; the command's default /etc/k1s/registries.yaml,
	// a missing file configures nothing). Default none.
	PrivateRegistry string
	// NodeExternalIPs (--node-external-ip, comma-separated lists allowed)
	// and NodeExternalDNS (--node-external-dns) are the node's ExternalIP
	// and ExternalDNS addresses. Default none.
	NodeExternalIPs, NodeExternalDNS []string
	// MaxPods is the node's pod capacity (--kubelet-arg=max-pods). Default 110.
	MaxPods int
	// NodeFlags are the node's resource flags (--cgroup-root,
	// --kube-reserved, --eviction-hard, …), shared with `k1s server`.
	NodeFlags agent.NodeFlags
}

// Agent is a joining node. Run it once.
type Agent struct {
	cfg Config
}

// New checks cfg, naming the flag of each error.
func New(cfg Config) (*Agent, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = "/var/lib/k1s"
	}
	if cfg.RunDir == "" {
		cfg.RunDir = "/run/k1s"
	}
	if cfg.ContainerLogMaxSize == "" {
		cfg.ContainerLogMaxSize = "10Mi"
	}
	if cfg.ContainerLogMaxFiles == 0 {
		cfg.ContainerLogMaxFiles = 5
	}
	var errs []error
	if u, err := url.Parse(cfg.Server); cfg.Server == "" || err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--server: %q is not an https:// URL of a k1s server", cfg.Server))
	}
	if cfg.NodeIP != "" && net.ParseIP(cfg.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("--node-ip: %q is not an IP address", cfg.NodeIP))
	}
	if _, err := agent.ParseTaints(cfg.NodeTaints); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseLabels(cfg.NodeLabels); err != nil {
		errs = append(errs, err)
	}
	if err := (logs.Config{MaxSize: cfg.ContainerLogMaxSize, MaxFiles: cfg.ContainerLogMaxFiles}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseExternalIPs(cfg.NodeExternalIPs); err != nil {
		errs = append(errs, err)
	}
	if cfg.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("--kubelet-arg=max-pods: %d must not be negative", cfg.MaxPods))
	}
	if _, err := cfg.NodeFlags.ContainerManager(); err != nil {
		errs = append(errs, err)
	}
	if cfg.PrivateRegistry != "" {
		if _, err := registries.Load(cfg.PrivateRegistry); err != nil {
			errs = append(errs, err)
		}
	}
	if len(filepath.Join(cfg.RunDir, "containerd")) > 36 {
		errs = append(errs, fmt.Errorf("--run-dir: %q is too long for containerd's shim sockets (at most 25 characters)", cfg.RunDir))
	}
	return &Agent{cfg: cfg}, errors.Join(errs...)
}

func parseLabels(in []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok || len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			return nil, fmt.Errorf("--node-label: %q is not a valid key=value label", l)
		}
		out[k] = v
	}
	return out, nil
}

// Run joins the cluster and runs the node until ctx is cancelled.
func (a *Agent) Run(ctx context.Context) error {
	cfg := a.cfg
	logger := klog.FromContext(ctx)
	hostname, _ := os.Hostname()
	name, err := a.nodeName(hostname)
	if err != nil {
		return err
	}
	nodeIP := agent.DefaultNodeIP()
	if cfg.NodeIP != "" {
		nodeIP = net.ParseIP(cfg.NodeIP)
	}
	token := cfg.Token
	if token == "" && cfg.TokenFile != "" {
		data, err := os.ReadFile(cfg.TokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	agentDir := filepath.Join(cfg.DataDir, "agent")
	// Every request to the cluster goes to one of its API servers,
	// failing over to the others (the first contact aside, which gives
	// the CA when the node has none yet).
	first, err := apiservers.HostPort(cfg.Server)
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		return err
	}
	servers, err := apiservers.New(apiservers.Config{Default: first, File: filepath.Join(agentDir, "apiservers.json")})
	if err != nil {
		return err
	}
	joinCfg := join.Config{
		Server: cfg.Server, Dial: servers.DialContext, Token: token, CAFile: cfg.CAFile,
		NodeName: name, Hostname: hostname, NodeIPs: []net.IP{nodeIP},
		Dir: filepath.Join(agentDir, "tls"),
	}
	creds, err := join.Join(ctx, joinCfg)
	if err != nil {
		return fmt.Errorf("join %s: %w", cfg.Server, err)
	}
	// The node's clients present the client certificate the rotator
	// keeps renewed; the kubeconfig, for an operator, names its files.
	clientCert, err := join.NewClientCert(creds, servers.DialContext, clock.RealClock{})
	if err != nil {
		return err
	}
	rotator, err := join.NewRotator(joinCfg, creds, clientCert, clock.RealClock{})
	if err != nil {
		return err
	}
	if err := writeKubeconfig(filepath.Join(agentDir, "kubeconfig.yaml"), cfg.Server, creds); err != nil {
		return err
	}
	restCfg := clientCert.RESTConfig(apiservers.Host)
	restCfg.QPS, restCfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	// A node that joined before waits briefly for its servers: cut off
	// (edge autonomy), it starts on what it kept and runs its pods from
	// its checkpoint.
	infoFile := filepath.Join(agentDir, "cluster-info.json")
	infoTimeout := 15 * time.Second
	if _, err := os.Stat(infoFile); err == nil {
		infoTimeout = time.Second
	}
	info, offline, err := join.CachedClusterInfo(ctx, client, jointoken.ClusterInfoName, infoFile, infoTimeout)
	if err != nil {
		return err
	}
	clusterCIDR, serviceCIDR, clusterDNS, domain, err := settings(info)
	if err != nil {
		return err
	}
	// The apiserver calls the node's API with a certificate of the client
	// CA; bearer tokens are checked by TokenReview.
	clientCAFile := filepath.Join(agentDir, "tls", "client-ca.crt")
	if info[jointoken.ClusterInfoClientCA] == "" {
		return errors.New("server's cluster-info: no client CA")
	}
	if err := pki.WriteFileAtomic(clientCAFile, []byte(info[jointoken.ClusterInfoClientCA]), 0o644); err != nil {
		return err
	}
	if info[jointoken.ClusterInfoNodeDNS] == "false" {
		cfg.DisableDNS = true
	}
	labels, _ := parseLabels(cfg.NodeLabels)
	taints, _ := agent.ParseTaints(cfg.NodeTaints)
	externalIPs, _ := parseExternalIPs(cfg.NodeExternalIPs)
	var embedded *containerd.Config
	if cfg.ContainerRuntimeEndpoint == "" {
		state := filepath.Join(cfg.RunDir, "containerd")
		embedded = &containerd.Config{DataDir: cfg.DataDir, State: state, PrivateRegistry: cfg.PrivateRegistry}
	}
	nc := agent.NodeConfig{
		Agent: agent.Config{
			NodeName: name, NodeIPs: []net.IP{nodeIP}, DataDir: cfg.DataDir,
			NodeLabels: labels, NodeTaints: taints, PodManifests: cfg.PodManifests,
			RuntimeEndpoint: cfg.ContainerRuntimeEndpoint,
			ClusterDNS:      []string{clusterDNS.String()}, ClusterDomain: domain,
			ResolvConf: cfg.ResolvConf, KubeletVersion: kubeversion.Get().GitVersion,
			MaxPods: int64(cfg.MaxPods), NodeExternalIPs: externalIPs, NodeExternalDNS: cfg.NodeExternalDNS,
			NodeFlags: cfg.NodeFlags,
		},
		Server: agentserver.Config{
			TLSCertFile: creds.Serving.CertFile, TLSPrivateKeyFile: creds.Serving.KeyFile,
			ClientCAFile: clientCAFile, ReadOnlyPort: cfg.ReadOnlyPort,
		},
		Logs:        logs.Config{MaxSize: cfg.ContainerLogMaxSize, MaxFiles: cfg.ContainerLogMaxFiles},
		ClusterCIDR: clusterCIDR,
		Containerd:  embedded,

		APIUnreachableAtStart: offline,
	}
	storagePath := cfg.DefaultLocalStoragePath
	if storagePath == "" {
		storagePath = filepath.Join(cfg.DataDir, "storage")
	}
	// Every joined node runs the provisioner: it acts only on claims of a
	// rancher.io/local-path class placed on it, so with no such class
	// (--disable=local-storage on the server) it does nothing.
	nc.LocalStorage = &localpath.Config{StoragePath: storagePath}
	if !cfg.DisableKubeProxy {
		nc.Proxy = &proxy.Config{NodeName: name, NodeIPs: []net.IP{nodeIP}, ClusterCIDRs: []*net.IPNet{clusterCIDR}, ServiceCIDRs: []*net.IPNet{serviceCIDR}}
		if !cfg.DisableDNS {
			nc.Proxy.ExemptIPs = []net.IP{clusterDNS}
		}
	}
	if !cfg.DisableDNS {
		nc.DNS = &dns.Config{ClusterDNS: clusterDNS, ClusterDomain: domain, ResolvConf: cfg.ResolvConf}
	}
	backend := info[jointoken.ClusterInfoFlannelBackend]
	if backend == "" {
		backend = network.BackendVXLAN
	}
	nc.Overlay = &network.OverlayConfig{NodeName: name, NodeIP: nodeIP, Backend: backend}
	node, err := agent.NewNode(nc, restCfg, nil)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(creds.ServerCAFile)
	if err != nil {
		return fmt.Errorf("server CA: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	known, _ := servers.Servers()
	logger.Info("Starting k1s agent", "server", cfg.Server, "apiservers", known, "node", name, "nodeIP", nodeIP, "dataDir", cfg.DataDir)
	go trimAfterStartup(ctx, node.Ready())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rotated := make(chan struct{})
	go func() {
		defer close(rotated)
		_ = rotator.Run(ctx) // nil once ctx ends; failures are logged and retried
	}()
	// The list of API servers follows the ones running.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = apiservers.Watch(ctx, client, servers.Set) // nil once ctx ends
	}()
	// The tunnels let the servers reach this node's API when they cannot
	// dial the node (NAT): one to every server, so that whichever handles
	// a request for the node reaches it; their streams go to the agent
	// API on loopback only.
	tun := &tunnel.Pool{Servers: servers.Servers, Target: net.JoinHostPort("127.0.0.1", strconv.Itoa(agentAPIPort)),
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return clientCert.Current(), nil }}}
	tunneled := make(chan struct{})
	go func() {
		defer close(tunneled)
		_ = tun.Run(ctx)
	}()
	err = node.Run(ctx)
	cancel()
	<-rotated
	<-watched
	<-tunneled
	return err
}

// agentAPIPort is the node's agent API port (the kubelet's).
const agentAPIPort = 10250

// writeKubeconfig writes a kubeconfig naming the node's certificate files,
// so that it stays valid as they are renewed.
func writeKubeconfig(path, server string, creds join.Credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: creds.ServerCAFile}
	cfg.AuthInfos["default"] = &clientcmdapi.AuthInfo{ClientCertificate: creds.Client.CertFile, ClientKey: creds.Client.KeyFile}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "default"}
	cfg.CurrentContext = "default"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	return pki.WriteFileAtomic(path, data, 0o600)
}

// nodeName is --node-name or the hostname, with the node id appended when
// asked; the id is made once and kept in the data dir.
func (a *Agent) nodeName(hostname string) (string, error) {
	name := strings.ToLower(a.cfg.NodeName)
	if name == "" {
		name = strings.ToLower(hostname)
	}
	if a.cfg.WithNodeID {
		path := filepath.Join(a.cfg.DataDir, "agent", "node-id")
		id, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			b := make([]byte, 4)
			if _, err := rand.Read(b); err != nil {
				return "", err
			}
			id = []byte(hex.EncodeToString(b))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return "", err
			}
			if err := pki.WriteFileAtomic(path, id, 0o644); err != nil {
				return "", err
			}
		} else if err != nil {
			return "", err
		}
		name += "-" + strings.TrimSpace(string(id))
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return "", fmt.Errorf("--node-name: %q: %s", name, strings.Join(msgs, "; "))
	}
	return name, nil
}

func settings(info map[string]string) (clusterCIDR, serviceCIDR *net.IPNet, clusterDNS net.IP, domain string, err error) {
	if _, clusterCIDR, err = net.ParseCIDR(info[jointoken.ClusterInfoClusterCIDR]); err != nil {
		return nil, nil, nil, "", fmt.Errorf("server's cluster-info: cluster-cidr %q: %w", info[jointoken.ClusterInfoClusterCIDR], err)
	}
	if _, serviceCIDR, err = net.ParseCIDR(info[jointoken.ClusterInfoServiceCIDR]); err != nil {
		return nil, nil, nil, "", fmt.Errorf("server's cluster-info: service-cidr %q: %w", info[jointoken.ClusterInfoServiceCIDR], err)
	}
	if clusterDNS = net.ParseIP(info[jointoken.ClusterInfoClusterDNS]); clusterDNS == nil {
		return nil, nil, nil, "", fmt.Errorf("server's cluster-info: cluster-dns %q is not an IP address", info[jointoken.ClusterInfoClusterDNS])
	}
	domain = info[jointoken.ClusterInfoClusterDomain]
	if domain == "" {
		domain = "cluster.local"
	}
	return clusterCIDR, serviceCIDR, clusterDNS, domain, nil
}

// settleTime is how long after the node is ready its start-up work (first
// lists, first syncs) is over.
const settleTime = 5 * time.Second

// trimAfterStartup gives back the memory only start-up needed, as k1s
// server does (internal/memtrim): the executable's pages once the node is
// ready, and again, evicting them from the page cache, once it settled.
func trimAfterStartup(ctx context.Context, ready <-chan struct{}) {
	logger := klog.FromContext(ctx)
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	if _, err := memtrim.TrimMapped(); err != nil {
		logger.V(2).Info("Cannot trim memory", "err", err)
	}
	select {
	case <-time.After(settleTime):
	case <-ctx.Done():
		return
	}
	if n, err := memtrim.Trim(); err != nil {
		logger.V(2).Info("Cannot trim memory", "err", err)
	} else {
		logger.V(4).Info("Trimmed start-up memory", "bytes", n)
	}
}

// parseExternalIPs parses --node-external-ip values, each possibly a
// comma-separated list, as k3s takes them.
func parseExternalIPs(values []string) ([]net.IP, error) {
	var out []net.IP
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			ip := net.ParseIP(s)
			if ip == nil {
				return nil, fmt.Errorf("--node-external-ip: %q is not an IP address", s)
			}
			out = append(out, ip)
		}
	}
	return out, nil
}
