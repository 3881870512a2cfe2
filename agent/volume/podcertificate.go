package volume

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// pcrAbandonAfter is how long a created PodCertificateRequest that cannot
// be read is waited for before a new one is made (kubelet assumes it was
// deleted after the same time).
const pcrAbandonAfter = 10 * time.Minute

// PodCertificates is what podCertificate projections need of the API: the
// node's and service accounts' UIDs, and creating and reading
// PodCertificateRequests. Errors for which apierrors.IsNotFound is true mean
// the object does not exist. Safe for concurrent use.
type PodCertificates interface {
	// Node returns the node the agent runs as.
	Node(ctx context.Context) (*corev1.Node, error)
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	CreatePodCertificateRequest(ctx context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error)
	GetPodCertificateRequest(ctx context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error)
}

// ClientPodCertificates implements PodCertificates with client, acting as
// node nodeName.
func ClientPodCertificates(client kubernetes.Interface, nodeName string) PodCertificates {
	return &clientPodCertificates{client: client, nodeName: nodeName}
}

type clientPodCertificates struct {
	client   kubernetes.Interface
	nodeName string
}

func (c *clientPodCertificates) Node(ctx context.Context) (*corev1.Node, error) {
	return c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
}

func (c *clientPodCertificates) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c *clientPodCertificates) CreatePodCertificateRequest(ctx context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error) {
	return c.client.CertificatesV1().PodCertificateRequests(req.Namespace).Create(ctx, req, metav1.CreateOptions{})
}

// GetPodCertificateRequest lists with a spec.nodeName field selector: the
// node authorizer lets a node read requests only that way.
func (c *clientPodCertificates) GetPodCertificateRequest(ctx context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error) {
	sel := fields.AndSelectors(fields.OneTermEqualSelector("spec.nodeName", c.nodeName), fields.OneTermEqualSelector("metadata.name", name))
	list, err := c.client.CertificatesV1().PodCertificateRequests(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(certificatesv1.Resource("podcertificaterequests"), name)
}

// certState is the credential of one podCertificate projection: the issued
// key and chain, and the request waiting for a signer, if any.
type certState struct {
	key, chain     []byte
	beginRefreshAt time.Time
	notAfter       time.Time

	pendingKey  []byte
	pendingName string
	pendingAt   time.Time

	// final is set once a request was denied or failed: the projection
	// stays failed for the life of the pod, as in kubelet.
	final error
}

// due says whether the projection needs work: a request is pending or the
// issued certificate reached its refresh time.
func (c *certState) due(now time.Time) bool {
	if c.final != nil {
		return false
	}
	return c.pendingName != "" || c.chain == nil || !now.Before(c.beginRefreshAt)
}

// certDue says whether a pod certificate of the volume needs work.
func (vs *volumeState) certDue(now time.Time) bool {
	for _, c := range vs.certs {
		if c.due(now) {
			return true
		}
	}
	return false
}

// podCertificateFiles adds the files of a podCertificate projection to out.
// The first call creates a PodCertificateRequest with a fresh key; later
// calls read it until a signer issues (status.certificateChain) or denies
// or fails it. Once issued, a new request is made at beginRefreshAt while
// the current certificate stays in use until its successor is issued.
func (m *manager) podCertificateFiles(ctx context.Context, pod *corev1.Pod, vs *volumeState, index int, src *corev1.PodCertificateProjection, defaultMode int32, defaultUser *int64, out map[string]file) error {
	if m.certs == nil {
		return errors.New("podCertificate projections are not supported by this node: no PodCertificateRequest client is configured")
	}
	st := vs.certs[index]
	if st == nil {
		st = &certState{}
		vs.certs[index] = st
	}
	if err := m.advanceCert(ctx, pod, st, src); err != nil {
		return err
	}
	uid := defaultUser
	if src.User != nil {
		uid = src.User
	}
	mode := defaultMode
	if uid != nil || fsGroup(pod) != nil {
		mode = 0o600
	}
	if src.CredentialBundlePath != "" {
		bundle := append(append([]byte{}, st.key...), st.chain...)
		out[src.CredentialBundlePath] = file{data: bundle, mode: mode, uid: uid}
	}
	if src.KeyPath != "" {
		out[src.KeyPath] = file{data: st.key, mode: mode, uid: uid}
	}
	if src.CertificateChainPath != "" {
		out[src.CertificateChainPath] = file{data: st.chain, mode: mode, uid: uid}
	}
	return nil
}

// advanceCert moves st forward: it creates a request when none is pending
// and the certificate is missing or due for refresh, and collects the
// signer's answer to a pending one. It returns an error when there is no
// certificate to write.
func (m *manager) advanceCert(ctx context.Context, pod *corev1.Pod, st *certState, src *corev1.PodCertificateProjection) error {
	if st.final != nil {
		return st.final
	}
	logger := klog.FromContext(ctx)
	now := m.clock.Now()
	issued := st.chain != nil
	if st.pendingName == "" && (!issued || !now.Before(st.beginRefreshAt)) {
		key, req, err := m.buildPodCertificateRequest(ctx, pod, src)
		if err == nil {
			req, err = m.certs.CreatePodCertificateRequest(ctx, req)
		}
		if err != nil {
			err = fmt.Errorf("create PodCertificateRequest for signer %q: %w", src.SignerName, err)
			if issued && now.Before(st.notAfter) {
				logger.Error(err, "Pod certificate refresh failed, using the current certificate", "pod", klog.KObj(pod), "notAfter", st.notAfter)
				return nil
			}
			return err
		}
		st.pendingKey, st.pendingName, st.pendingAt = key, req.Name, now
		logger.V(2).Info("PodCertificateRequest created", "pod", klog.KObj(pod), "request", req.Name, "signer", src.SignerName)
	}
	if st.pendingName == "" {
		return nil
	}
	pcr, err := m.certs.GetPodCertificateRequest(ctx, pod.Namespace, st.pendingName)
	switch {
	case apierrors.IsNotFound(err) && now.Sub(st.pendingAt) >= pcrAbandonAfter:
		// Deleted before it was answered: make a new one next time.
		st.pendingKey, st.pendingName = nil, ""
		return m.certOrWait(st, now, fmt.Errorf("PodCertificateRequest for signer %q disappeared before it was issued", src.SignerName))
	case err != nil:
		return m.certOrWait(st, now, fmt.Errorf("get PodCertificateRequest %q: %w", st.pendingName, err))
	}
	for _, c := range pcr.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		if c.Type == certificatesv1.PodCertificateRequestConditionTypeDenied || c.Type == certificatesv1.PodCertificateRequestConditionTypeFailed {
			st.final = fmt.Errorf("PodCertificateRequest %q was %s: reason=%q message=%q", pcr.Name, denialWord(c.Type), c.Reason, c.Message)
			st.pendingKey, st.pendingName = nil, ""
			return st.final
		}
	}
	if pcr.Status.CertificateChain == "" {
		return m.certOrWait(st, now, fmt.Errorf("PodCertificateRequest %q for signer %q is not issued yet", pcr.Name, src.SignerName))
	}
	chain := cleanChain([]byte(pcr.Status.CertificateChain))
	if len(chain) == 0 {
		return m.certOrWait(st, now, fmt.Errorf("PodCertificateRequest %q has no certificate in its chain", pcr.Name))
	}
	st.key, st.chain = st.pendingKey, chain
	st.pendingKey, st.pendingName = nil, ""
	st.notAfter = timeOf(pcr.Status.NotAfter)
	st.beginRefreshAt = timeOf(pcr.Status.BeginRefreshAt)
	if st.beginRefreshAt.IsZero() {
		st.beginRefreshAt = st.notAfter
	}
	logger.V(2).Info("Pod certificate issued", "pod", klog.KObj(pod), "request", pcr.Name, "beginRefreshAt", st.beginRefreshAt, "notAfter", st.notAfter)
	return nil
}

