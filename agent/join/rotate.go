package join

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/internal/pki"
)

// ClientCert is the node's client certificate as the node's API clients
// present it. Its transport sends each request over connections made with
// the current certificate; when the Rotator replaces it, new requests go
// over new connections with the new one, requests under way finish on
// theirs, idle connections close at once and the rest (long watches,
// which resume from their resource version) a minute later, or at half
// the time the old certificate has left if sooner. (kubelet closes every
// connection at once.) Safe for concurrent use.
type ClientCert struct {
	tlsBase *tls.Config
	dial    DialFunc // nil: direct
	clock   clock.WithDelayedExecution
	cur     atomic.Pointer[certConns]
	// transport is shared by every client of RESTConfig.
	transport *switchingTransport
}

// certConns are the connections made with one certificate.
type certConns struct {
	cert  *tls.Certificate
	rt    *http.Transport
	conns *connrotation.Dialer
}

// DialFunc connects to a server (apiservers.Balancer.DialContext).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NewClientCert loads the node's client certificate of creds and the
// server's CA. dial, when set, makes the connections (to whichever API
// server it chooses: see agent/apiservers), without a proxy; nil dials
// the request's host, through the environment's proxy if it names one.
func NewClientCert(creds Credentials, dial DialFunc, clk clock.WithDelayedExecution) (*ClientCert, error) {
	pair, err := tls.LoadX509KeyPair(creds.Client.CertFile, creds.Client.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("the node's client certificate: %w", err)
	}
	ca, err := os.ReadFile(creds.ServerCAFile)
	if err != nil {
		return nil, fmt.Errorf("the server's CA: %w", err)
	}
	base, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		return nil, err
	}
	c := &ClientCert{tlsBase: base, dial: dial, clock: clk}
	c.cur.Store(c.connsFor(&pair))
	c.transport = &switchingTransport{c: c}
	return c, nil
}

func (c *ClientCert) connsFor(cert *tls.Certificate) *certConns {
	tlsCfg := c.tlsBase.Clone()
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	dial, proxy := c.dial, http.ProxyFromEnvironment
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	} else {
		proxy = noProxy
	}
	d := connrotation.NewDialer(connrotation.DialFunc(dial))
	return &certConns{cert: cert, conns: d, rt: utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               proxy,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DialContext:         d.DialContext,
	})}
}

// noProxy sends every request directly (the agent reaches its servers
// without the environment's proxy, as k3s's agents do).
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// Current is the certificate new connections present.
func (c *ClientCert) Current() *tls.Certificate { return c.cur.Load().cert }

// set makes cert the one presented from now on and retires the
// connections made with the previous one.
func (c *ClientCert) set(cert *tls.Certificate) {
	old := c.cur.Swap(c.connsFor(cert))
	old.rt.CloseIdleConnections()
	c.clock.AfterFunc(retireAfter(old.cert, c.clock.Now()), old.conns.CloseAll)
}

// retireAfter is how long the connections of old stay open once it is
// replaced: a minute, or half the time it has left if less.
func retireAfter(old *tls.Certificate, now time.Time) time.Duration {
	d := time.Minute
	if old.Leaf != nil {
		d = min(d, old.Leaf.NotAfter.Sub(now)/2)
	}
	return max(d, 0)
}

// RESTConfig is a client configuration for server (apiservers.Host when
// the connections are made by a balancer's dialer), trusting the server's
// CA, authenticating with the current client certificate. Every client
// made from it (or its copies) shares its transport.
func (c *ClientCert) RESTConfig(server string) *rest.Config {
	return &rest.Config{Host: server, Transport: c.transport}
}

// switchingTransport sends each request with the connections of the
// current certificate.
type switchingTransport struct{ c *ClientCert }

func (t *switchingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.c.cur.Load().rt.RoundTrip(req)
}

func (t *switchingTransport) CloseIdleConnections() { t.c.cur.Load().rt.CloseIdleConnections() }

