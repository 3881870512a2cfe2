package volume

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakePodCertificates keeps created requests in memory, named req-<n>.
type fakePodCertificates struct {
	mu       sync.Mutex
	node     *corev1.Node
	accounts map[string]*corev1.ServiceAccount
	requests map[string]*certificatesv1.PodCertificateRequest
	order    []string
	err      error // returned by creates when set
}

func newFakePodCertificates() *fakePodCertificates {
	return &fakePodCertificates{
		node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}},
		accounts: map[string]*corev1.ServiceAccount{
			"ns1/default": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "default", UID: "sa-default-uid"}},
			"ns1/builder": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "builder", UID: "sa-builder-uid"}},
		},
		requests: map[string]*certificatesv1.PodCertificateRequest{},
	}
}

func (f *fakePodCertificates) Node(context.Context) (*corev1.Node, error) {
	return f.node.DeepCopy(), nil
}

func (f *fakePodCertificates) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sa, ok := f.accounts[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
	}
	return sa.DeepCopy(), nil
}

func (f *fakePodCertificates) CreatePodCertificateRequest(_ context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	req = req.DeepCopy()
	req.Name = fmt.Sprintf("%s%d", req.GenerateName, len(f.order)+1)
	f.requests[req.Name] = req
	f.order = append(f.order, req.Name)
	return req.DeepCopy(), nil
}

func (f *fakePodCertificates) GetPodCertificateRequest(_ context.Context, ns, name string) (*certificatesv1.PodCertificateRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.requests[name]
	if !ok || r.Namespace != ns {
		return nil, apierrors.NewNotFound(certificatesv1.Resource("podcertificaterequests"), name)
	}
	return r.DeepCopy(), nil
}

func (f *fakePodCertificates) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order)
}

// last returns the newest request.
func (f *fakePodCertificates) last(t *testing.T) *certificatesv1.PodCertificateRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.order) == 0 {
		t.Fatal("no PodCertificateRequest was created")
	}
	return f.requests[f.order[len(f.order)-1]].DeepCopy()
}

func (f *fakePodCertificates) update(name string, mutate func(*certificatesv1.PodCertificateRequest)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mutate(f.requests[name])
}

// testSigner issues certificates from a self-signed CA, as a signer
// controller would: the request's key, a lifetime of maxExpirationSeconds
// (default 24h), refresh at half the lifetime.
type testSigner struct {
	key  ed25519.PrivateKey
	cert *x509.Certificate
	pem  string
}

func newTestSigner(t *testing.T) *testSigner {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(365 * 24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testSigner{key: priv, cert: cert, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (s *testSigner) issue(t *testing.T, f *fakePodCertificates, name string, now time.Time) string {
	t.Helper()
	var leafPEM string
	f.update(name, func(r *certificatesv1.PodCertificateRequest) {
		csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
		if err != nil {
			t.Fatalf("stub PKCS#10 request: %v", err)
		}
		if err := csr.CheckSignature(); err != nil {
			t.Fatalf("proof of possession: %v", err)
		}
		life := 24 * time.Hour
		if r.Spec.MaxExpirationSeconds != nil {
			life = time.Duration(*r.Spec.MaxExpirationSeconds) * time.Second
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: r.Spec.PodName},
			NotBefore: now, NotAfter: now.Add(life)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, s.cert, csr.PublicKey, s.key)
		if err != nil {
			t.Fatal(err)
		}
		leafPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		r.Status.CertificateChain = leafPEM + "comment between blocks\n" + s.pem
		r.Status.NotBefore = &metav1.Time{Time: now}
		r.Status.BeginRefreshAt = &metav1.Time{Time: now.Add(life / 2)}
		r.Status.NotAfter = &metav1.Time{Time: now.Add(life)}
		r.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued"}}
	})
	return leafPEM
}

func pcrVolume(src corev1.PodCertificateProjection) corev1.Volume {
	return corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{PodCertificate: &src}},
	}}}
}