// certOrWait returns nil when a still valid certificate can be written
// while a request is outstanding, and err otherwise.
func (m *manager) certOrWait(st *certState, now time.Time, err error) error {
	if st.chain != nil && now.Before(st.notAfter) {
		return nil
	}
	return err
}

func denialWord(t string) string {
	if t == certificatesv1.PodCertificateRequestConditionTypeDenied {
		return "denied"
	}
	return "failed"
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// buildPodCertificateRequest generates a key of src.KeyType and the
// request for it, naming the pod, its service account and the node with
// their UIDs (NodeRestriction checks each). The key's proof of possession
// is a stub PKCS#10 request signed by it. It returns the PEM PKCS#8 key.
func (m *manager) buildPodCertificateRequest(ctx context.Context, pod *corev1.Pod, src *corev1.PodCertificateProjection) ([]byte, *certificatesv1.PodCertificateRequest, error) {
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	sa, err := m.certs.GetServiceAccount(ctx, pod.Namespace, saName)
	if err != nil {
		return nil, nil, fmt.Errorf("get service account %q: %w", saName, err)
	}
	node, err := m.certs.Node(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("get own node: %w", err)
	}
	key, err := generateKey(src.KeyType)
	if err != nil {
		return nil, nil, err
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode private key: %w", err)
	}
	req := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.Namespace,
			GenerateName: "req-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        saName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  types.NodeName(node.Name),
			NodeUID:                   node.UID,
			MaxExpirationSeconds:      src.MaxExpirationSeconds,
			StubPKCS10Request:         stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), req, nil
}

// generateKey makes a private key of one of the podCertificate key types.
func generateKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "RSA3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("podCertificate keyType %q is not supported", keyType)
}

// cleanChain keeps only the PEM blocks of in, as CERTIFICATE blocks without
// headers, dropping any text between them.
func cleanChain(in []byte) []byte {
	var buf bytes.Buffer
	for {
		var b *pem.Block
		b, in = pem.Decode(in)
		if b == nil {
			return buf.Bytes()
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})
	}
}
