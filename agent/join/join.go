// Package join brings a node into a cluster with a join token (k1s agent):
// it fetches the server's CA bundle without trust and checks it against
// the token's hash (or takes --ca-file), then, as the token's bootstrap
// identity, asks for the node's client certificate with a
// CertificateSigningRequest (signer kubernetes.io/kube-apiserver-client-kubelet,
// approved and signed by the server's certificate controllers) and, as the
// node, for its serving certificate (kubernetes.io/kubelet-serving). Keys
// and certificates are kept in the node's TLS directory: a node that
// restarts with a valid client certificate joins without its token. While
// the node runs, the Rotator renews both certificates before they expire
// and ClientCert hands the node's API clients the current one.
package join

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent/apiservers"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/pki"
)

// Config says how to join.
type Config struct {
	// Server is the apiserver's URL (--server). Required. The CA is
	// fetched from it; the other requests go to it too unless Dial is set.
	Server string
	// Dial, when set, connects to the cluster's API servers (an
	// apiservers.Balancer's DialContext, failing over between them): the
	// requests then go to apiservers.Host through it, without a proxy.
	// Default: to Server directly.
	Dial DialFunc
	// Token is the join token (--token, --token-file); may be empty when
	// the node already holds a valid client certificate.
	Token string
	// CAFile is the server's CA bundle (--ca-file); needed with a token
	// that carries no CA hash. Default: fetched and checked.
	CAFile string
	// NodeName, Hostname and NodeIPs name the node in its certificates.
	NodeName, Hostname string
	NodeIPs            []net.IP
	// Dir keeps the node's keys and certificates (<data-dir>/agent/tls).
	Dir string
	// Timeout bounds the wait for each certificate. Default 2m.
	Timeout time.Duration
	// RenewAt is when the Rotator renews a certificate valid from
	// notBefore to notAfter. Default: a random point in 70–90 % of its
	// life, as kubelet's (tests renew sooner).
	RenewAt func(notBefore, notAfter time.Time) time.Time
}

// Credentials are the files a joined node uses.
type Credentials struct {
	ServerCAFile string
	Client       pki.CertKey // system:node:<name>
	Serving      pki.CertKey
}

// Join returns the node's credentials, requesting what is missing; with
// RenewFile in Dir (`k1s certificate rotate` on an agent) it renews both
// certificates, as the node, and removes the file.
func Join(ctx context.Context, cfg Config) (Credentials, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return Credentials{}, fmt.Errorf("create %s: %w", cfg.Dir, err)
	}
	creds := credentials(cfg.Dir)
	ca, err := serverCA(ctx, cfg)
	if err != nil {
		return Credentials{}, err
	}
	if err := pki.WriteFileAtomic(creds.ServerCAFile, ca, 0o644); err != nil {
		return Credentials{}, err
	}
	logger := klog.FromContext(ctx)
	renewFile := filepath.Join(cfg.Dir, RenewFile)
	_, err = os.Stat(renewFile)
	renew := err == nil
	client := clientSpec(cfg.NodeName)
	// A renewal with a valid client certificate is the node's own, as the
	// rotator's: no token needed.
	asNode := func() (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(cfg.restConfig(rest.TLSClientConfig{CAData: ca, CertFile: creds.Client.CertFile, KeyFile: creds.Client.KeyFile}, ""))
	}
	switch {
	case !valid(creds.Client, client):
		if cfg.Token == "" {
			return Credentials{}, errors.New("--token: required: the node has no valid client certificate yet")
		}
		tok, err := jointoken.Parse(cfg.Token)
		if err != nil {
			return Credentials{}, fmt.Errorf("--token: %w", err)
		}
		boot, err := kubernetes.NewForConfig(cfg.restConfig(rest.TLSClientConfig{CAData: ca}, tok.Bearer()))
		if err != nil {
			return Credentials{}, err
		}
		logger.Info("Requesting the node's client certificate", "node", cfg.NodeName)
		if err := obtain(ctx, boot, creds.Client, client, cfg.Timeout, false); err != nil {
			if apierrors.IsUnauthorized(err) {
				return Credentials{}, fmt.Errorf("client certificate: the server refused the join token (unknown, expired or deleted): %w", err)
			}
			return Credentials{}, fmt.Errorf("client certificate: %w", err)
		}
	case renew:
		node, err := asNode()
		if err != nil {
			return Credentials{}, err
		}
		logger.Info("Renewing the node's client certificate", "node", cfg.NodeName, "file", renewFile)
		if err := obtain(ctx, node, creds.Client, client, cfg.Timeout, true); err != nil {
			return Credentials{}, fmt.Errorf("renew the client certificate: %w", err)
		}
	}
	serving := servingSpec(cfg.NodeName, cfg.NodeIPs)
	if renew || !valid(creds.Serving, serving) {
		node, err := asNode()
		if err != nil {
			return Credentials{}, err
		}
		logger.Info("Requesting the node's serving certificate", "node", cfg.NodeName, "ips", cfg.NodeIPs)
		if err := obtain(ctx, node, creds.Serving, serving, cfg.Timeout, renew); err != nil {
			return Credentials{}, fmt.Errorf("serving certificate: %w", err)
		}
	}
	if renew {
		if err := os.Remove(renewFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Credentials{}, err
		}
	}
	return creds, nil
}

