package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent"
	"github.com/k1s/k1s/agent/dns"
	"github.com/k1s/k1s/agent/localpath"
	"github.com/k1s/k1s/agent/logs"
	"github.com/k1s/k1s/agent/network"
	"github.com/k1s/k1s/agent/proxy"
	agentserver "github.com/k1s/k1s/agent/server"
	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/internal/nodewatch"
	"github.com/k1s/k1s/internal/pki"
)

// nodeComponent builds this server's node: containerd (unless an external
// runtime is named), the agent with its API server, the service proxy and
// the DNS — the same node `k1s agent` runs. apiReady is closed once the
// apiserver serves.
func (s *Server) nodeComponent(cluster *pki.Cluster, local string, apiReady <-chan struct{}) (node *agent.Node, err error) {
	var embedded *containerd.Config
	if s.cfg.ContainerRuntimeEndpoint == "" {
		embedded = &containerd.Config{DataDir: s.cfg.DataDir, PrivateRegistry: s.cfg.PrivateRegistry}
	}
	certs, err := s.nodeCerts(cluster, local)
	if err != nil {
		return nil, err
	}
	// The in-process clients present the certificates of the files, read
	// again as they are renewed.
	restCfg := fileClientConfig(local, cluster.ServerCA, certs.Client)
	restCfg.QPS, restCfg.Burst = 50, 100
	// Protobuf as the kubelet's client; the apiserver's handler is called
	// in process, with the node's certificate as the identity.
	restCfg.ContentType = k8sruntime.ContentTypeProtobuf
	restCfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	if restCfg, err = s.inProcess.ClientConfig(restCfg); err != nil {
		return nil, err
	}
	proxyRestCfg := fileClientConfig(local, cluster.ServerCA, certs.Proxy)
	proxyRestCfg.QPS, proxyRestCfg.Burst = 50, 100
	proxyRestCfg.ContentType = k8sruntime.ContentTypeProtobuf
	proxyRestCfg.AcceptContentTypes = restCfg.AcceptContentTypes
	if proxyRestCfg, err = s.inProcess.ClientConfig(proxyRestCfg); err != nil {
		return nil, err
	}
	var proxyCfg *proxy.Config
	if !s.cfg.DisableKubeProxy {
		proxyCfg = &proxy.Config{
			NodeName:     s.cfg.NodeName,
			NodeIPs:      uniqueIPs(s.p.nodeIP),
			ClusterCIDRs: []*net.IPNet{s.p.clusterCIDR},
			ServiceCIDRs: []*net.IPNet{s.p.serviceCIDR},
		}
		if !s.p.disabled[ComponentCoreDNS] {
			proxyCfg.ExemptIPs = []net.IP{net.ParseIP(s.cfg.ClusterDNS)}
		}
	}
	var dnsCfg *dns.Config
	if !s.p.disabled[ComponentCoreDNS] {
		dnsCfg = &dns.Config{
			ClusterDNS:    net.ParseIP(s.cfg.ClusterDNS),
			ClusterDomain: s.cfg.ClusterDomain,
			ResolvConf:    s.cfg.ResolvConf,
		}
	}
	var localStorage *localpath.Config
	if !s.p.disabled[ComponentLocalStorage] {
		localStorage = &localpath.Config{StoragePath: s.cfg.DefaultLocalStoragePath}
	}
	taints, err := agent.ParseTaints(s.cfg.NodeTaints)
	if err != nil {
		return nil, err
	}
	externalIPs, err := ParseExternalIPs(s.cfg.NodeExternalIPs)
	if err != nil {
		return nil, err
	}
	node, err = agent.NewNode(agent.NodeConfig{
		Agent: agent.Config{
			NodeName:        s.cfg.NodeName,
			NodeIPs:         uniqueIPs(s.p.nodeIP),
			DataDir:         s.cfg.DataDir,
			NodeLabels:      s.p.nodeLabels,
			NodeTaints:      taints,
			PodManifests:    s.cfg.PodManifests,
			RuntimeEndpoint: s.cfg.ContainerRuntimeEndpoint,
			ClusterDNS:      []string{s.cfg.ClusterDNS},
			ClusterDomain:   s.cfg.ClusterDomain,
			ResolvConf:      s.cfg.ResolvConf,
			KubeletVersion:  kubeletVersion(),
			MaxPods:         int64(s.cfg.MaxPods),
			NodeFlags:       s.cfg.NodeFlags,
			NodeExternalIPs: externalIPs,
			NodeExternalDNS: s.cfg.NodeExternalDNS,
		},
		Server: agentserver.Config{
			TLSCertFile:       certs.Serving.CertFile,
			TLSPrivateKeyFile: certs.Serving.KeyFile,
			ClientCAFile:      certs.ClientCAFile,
			ReadOnlyPort:      s.cfg.ReadOnlyPort,
		},
		Logs:         logs.Config{MaxSize: s.cfg.ContainerLogMaxSize, MaxFiles: s.cfg.ContainerLogMaxFiles},
		ClusterCIDR:  s.p.clusterCIDR,
		Containerd:   embedded,
		APIReady:     apiReady,
		Proxy:        proxyCfg,
		DNS:          dnsCfg,
		LocalStorage: localStorage,
		Overlay:      &network.OverlayConfig{NodeName: s.cfg.NodeName, NodeIP: s.p.nodeIP, Backend: s.cfg.FlannelBackend},
	}, restCfg, proxyRestCfg)
	if err != nil {
		return nil, err
	}
	return node, nil
}