// Rotator renews the node's client and serving certificates before they
// expire, as kubelet's certificate managers do: each when Config.RenewAt
// says (a random point in 70–90 % of its life), with a new key, by a
// CertificateSigningRequest made as the node (the server's csrapproving
// controller approves a node's renewal of its own client certificate
// after a selfnodeclient SubjectAccessReview). It replaces the files
// (pki.WriteKeyPair); the node's clients present the new client
// certificate at once (ClientCert), the agent API server reloads its
// serving certificate from the files. A failed renewal is retried with
// back-off (2 s doubling to 32 s, kubelet's), indefinitely. Run once.
type Rotator struct {
	cfg    Config
	creds  Credentials
	client *ClientCert
	clock  clock.WithTicker
	// issue asks for spec's certificate with a new key.
	issue func(ctx context.Context, spec csrSpec) (certPEM, keyPEM []byte, err error)
}

// NewRotator renews the certificates of creds for the node of cfg
// (NodeName, NodeIPs, Server, Timeout, RenewAt), asking the server as
// client.
func NewRotator(cfg Config, creds Credentials, client *ClientCert, clk clock.WithTicker) (*Rotator, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.RenewAt == nil {
		cfg.RenewAt = renewAt
	}
	kube, err := kubernetes.NewForConfig(client.RESTConfig(cfg.host()))
	if err != nil {
		return nil, err
	}
	r := &Rotator{cfg: cfg, creds: creds, client: client, clock: clk}
	r.issue = func(ctx context.Context, spec csrSpec) ([]byte, []byte, error) {
		key, keyPEM, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		certPEM, err := request(ctx, kube, key, spec, cfg.Timeout)
		return certPEM, keyPEM, err
	}
	return r, nil
}

// renewAt is kubelet's: a random point in 70–90 % of the certificate's
// life, so that nodes made together do not renew together.
func renewAt(notBefore, notAfter time.Time) time.Time {
	life := notAfter.Sub(notBefore)
	return notBefore.Add(time.Duration(float64(life) * (0.7 + 0.2*rand.Float64())))
}

// Run keeps both certificates renewed until ctx is cancelled; it returns
// nil then.
func (r *Rotator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		r.keep(ctx, "client", clientSpec(r.cfg.NodeName), r.creds.Client, r.client.set)
	})
	wg.Go(func() {
		r.keep(ctx, "serving", servingSpec(r.cfg.NodeName, r.cfg.NodeIPs), r.creds.Serving, nil)
	})
	wg.Wait()
	return nil
}

// keep renews one certificate each time its renewal comes, until ctx is
// cancelled; installed, if set, is handed each new pair.
func (r *Rotator) keep(ctx context.Context, name string, spec csrSpec, files pki.CertKey, installed func(*tls.Certificate)) {
	logger := klog.FromContext(ctx).WithValues("certificate", name, "file", files.CertFile)
	for {
		at := r.clock.Now()
		if pair, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile); err != nil {
			logger.Error(err, "Cannot read the certificate; renewing it now")
		} else {
			at = r.cfg.RenewAt(pair.Leaf.NotBefore, pair.Leaf.NotAfter)
			logger.V(2).Info("Certificate renewal planned", "at", at, "expires", pair.Leaf.NotAfter)
		}
		if !r.sleep(ctx, at.Sub(r.clock.Now())) {
			return
		}
		for attempt := 0; ; attempt++ {
			err := r.renew(ctx, spec, files, installed)
			if err == nil {
				logger.Info("Renewed the node's certificate")
				break
			}
			if ctx.Err() != nil {
				return
			}
			delay := backoff(attempt)
			logger.Error(err, "Cannot renew the node's certificate; retrying", "in", delay)
			if !r.sleep(ctx, delay) {
				return
			}
		}
	}
}

// backoff is the wait after the attempt'th failure: 2 s doubling to 32 s.
func backoff(attempt int) time.Duration {
	return 2 * time.Second << min(attempt, 4)
}

// sleep waits d on the clock; false when ctx ends first.
func (r *Rotator) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// renew gets a new pair for spec and writes it to files.
func (r *Rotator) renew(ctx context.Context, spec csrSpec, files pki.CertKey, installed func(*tls.Certificate)) error {
	certPEM, keyPEM, err := r.issue(ctx, spec)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("the issued certificate: %w", err)
	}
	if pair.Leaf == nil || pair.Leaf.Subject.CommonName != spec.subject.CommonName {
		return errors.New("the issued certificate is not for the node")
	}
	if err := pki.WriteKeyPair(files.CertFile, files.KeyFile, certPEM, keyPEM); err != nil {
		return err
	}
	if installed != nil {
		installed(&pair)
	}
	return nil
}