// host is the URL the node's clients address: Server, or the balancer's.
func (cfg Config) host() string {
	if cfg.Dial != nil {
		return apiservers.Host
	}
	return cfg.Server
}

// restConfig is a client configuration for the node's requests.
func (cfg Config) restConfig(tlsCfg rest.TLSClientConfig, bearer string) *rest.Config {
	rc := &rest.Config{Host: cfg.host(), BearerToken: bearer, TLSClientConfig: tlsCfg}
	if cfg.Dial != nil {
		rc.Dial, rc.Proxy = cfg.Dial, noProxy
	}
	return rc
}

// RenewFile, in the node's TLS directory, asks the next Join to renew the
// node's certificates although they are valid.
const RenewFile = "renew"

// credentials names the files kept in dir.
func credentials(dir string) Credentials {
	return Credentials{
		ServerCAFile: filepath.Join(dir, "server-ca.crt"),
		Client:       pki.CertKey{CertFile: filepath.Join(dir, "client-agent.crt"), KeyFile: filepath.Join(dir, "client-agent.key")},
		Serving:      pki.CertKey{CertFile: filepath.Join(dir, "serving-agent.crt"), KeyFile: filepath.Join(dir, "serving-agent.key")},
	}
}

// csrSpec is what a certificate request asks for.
type csrSpec struct {
	subject pkix.Name
	dns     []string
	ips     []net.IP
	signer  string
	usages  []certificatesv1.KeyUsage
}

// clientSpec is the node's client certificate: system:node:<name>.
func clientSpec(node string) csrSpec {
	return csrSpec{
		subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		signer:  certificatesv1.KubeAPIServerClientKubeletSignerName,
		usages:  []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}
}

// servingSpec is the node's serving certificate: the node's name and
// addresses only (the approver cannot tell a first-joining node's
// hostname from a name it has no right to, and the apiserver reaches the
// node by address).
func servingSpec(node string, ips []net.IP) csrSpec {
	return csrSpec{
		subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		dns:     []string{node}, ips: ips,
		signer: certificatesv1.KubeletServingSignerName,
		usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
	}
}

// serverCA is --ca-file, or the bundle the server serves at /cacerts once
// it matches the token's hash.
func serverCA(ctx context.Context, cfg Config) ([]byte, error) {
	if cfg.CAFile != "" {
		ca, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		return ca, nil
	}
	var tok jointoken.Token
	if cfg.Token != "" {
		var err error
		if tok, err = jointoken.Parse(cfg.Token); err != nil {
			return nil, fmt.Errorf("--token: %w", err)
		}
	}
	// A node that joined before keeps the CA it checked then, and so
	// starts while the server is away.
	if ca, err := os.ReadFile(filepath.Join(cfg.Dir, "server-ca.crt")); err == nil && (tok.CAHash == "" || tok.Verify(ca) == nil) {
		return ca, nil
	}
	return jointoken.FetchCA(ctx, cfg.Server, tok)
}