// nodeCerts issues this server's node's certificates (again, when they
// are due) and writes its kubeconfigs, which carry them.
func (s *Server) nodeCerts(cluster *pki.Cluster, local string) (pki.NodeCerts, error) {
	hostname, _ := os.Hostname()
	agentDir := filepath.Join(s.cfg.DataDir, "agent")
	certs, err := cluster.IssueNodeCerts(filepath.Join(agentDir, "tls"), s.cfg.NodeName, hostname, uniqueIPs(s.p.nodeIP, s.p.advertise))
	if err != nil {
		return certs, fmt.Errorf("node certificates: %w", err)
	}
	if err := pki.WriteKubeconfig(filepath.Join(agentDir, "kubeconfig.yaml"), local, cluster.ServerCA, certs.Client, 0o600); err != nil {
		return certs, err
	}
	return certs, pki.WriteKubeconfig(filepath.Join(agentDir, "kubeproxy.kubeconfig"), local, cluster.ServerCA, certs.Proxy, 0o600)
}

// controlPlaneLabeler gives this server's node the control-plane role label
// once the node registers. Nodes may not set node-role labels themselves
// (NodeRestriction), so the server does it, as k3s does.
type controlPlaneLabeler struct {
	client   kubernetes.Interface
	nodeName string
}

func (l *controlPlaneLabeler) Run(ctx context.Context) error {
	return l.run(ctx, 2*time.Second)
}

// run watches the node and labels it whenever it is seen without the
// label (a node registering again comes back without it); a failed patch
// is tried again after retry.
func (l *controlPlaneLabeler) run(ctx context.Context, retry time.Duration) error {
	w, err := nodewatch.New(l.client, l.nodeName)
	if err != nil {
		return err
	}
	defer w.Start(ctx)()

	patch := []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"true"}}}`)
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.Changed():
		case <-again:
		}
		again = nil
		node, ok := w.Node()
		if !ok || node.Labels["node-role.kubernetes.io/control-plane"] == "true" {
			continue
		}
		if _, err := l.client.CoreV1().Nodes().Patch(ctx, l.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			klog.FromContext(ctx).V(2).Info("Could not label the control-plane node yet", "err", err)
			again = time.After(retry)
		}
	}
}
