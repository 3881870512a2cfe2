package certificates

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/internal/pki"
)

// SignerConfig configures csrsigning.
type SignerConfig struct {
	// ClientCA signs kube-apiserver-client and kube-apiserver-client-kubelet
	// certificates; ServerCA signs kubelet-serving ones. Required.
	ClientCA, ServerCA pki.CertKey
	// Duration is the longest life of a certificate signed
	// (--cluster-signing-duration). Default 8760h.
	Duration time.Duration
}

// DefaultSigningDuration is --cluster-signing-duration's default.
const DefaultSigningDuration = 365 * 24 * time.Hour

// signerRule is how one signer checks and signs.
type signerRule struct {
	ca    *pki.CA
	check func(*x509.CertificateRequest, []certificatesv1.KeyUsage) error
}

// Signer signs approved requests. Run may be called once.
type Signer struct {
	client   kubernetes.Interface
	lister   certlisters.CertificateSigningRequestLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	rules    map[string]signerRule
	duration time.Duration
	clock    clock.PassiveClock
}

// NewSigner loads the CAs of cfg and watches csrs.
func NewSigner(cfg SignerConfig, client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, clk clock.WithTicker) (*Signer, error) {
	if cfg.Duration == 0 {
		cfg.Duration = DefaultSigningDuration
	}
	if cfg.Duration < 10*time.Minute {
		return nil, fmt.Errorf("--cluster-signing-duration: %s is under 10 minutes", cfg.Duration)
	}
	client2, err := pki.LoadCA(cfg.ClientCA.CertFile, cfg.ClientCA.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("csrsigning: client CA: %w", err)
	}
	server, err := pki.LoadCA(cfg.ServerCA.CertFile, cfg.ServerCA.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("csrsigning: server CA: %w", err)
	}
	s := &Signer{
		client: client,
		lister: csrs.Lister(),
		rules: map[string]signerRule{
			certificatesv1.KubeAPIServerClientSignerName:        {ca: client2, check: apiserverClientErr},
			certificatesv1.KubeAPIServerClientKubeletSignerName: {ca: client2, check: kubeletClientErr},
			certificatesv1.KubeletServingSignerName:             {ca: server, check: kubeletServingErr},
		},
		duration: cfg.Duration,
		clock:    clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "certificate", Clock: clk}),
	}
	reg, err := csrs.Informer().AddEventHandler(enqueueHandler(s.queue))
	if err != nil {
		return nil, err
	}
	s.synced = reg.HasSynced
	return s, nil
}

func enqueueHandler(q workqueue.TypedRateLimitingInterface[string]) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }}
}

// SignerDescriptor is csrsigning as kube-controller-manager names it.
func SignerDescriptor(cfg SignerConfig) manager.Controller {
	return manager.Controller{
		Name:           "certificatesigningrequest-signing-controller",
		Aliases:        []string{"csrsigning"},
		ServiceAccount: "certificate-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			s, err := NewSigner(cfg, client, cc.InformerFactory.Certificates().V1().CertificateSigningRequests(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return runQueue(ctx, s.queue, s.synced, 2, s.sync) })
			return nil
		},
	}
}

// runQueue runs sync over the queue's keys with workers until ctx ends.
func runQueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], synced cache.InformerSynced, workers int, sync func(context.Context, string) error) error {
	defer q.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return nil
	}
	for range workers {
		go func() {
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				if err := sync(ctx, key); err != nil {
					klog.FromContext(ctx).V(2).Info("Certificate request sync failed; retrying", "csr", key, "err", err)
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		}()
	}
	<-ctx.Done()
	return nil
}

func (s *Signer) sync(ctx context.Context, name string) error {
	csr, err := s.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	rule, ok := s.rules[csr.Spec.SignerName]
	if !ok || !approved(csr) || finished(csr) {
		return nil
	}
	csr = csr.DeepCopy()
	req, err := parseRequest(csr)
	if err == nil {
		err = rule.check(req, csr.Spec.Usages)
	}
	if err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure",
			Message: err.Error(), LastUpdateTime: metav1.NewTime(s.clock.Now()), LastTransitionTime: metav1.NewTime(s.clock.Now()),
		})
		_, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		return err
	}
	life := s.duration
	if es := csr.Spec.ExpirationSeconds; es != nil && time.Duration(*es)*time.Second < life {
		life = time.Duration(*es) * time.Second
	}
	certPEM, err := signRequest(rule.ca, req, csr.Spec.Usages, s.clock.Now(), life)
	if err != nil {
		return fmt.Errorf("sign %s: %w", name, err)
	}
	csr.Status.Certificate = certPEM
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the certificate of %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Signed certificate request", "csr", name, "signer", csr.Spec.SignerName, "subject", req.Subject.CommonName)
	return nil
}

// signRequest issues req's subject and names with the CA, for usages,
// valid from five minutes ago (clock skew) for life, and never past the CA.
func signRequest(ca *pki.CA, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, now time.Time, life time.Duration) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    now.Add(-5 * time.Minute).UTC(),
		NotAfter:     now.Add(life).UTC(),
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
	}
	if ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("CA not loaded")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