// valid reports whether the pair at ck exists, the certificate matches its
// key, has spec's subject and names, and has over a tenth of its life
// left.
func valid(ck pki.CertKey, spec csrSpec) bool {
	pair, err := tls.LoadX509KeyPair(ck.CertFile, ck.KeyFile)
	if err != nil {
		return false
	}
	c := pair.Leaf
	if c == nil || c.Subject.CommonName != spec.subject.CommonName {
		return false
	}
	now := time.Now()
	if now.After(c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 10)) {
		return false
	}
	for _, d := range spec.dns {
		if c.VerifyHostname(d) != nil {
			return false
		}
	}
	for _, ip := range spec.ips {
		if c.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}

// obtain asks for spec's certificate with a new key (fresh), or the one
// on disk, and writes both once it is issued (pki.WriteKeyPair).
func obtain(ctx context.Context, client kubernetes.Interface, out pki.CertKey, spec csrSpec, timeout time.Duration, fresh bool) error {
	var key crypto.Signer
	var keyPEM []byte
	var err error
	if fresh {
		key, keyPEM, err = newKey()
	} else {
		key, keyPEM, err = loadOrNewKey(out.KeyFile)
	}
	if err != nil {
		return err
	}
	cert, err := request(ctx, client, key, spec, timeout)
	if err != nil {
		return err
	}
	return pki.WriteKeyPair(out.CertFile, out.KeyFile, cert, keyPEM)
}

// request asks for spec's certificate for key with a CSR and waits up to
// timeout for it to be issued.
func request(ctx context.Context, client kubernetes.Interface, key crypto.Signer, spec csrSpec, timeout time.Duration) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: spec.subject, DNSNames: spec.dns, IPAddresses: spec.ips}, key)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	csrs := client.CertificatesV1().CertificateSigningRequests()
	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: spec.signer, Usages: spec.usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the certificate request: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cert, err := waitIssued(wctx, client, created.Name)
	if err != nil {
		return nil, fmt.Errorf("certificate request %s: %w", created.Name, err)
	}
	return cert, nil
}

func waitIssued(ctx context.Context, client kubernetes.Interface, name string) ([]byte, error) {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	for {
		w, err := csrs.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			return nil, err
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				continue
			}
			for _, c := range csr.Status.Conditions {
				if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status == corev1.ConditionTrue {
					w.Stop()
					return nil, fmt.Errorf("%s: %s %s", c.Type, c.Reason, c.Message)
				}
			}
			if len(csr.Status.Certificate) > 0 {
				w.Stop()
				return csr.Status.Certificate, nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("not issued in time (is the server's csrapproving controller running?): %w", ctx.Err())
		}
	}
}

func loadOrNewKey(path string) (crypto.Signer, []byte, error) {
	if data, err := os.ReadFile(path); err == nil {
		if b, _ := pem.Decode(data); b != nil {
			if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
				return k, data, nil
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	return newKey()
}

func newKey() (crypto.Signer, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// ClusterInfo reads the server's cluster-info ConfigMap (kube-public).
func ClusterInfo(ctx context.Context, client kubernetes.Interface, name string) (map[string]string, error) {
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read kube-public/%s: %w", name, err)
	}
	return cm.Data, nil
}

// CachedClusterInfo is ClusterInfo kept in the file cache: read from the
// server and written there (when it changed) when the server answers
// within timeout, read from the file when it does not (a node restarting
// while its server is away runs on what it last learnt); cached says
// which.
func CachedClusterInfo(ctx context.Context, client kubernetes.Interface, name, cache string, timeout time.Duration) (info map[string]string, cached bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err = ClusterInfo(rctx, client, name)
	if err == nil {
		if b, merr := json.Marshal(info); merr == nil {
			if old, rerr := os.ReadFile(cache); rerr != nil || !bytes.Equal(old, b) {
				if werr := pki.WriteFileAtomic(cache, b, 0o600); werr != nil {
					klog.FromContext(ctx).Error(werr, "Cannot keep the cluster info", "file", cache)
				}
			}
		}
		return info, false, nil
	}
	b, rerr := os.ReadFile(cache)
	if rerr != nil {
		return nil, false, err
	}
	var kept map[string]string
	if jerr := json.Unmarshal(b, &kept); jerr != nil {
		return nil, false, fmt.Errorf("%w; and the kept copy %s: %v", err, cache, jerr)
	}
	klog.FromContext(ctx).Info("Server unreachable: using the cluster info kept from the last join", "err", err, "file", cache)
	return kept, true, nil
}
