package certificates

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// caCert returns a PEM certificate, a CA one when ca.
func caCert(t *testing.T, ca bool) string {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: ca, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestValidateClusterTrustBundle(t *testing.T) {
	ca := caCert(t, true)
	bundle := func(name, signer, pemData string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pemData}}
	}
	tests := []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
		want []errKey
	}{
		{name: "no signer", b: bundle("roots", "", ca)},
		{name: "signer", b: bundle("example.com:foo:roots", "example.com/foo", ca)},
		{name: "two CAs", b: bundle("roots", "", ca+caCert(t, true))},
		{name: "colon without signer", b: bundle("a:b", "", ca), want: []errKey{e(field.ErrorTypeInvalid, "metadata.name")}},
		{name: "name without the signer prefix", b: bundle("roots", "example.com/foo", ca), want: []errKey{e(field.ErrorTypeInvalid, "metadata.name")}},
		{name: "bad signer", b: bundle("foo:roots", "foo", ca), want: []errKey{e(field.ErrorTypeInvalid, "spec.signerName")}},
		{name: "empty bundle", b: bundle("roots", "", ""), want: []errKey{e(field.ErrorTypeInvalid, "spec.trustBundle")}},
		{name: "not a CA", b: bundle("roots", "", caCert(t, false)), want: []errKey{e(field.ErrorTypeInvalid, "spec.trustBundle")}},
		{name: "duplicate", b: bundle("roots", "", ca+ca), want: []errKey{e(field.ErrorTypeInvalid, "spec.trustBundle")}},
		{name: "other block", b: bundle("roots", "", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), want: []errKey{e(field.ErrorTypeInvalid, "spec.trustBundle")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidateClusterTrustBundle(tc.b), tc.want...)
		})
	}
	old := bundle("example.com:foo:roots", "example.com/foo", ca)
	b := old.DeepCopy()
	b.Spec.SignerName = "example.com/bar"
	errs := ValidateClusterTrustBundleUpdate(b, old)
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.signerName") {
		t.Errorf("signer change: %v", errs)
	}
}

// pcrKey makes a stub request of a new key.
func pcrKey(t *testing.T) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func validPCR(t *testing.T) (*certificatesv1.PodCertificateRequest, *ecdsa.PrivateKey) {
	csr, key := pcrKey(t)
	r := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "pcr", Namespace: "ns", ResourceVersion: "1"},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/signer", PodName: "p", PodUID: "uid-p",
			ServiceAccountName: "default", ServiceAccountUID: "uid-sa", NodeName: "n", NodeUID: "uid-n", StubPKCS10Request: csr}}
	DefaultPodCertificateRequest(r)
	return r, key
}

func TestValidatePodCertificateRequest(t *testing.T) {
	r, _ := validPCR(t)
	if *r.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("default maxExpirationSeconds = %d", *r.Spec.MaxExpirationSeconds)
	}
	tests := []struct {
		name   string
		mutate func(*certificatesv1.PodCertificateRequest)
		want   []errKey
	}{
		{name: "valid", mutate: func(*certificatesv1.PodCertificateRequest) {}},
		{name: "missing uids", mutate: func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID, r.Spec.NodeUID = "", "" },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.podUID"), e(field.ErrorTypeInvalid, "spec.nodeUID")}},
		{name: "too short", mutate: func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptr.To[int32](60) },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.maxExpirationSeconds")}},
		{name: "kubernetes.io signer limited to a day", mutate: func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName = "kubernetes.io/kube-apiserver-client-pod"
			r.Spec.MaxExpirationSeconds = ptr.To[int32](2 * 86400)
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec.maxExpirationSeconds")}},
		{name: "no request", mutate: func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = nil }, want: []errKey{e(field.ErrorTypeInvalid, "spec")}},
		{name: "garbage request", mutate: func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = []byte("x") },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.stubPKCS10Request")}},
		{name: "unprefixed annotation", mutate: func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"plain": "x"}
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec.unverifiedUserAnnotations")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := validPCR(t)
			tc.mutate(r)
			expectErrs(t, ValidatePodCertificateRequest(r), tc.want...)
		})
	}
	old, _ := validPCR(t)
	upd := old.DeepCopy()
	upd.Spec.PodName = "q"
	expectErrs(t, ValidatePodCertificateRequestUpdate(upd, old), e(field.ErrorTypeInvalid, "spec"))
}