func TestPodCertificateRequestAndFiles(t *testing.T) {
	e := newEnv(t)
	signer := newTestSigner(t)
	pod := newPod("uid1", pcrVolume(corev1.PodCertificateProjection{
		SignerName: "example.com/spiffe", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr(int32(3600)),
		CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem",
		UserAnnotations: map[string]string{"example.com/path": "/custom"},
	}))
	pod.Spec.ServiceAccountName = "builder"

	// No certificate yet: the volume fails and a request is created.
	_, err := e.mgr.SetUpPod(context.Background(), pod)
	ves := mustVolumeErrors(t, err)
	if !strings.Contains(ves[0].Error(), `PodCertificateRequest "req-1" for signer "example.com/spiffe" is not issued yet`) {
		t.Errorf("error = %q", ves[0].Error())
	}
	req := e.pcrs.last(t)
	wantSpec := certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/spiffe", PodName: "web", PodUID: "uid1",
		ServiceAccountName: "builder", ServiceAccountUID: "sa-builder-uid",
		NodeName: "node-a", NodeUID: "node-uid", MaxExpirationSeconds: ptr(int32(3600)),
		StubPKCS10Request:         req.Spec.StubPKCS10Request,
		UnverifiedUserAnnotations: map[string]string{"example.com/path": "/custom"},
	}
	if !reflect.DeepEqual(req.Spec, wantSpec) {
		t.Errorf("spec = %+v\nwant %+v", req.Spec, wantSpec)
	}
	if req.Namespace != "ns1" || len(req.OwnerReferences) != 1 || req.OwnerReferences[0].UID != "uid1" || req.OwnerReferences[0].Kind != "Pod" {
		t.Errorf("request meta = %+v", req.ObjectMeta)
	}

	// Still pending: no second request.
	if _, err := e.mgr.SetUpPod(context.Background(), pod); err == nil {
		t.Fatal("SetUpPod succeeded before the certificate was issued")
	}
	if n := e.pcrs.count(); n != 1 {
		t.Fatalf("requests = %d while pending, want 1", n)
	}

	leaf := signer.issue(t, e.pcrs, req.Name, e.clock.Now())
	dir := e.setUp(pod)["creds"]
	keyPEM := readFile(t, filepath.Join(dir, "key.pem"))
	chainPEM := readFile(t, filepath.Join(dir, "chain.pem"))
	if want := leaf + signer.pem; chainPEM != want {
		t.Errorf("chain.pem = %q, want the leaf and the CA without the text between", chainPEM)
	}
	if got := readFile(t, filepath.Join(dir, "bundle.pem")); got != keyPEM+chainPEM {
		t.Errorf("bundle.pem is not key then chain")
	}
	block, _ := pem.Decode([]byte(keyPEM))
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key.pem = %q, want a PRIVATE KEY block", keyPEM)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		t.Fatalf("key is %T, want an ECDSA P-256 key", key)
	}
	lb, _ := pem.Decode([]byte(leaf))
	cert, _ := x509.ParseCertificate(lb.Bytes)
	if !ec.PublicKey.Equal(cert.PublicKey) {
		t.Error("the certificate is not for the written key")
	}
	if m := fileMode(t, filepath.Join(dir, "key.pem")); m != 0o644 {
		t.Errorf("key mode = %v, want the default 0644", m)
	}
}

func TestPodCertificateRefresh(t *testing.T) {
	e := newEnv(t)
	signer := newTestSigner(t)
	pod := newPod("uid1", pcrVolume(corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CertificateChainPath: "chain.pem", KeyPath: "key.pem"}))
	_, _ = e.mgr.SetUpPod(context.Background(), pod)
	first := signer.issue(t, e.pcrs, e.pcrs.last(t).Name, e.clock.Now())
	dir := e.setUp(pod)["creds"]
	key1 := readFile(t, filepath.Join(dir, "key.pem"))

	// Before beginRefreshAt (12h of a 24h certificate): no new request.
	e.clock.Step(12*time.Hour - time.Second)
	e.setUp(pod)
	if n := e.pcrs.count(); n != 1 {
		t.Fatalf("requests = %d before beginRefreshAt, want 1", n)
	}
	// At beginRefreshAt a new request is made; the current files stay.
	e.clock.Step(time.Second)
	e.setUp(pod)
	if n := e.pcrs.count(); n != 2 {
		t.Fatalf("requests = %d at beginRefreshAt, want 2", n)
	}
	if got := readFile(t, filepath.Join(dir, "chain.pem")); !strings.HasPrefix(got, first) {
		t.Error("the current certificate was replaced before its successor was issued")
	}
	// Once issued, the new key and certificate are written.
	second := signer.issue(t, e.pcrs, e.pcrs.last(t).Name, e.clock.Now())
	e.setUp(pod)
	if got := readFile(t, filepath.Join(dir, "chain.pem")); !strings.HasPrefix(got, second) {
		t.Error("the refreshed certificate was not written")
	}
	if readFile(t, filepath.Join(dir, "key.pem")) == key1 {
		t.Error("the key was not replaced with the refreshed certificate")
	}
}

