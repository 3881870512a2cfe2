// Package node finds and reaches a node's agent API (its kubelet port) for
// the apiserver's proxied subresources: pods/log, pods/exec, pods/attach,
// pods/portforward and nodes/proxy.
package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/k1s/k1s/internal/tunnel"
)

// DefaultAgentPort is the agent API port when a node does not publish one.
const DefaultAgentPort = 10250

// NodeGetter reads a Node.
type NodeGetter interface {
	Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error)
}

// Connection reaches node agents.
type Connection struct {
	nodes     NodeGetter
	Transport http.RoundTripper
	tunnels   *tunnel.Dialer
}

// ConnectionConfig is how the apiserver authenticates to agents.
type ConnectionConfig struct {
	// CAFile verifies the agents' serving certificates.
	CAFile string
	// CertFile and KeyFile are the apiserver's client certificate.
	CertFile, KeyFile string
	// Tunnels, when set, dials agents directly or, failing that, through
	// the tunnel their node opened (internal/tunnel).
	Tunnels *tunnel.Dialer
}

// NewConnection returns a Connection with an mTLS transport.
func NewConnection(nodes NodeGetter, cfg ConnectionConfig) (*Connection, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("agent CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("agent CA %s holds no certificate", cfg.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	if cfg.CertFile != "" {
		cert := &fileCert{certFile: cfg.CertFile, keyFile: cfg.KeyFile}
		if _, err := cert.get(nil); err != nil {
			return nil, fmt.Errorf("apiserver client certificate for agents: %w", err)
		}
		tlsConfig.GetClientCertificate = cert.get
	}
	dial := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if cfg.Tunnels != nil {
		if cfg.Tunnels.Direct == nil {
			cfg.Tunnels.Direct = dial
		}
		dial = cfg.Tunnels.DialContext
	}
	tr := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:     tlsConfig,
		DialContext:         dial,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 10,
	})
	return &Connection{nodes: nodes, Transport: tr, tunnels: cfg.Tunnels}, nil
}

// Location returns the agent API base URL of the named node: its
// InternalIP (else ExternalIP, else hostname) and published port.
func (c *Connection) Location(ctx context.Context, nodeName string) (*url.URL, error) {
	obj, err := c.nodes.Get(ctx, nodeName, &metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("node %q not found: its agent cannot be reached", nodeName))
		}
		return nil, err
	}
	node := obj.(*corev1.Node)
	host := ""
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == typ && a.Address != "" && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q has no agent address: is its agent running?", nodeName))
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultAgentPort
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if c.tunnels != nil {
		c.tunnels.Learn(addr, nodeName)
	}
	return &url.URL{Scheme: "https", Host: addr}, nil
}

// fileCert is a client certificate read again from its files when they
// change (the server renews it while it runs): new connections present
// the new one. A pair that cannot be read (between the writes of a
// renewal) leaves the previous one in use.
type fileCert struct {
	certFile, keyFile string

	mu       sync.Mutex
	cur      *tls.Certificate
	modified [2]time.Time
}

func (f *fileCert) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var mod [2]time.Time
	for i, p := range []string{f.certFile, f.keyFile} {
		st, err := os.Stat(p)
		if err != nil {
			if f.cur != nil {
				return f.cur, nil
			}
			return nil, err
		}
		mod[i] = st.ModTime()
	}
	if f.cur != nil && mod == f.modified {
		return f.cur, nil
	}
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		if f.cur != nil {
			return f.cur, nil
		}
		return nil, err
	}
	f.cur, f.modified = &cert, mod
	return f.cur, nil
}