func TestValidatePodCertificateRequestStatusUpdate(t *testing.T) {
	now := time.Now()
	issue := func(t *testing.T, key *ecdsa.PrivateKey, notBefore time.Time, life time.Duration) string {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "p"}, NotBefore: notBefore, NotAfter: notBefore.Add(life)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	cond := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.NewTime(now)}
	}
	nb := now.Add(-time.Minute).Truncate(time.Second)
	tests := []struct {
		name   string
		status func(key *ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus
		old    certificatesv1.PodCertificateRequestStatus
		want   []errKey
	}{
		{name: "issued", status: func(key *ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{CertificateChain: issue(t, key, nb, 2*time.Hour), NotBefore: &metav1.Time{Time: nb},
				NotAfter: &metav1.Time{Time: nb.Add(2 * time.Hour)}, BeginRefreshAt: &metav1.Time{Time: nb.Add(time.Hour)},
				Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeIssued)}}
		}},
		{name: "issued to another key", status: func(*ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{CertificateChain: issue(t, newKey(t), nb, 2*time.Hour), NotBefore: &metav1.Time{Time: nb},
				NotAfter: &metav1.Time{Time: nb.Add(2 * time.Hour)}, BeginRefreshAt: &metav1.Time{Time: nb.Add(time.Hour)},
				Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeIssued)}}
		}, want: []errKey{e(field.ErrorTypeInvalid, "status.certificateChain")}},
		{name: "issued for too short", status: func(key *ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{CertificateChain: issue(t, key, nb, 30*time.Minute), NotBefore: &metav1.Time{Time: nb},
				NotAfter: &metav1.Time{Time: nb.Add(30 * time.Minute)}, BeginRefreshAt: &metav1.Time{Time: nb.Add(15 * time.Minute)},
				Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeIssued)}}
		}, want: []errKey{e(field.ErrorTypeInvalid, "status.certificateChain")}},
		{name: "issued without times", status: func(key *ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{CertificateChain: issue(t, key, nb, 2*time.Hour),
				Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeIssued)}}
		}, want: []errKey{e(field.ErrorTypeRequired, "status.notBefore"), e(field.ErrorTypeRequired, "status.notAfter"), e(field.ErrorTypeRequired, "status.beginRefreshAt")}},
		{name: "denied", status: func(*ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeDenied)}}
		}},
		{name: "denied with a chain", status: func(key *ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{CertificateChain: issue(t, key, nb, 2*time.Hour), Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeDenied)}}
		}, want: []errKey{e(field.ErrorTypeInvalid, "status")}},
		{name: "two terminal conditions", status: func(*ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{
				cond(certificatesv1.PodCertificateRequestConditionTypeDenied), cond(certificatesv1.PodCertificateRequestConditionTypeFailed)}}
		}, want: []errKey{e(field.ErrorTypeInvalid, "status.conditions[1].type")}},
		{name: "unknown condition", status: func(*ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
			return certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{cond("Pending")}}
		}, want: []errKey{e(field.ErrorTypeNotSupported, "status.conditions[0].type")}},
		{name: "change after denial", old: certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeDenied)}},
			status: func(*ecdsa.PrivateKey) certificatesv1.PodCertificateRequestStatus {
				return certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{cond(certificatesv1.PodCertificateRequestConditionTypeFailed)}}
			}, want: []errKey{e(field.ErrorTypeInvalid, "status")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, key := validPCR(t)
			old.Status = tc.old
			r := old.DeepCopy()
			r.Status = tc.status(key)
			expectErrs(t, ValidatePodCertificateRequestStatusUpdate(r, old, now), tc.want...)
		})
	}
}