func TestPodCertificateDeniedOrFailed(t *testing.T) {
	for _, cond := range []string{certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed} {
		t.Run(cond, func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("uid1", pcrVolume(corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP384", CredentialBundlePath: "b.pem"}))
			_, _ = e.mgr.SetUpPod(context.Background(), pod)
			e.pcrs.update(e.pcrs.last(t).Name, func(r *certificatesv1.PodCertificateRequest) {
				r.Status.Conditions = []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue, Reason: "Policy", Message: "not for you"}}
			})
			for i := 0; i < 2; i++ {
				_, err := e.mgr.SetUpPod(context.Background(), pod)
				ves := mustVolumeErrors(t, err)
				if !strings.Contains(ves[0].Error(), `reason="Policy" message="not for you"`) {
					t.Errorf("error = %q", ves[0].Error())
				}
				e.clock.Step(time.Hour)
			}
			if n := e.pcrs.count(); n != 1 {
				t.Errorf("requests = %d after a final answer, want 1", n)
			}
		})
	}
}

func TestPodCertificateCreateErrors(t *testing.T) {
	tests := []struct {
		name    string
		pod     func(*corev1.Pod)
		keyType string
		wantErr string
	}{
		{name: "unknown key type", keyType: "DSA1024", wantErr: `podCertificate keyType "DSA1024" is not supported`},
		{name: "missing service account", keyType: "ED25519", pod: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" },
			wantErr: `get service account "ghost"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("uid1", pcrVolume(corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: tt.keyType, KeyPath: "k"}))
			if tt.pod != nil {
				tt.pod(pod)
			}
			_, err := e.mgr.SetUpPod(context.Background(), pod)
			ves := mustVolumeErrors(t, err)
			if !strings.Contains(ves[0].Error(), tt.wantErr) {
				t.Errorf("error = %q, want %q", ves[0].Error(), tt.wantErr)
			}
			if n := e.pcrs.count(); n != 0 {
				t.Errorf("requests = %d, want none", n)
			}
		})
	}
}

func TestGenerateKey(t *testing.T) {
	tests := []struct {
		keyType string
		check   func(crypto.Signer) bool
	}{
		{"RSA3072", func(k crypto.Signer) bool { r, ok := k.(*rsa.PrivateKey); return ok && r.N.BitLen() == 3072 }},
		{"ECDSAP256", func(k crypto.Signer) bool { c, ok := k.(*ecdsa.PrivateKey); return ok && c.Curve == elliptic.P256() }},
		{"ECDSAP384", func(k crypto.Signer) bool { c, ok := k.(*ecdsa.PrivateKey); return ok && c.Curve == elliptic.P384() }},
		{"ECDSAP521", func(k crypto.Signer) bool { c, ok := k.(*ecdsa.PrivateKey); return ok && c.Curve == elliptic.P521() }},
		{"ED25519", func(k crypto.Signer) bool { _, ok := k.(ed25519.PrivateKey); return ok }},
	}
	for _, tt := range tests {
		t.Run(tt.keyType, func(t *testing.T) {
			k, err := generateKey(tt.keyType)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(k) {
				t.Errorf("key %T does not match %s", k, tt.keyType)
			}
		})
	}
	if _, err := generateKey(""); err == nil {
		t.Error("empty key type accepted")
	}
}
