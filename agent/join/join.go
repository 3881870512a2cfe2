// Package join brings a node into a cluster with a join token (k1s agent):
// it fetches the server's CA bundle without trust and checks it against
// the token's hash (or takes --ca-file), then, as the token's bootstrap
// identity, asks for the node's client certificate with a
// CertificateSigningRequest (signer kubernetes.io/kube-apiserver-client-kubelet,
// approved and signed by the server's certificate controllers) and, as the
// node, for its serving certificate (kubernetes.io/kubelet-serving). Keys
// and certificates are kept in the node's TLS directory: a node that
// restarts with a valid client certificate joins without its token.
package join

import (
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
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/pki"
)

// Config says how to join.
type Config struct {
	// Server is the apiserver's URL (--server). Required.
	Server string
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
}

// Credentials are the files a joined node uses.
type Credentials struct {
	ServerCAFile string
	Client       pki.CertKey // system:node:<name>
	Serving      pki.CertKey
}

// Join returns the node's credentials, requesting what is missing.
func Join(ctx context.Context, cfg Config) (Credentials, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return Credentials{}, fmt.Errorf("create %s: %w", cfg.Dir, err)
	}
	creds := Credentials{
		ServerCAFile: filepath.Join(cfg.Dir, "server-ca.crt"),
		Client:       pki.CertKey{CertFile: filepath.Join(cfg.Dir, "client-agent.crt"), KeyFile: filepath.Join(cfg.Dir, "client-agent.key")},
		Serving:      pki.CertKey{CertFile: filepath.Join(cfg.Dir, "serving-agent.crt"), KeyFile: filepath.Join(cfg.Dir, "serving-agent.key")},
	}
	ca, err := serverCA(ctx, cfg)
	if err != nil {
		return Credentials{}, err
	}
	if err := pki.WriteFileAtomic(creds.ServerCAFile, ca, 0o644); err != nil {
		return Credentials{}, err
	}
	logger := klog.FromContext(ctx)
	clientSubject := pkix.Name{CommonName: "system:node:" + cfg.NodeName, Organization: []string{"system:nodes"}}
	if !valid(creds.Client.CertFile, clientSubject, nil, nil) {
		if cfg.Token == "" {
			return Credentials{}, errors.New("--token: required: the node has no valid client certificate yet")
		}
		tok, err := jointoken.Parse(cfg.Token)
		if err != nil {
			return Credentials{}, fmt.Errorf("--token: %w", err)
		}
		boot, err := kubernetes.NewForConfig(&rest.Config{Host: cfg.Server, BearerToken: tok.Bearer(), TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
		if err != nil {
			return Credentials{}, err
		}
		logger.Info("Requesting the node's client certificate", "node", cfg.NodeName)
		err = request(ctx, boot, creds.Client, clientSubject, nil, nil, certificatesv1.KubeAPIServerClientKubeletSignerName,
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, cfg.Timeout)
		if err != nil {
			return Credentials{}, fmt.Errorf("client certificate: %w", err)
		}
	}
	// The node's name and addresses only: the approver cannot tell a
	// first-joining node's hostname from a name it has no right to, and
	// the apiserver reaches the node by address.
	dns := []string{cfg.NodeName}
	if !valid(creds.Serving.CertFile, clientSubject, dns, cfg.NodeIPs) {
		node, err := kubernetes.NewForConfig(&rest.Config{Host: cfg.Server,
			TLSClientConfig: rest.TLSClientConfig{CAData: ca, CertFile: creds.Client.CertFile, KeyFile: creds.Client.KeyFile}})
		if err != nil {
			return Credentials{}, err
		}
		logger.Info("Requesting the node's serving certificate", "node", cfg.NodeName, "ips", cfg.NodeIPs)
		err = request(ctx, node, creds.Serving, clientSubject, dns, cfg.NodeIPs, certificatesv1.KubeletServingSignerName,
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, cfg.Timeout)
		if err != nil {
			return Credentials{}, fmt.Errorf("serving certificate: %w", err)
		}
	}
	return creds, nil
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
	if tok.CAHash == "" {
		return nil, errors.New("--token: the token carries no CA hash (a bare bootstrap token): give the server's CA with --ca-file, or use the K10… token from the server's <data-dir>/server/token")
	}
	// The bundle is fetched without trust; nothing secret is sent.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // checked against the token below
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Server, "/")+"/cacerts", nil)
	if err != nil {
		return nil, fmt.Errorf("--server: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the server's CA from %s: %w", cfg.Server, err)
	}
	defer resp.Body.Close()
	ca, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the server's CA from %s: status %d %v", cfg.Server, resp.StatusCode, err)
	}
	if err := tok.Verify(ca); err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	return ca, nil
}

// valid reports whether the certificate at path exists, has the subject
// and names, and has over a tenth of its life left.
func valid(path string, subject pkix.Name, dns []string, ips []net.IP) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil || c.Subject.CommonName != subject.CommonName {
		return false
	}
	now := time.Now()
	if now.After(c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 10)) {
		return false
	}
	for _, d := range dns {
		if c.VerifyHostname(d) != nil {
			return false
		}
	}
	for _, ip := range ips {
		if c.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}

// request makes a key (or reuses the one on disk), asks for its
// certificate with a CSR, waits for it to be issued and writes both.
func request(ctx context.Context, client kubernetes.Interface, out pki.CertKey, subject pkix.Name, dns []string, ips []net.IP,
	signer string, usages []certificatesv1.KeyUsage, timeout time.Duration) error {
	key, keyPEM, err := loadOrNewKey(out.KeyFile)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns, IPAddresses: ips}, key)
	if err != nil {
		return fmt.Errorf("certificate request: %w", err)
	}
	csrs := client.CertificatesV1().CertificateSigningRequests()
	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, Usages: usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the server refused the join token (unknown, expired or deleted): %w", err)
		}
		return fmt.Errorf("create the certificate request: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cert, err := waitIssued(wctx, client, created.Name)
	if err != nil {
		return fmt.Errorf("certificate request %s: %w", created.Name, err)
	}
	if err := pki.WriteFileAtomic(out.KeyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return pki.WriteFileAtomic(out.CertFile, cert, 0o644)
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
// server and written there when the server answers within timeout, read
// from the file when it does not (a node restarting while its server is
// away runs on what it last learnt).
func CachedClusterInfo(ctx context.Context, client kubernetes.Interface, name, cache string, timeout time.Duration) (map[string]string, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := ClusterInfo(rctx, client, name)
	if err == nil {
		if b, merr := json.Marshal(info); merr == nil {
			if werr := pki.WriteFileAtomic(cache, b, 0o600); werr != nil {
				klog.FromContext(ctx).Error(werr, "Cannot keep the cluster info", "file", cache)
			}
		}
		return info, nil
	}
	b, rerr := os.ReadFile(cache)
	if rerr != nil {
		return nil, err
	}
	var cached map[string]string
	if jerr := json.Unmarshal(b, &cached); jerr != nil {
		return nil, fmt.Errorf("%w; and the kept copy %s: %v", err, cache, jerr)
	}
	klog.FromContext(ctx).Info("Server unreachable: using the cluster info kept from the last join", "err", err, "file", cache)
	return cached, nil
}
