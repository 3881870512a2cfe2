package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func requestPEM(t *testing.T) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}},
	}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func certPEM(t *testing.T) []byte {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "a"},
		NotBefore:    time.Now(),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func validCSR(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr-abc", ResourceVersion: "1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

func cond(t certificatesv1.RequestConditionType, s corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: s, Reason: "Test"}
}

func TestValidateCertificateSigningRequest(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   []errKey
	}{
		{name: "valid", mutate: func(*certificatesv1.CertificateSigningRequest) {}},
		{name: "any name", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Name = "Weird:Name" }},
		{
			name:   "request not PEM",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("hello") },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.request")},
		},
		{
			name: "request with broken signature",
			mutate: func(c *certificatesv1.CertificateSigningRequest) {
				block, _ := pem.Decode(c.Spec.Request)
				block.Bytes[len(block.Bytes)-3] ^= 0xff
				c.Spec.Request = pem.EncodeToMemory(block)
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.request")},
		},
		{
			name:   "no usages",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.usages")},
		},
		{
			name: "unknown and duplicate usages",
			mutate: func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.Usages = append(c.Spec.Usages, "teleport", certificatesv1.UsageClientAuth)
			},
			want: []errKey{e(field.ErrorTypeNotSupported, "spec.usages[2]"), e(field.ErrorTypeDuplicate, "spec.usages[3]")},
		},
		{
			name:   "missing signer",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.signerName")},
		},
		{
			name:   "signer without path",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.signerName")},
		},
		{
			name:   "signer with single-label domain",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.signerName")},
		},
		{
			name: "signer too long",
			mutate: func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.SignerName = "example.com/" + strings.Repeat("a.", 300) + "b"
			},
			want: []errKey{e(field.ErrorTypeTooLong, "spec.signerName")},
		},
		{
			name:   "legacy signer",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = LegacyUnknownSignerName },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.signerName")},
		},
		{
			name:   "short expiration",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](599) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.expirationSeconds")},
		},
		{
			name: "approved and denied",
			mutate: func(c *certificatesv1.CertificateSigningRequest) {
				c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
					cond(certificatesv1.CertificateApproved, corev1.ConditionTrue),
					cond(certificatesv1.CertificateDenied, corev1.ConditionTrue),
				}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "status.conditions")},
		},
		{
			name: "bad condition statuses and duplicates",
			mutate: func(c *certificatesv1.CertificateSigningRequest) {
				c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
					cond(certificatesv1.CertificateApproved, corev1.ConditionFalse),
					cond("Custom", ""),
					cond("Custom", corev1.ConditionUnknown),
					cond("", corev1.ConditionTrue),
				}
			},
			want: []errKey{
				e(field.ErrorTypeNotSupported, "status.conditions[0].status"),
				e(field.ErrorTypeRequired, "status.conditions[1].status"),
				e(field.ErrorTypeDuplicate, "status.conditions[2].type"),
				e(field.ErrorTypeRequired, "status.conditions[3].type"),
			},
		},
		{
			name:   "garbage certificate",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("nope") },
			want:   []errKey{e(field.ErrorTypeInvalid, "status.certificate")},
		},
		{
			name:   "good certificate",
			mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM(t) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			csr := validCSR(t)
			tc.mutate(csr)
			expectErrs(t, ValidateCertificateSigningRequest(csr), tc.want...)
		})
	}
}

func TestCSRApprovalFlow(t *testing.T) {
	pending := validCSR(t)

	approved := pending.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)}
	expectErrs(t, ValidateCertificateSigningRequestApproval(approved, pending))
	expectErrs(t, ValidateCertificateSigningRequestUpdate(approved, pending), e(field.ErrorTypeForbidden, "status.conditions"))
	expectErrs(t, ValidateCertificateSigningRequestStatusUpdate(approved, pending), e(field.ErrorTypeForbidden, "status.conditions"))

	both := approved.DeepCopy()
	both.Status.Conditions = append(both.Status.Conditions, cond(certificatesv1.CertificateDenied, corev1.ConditionTrue))
	expectErrs(t, ValidateCertificateSigningRequestApproval(both, approved), e(field.ErrorTypeInvalid, "status.conditions"))

	removed := approved.DeepCopy()
	removed.Status.Conditions = nil
	expectErrs(t, ValidateCertificateSigningRequestApproval(removed, approved), e(field.ErrorTypeForbidden, "status.conditions"))

	issued := approved.DeepCopy()
	issued.Status.Certificate = certPEM(t)
	expectErrs(t, ValidateCertificateSigningRequestStatusUpdate(issued, approved))
	expectErrs(t, ValidateCertificateSigningRequestUpdate(issued, approved), e(field.ErrorTypeForbidden, "status.certificate"))
	expectErrs(t, ValidateCertificateSigningRequestApproval(issued, approved), e(field.ErrorTypeForbidden, "status.certificate"))

	reissued := issued.DeepCopy()
	reissued.Status.Certificate = certPEM(t)
	expectErrs(t, ValidateCertificateSigningRequestStatusUpdate(reissued, issued), e(field.ErrorTypeForbidden, "status.certificate"))

	badCert := approved.DeepCopy()
	badCert.Status.Certificate = []byte("junk")
	expectErrs(t, ValidateCertificateSigningRequestStatusUpdate(badCert, approved), e(field.ErrorTypeInvalid, "status.certificate"))

	failed := issued.DeepCopy()
	failed.Status.Conditions = append(failed.Status.Conditions, cond(certificatesv1.CertificateFailed, corev1.ConditionTrue))
	expectErrs(t, ValidateCertificateSigningRequestStatusUpdate(failed, issued))
}

func TestCSRUpdateToleratesStoredProblems(t *testing.T) {
	stored := validCSR(t)
	stored.Spec.SignerName = LegacyUnknownSignerName
	stored.Spec.Usages = []certificatesv1.KeyUsage{"teleport", "teleport"}
	stored.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
		cond(certificatesv1.CertificateApproved, corev1.ConditionTrue),
		cond(certificatesv1.CertificateDenied, corev1.ConditionTrue),
	}
	stored.Status.Certificate = []byte("junk")
	upd := stored.DeepCopy()
	upd.Labels = map[string]string{"x": "y"}
	expectErrs(t, ValidateCertificateSigningRequestUpdate(upd, stored))
}
