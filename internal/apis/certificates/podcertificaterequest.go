package certificates

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// Limits of a PodCertificateRequest, upstream's.
const (
	maxStubPKCS10RequestSize = 10 * 1024
	maxCertificateChainSize  = 100 * 1024
	maxUIDLength             = 128
	// MinMaxExpirationSeconds, MaxMaxExpirationSeconds and
	// KubernetesMaxMaxExpirationSeconds bound spec.maxExpirationSeconds:
	// one hour to 91 days, 24 hours for the kubernetes.io signers.
	MinMaxExpirationSeconds           = 3600
	MaxMaxExpirationSeconds           = 91 * 24 * 3600
	KubernetesMaxMaxExpirationSeconds = 24 * 3600
	// DefaultMaxExpirationSeconds is the default of spec.maxExpirationSeconds.
	DefaultMaxExpirationSeconds int32 = 86400
)

var (
	pkcs10ReqPath    = field.NewPath("spec", "stubPKCS10Request")
	certChainPath    = field.NewPath("status", "certificateChain")
	notBeforePath    = field.NewPath("status", "notBefore")
	notAfterPath     = field.NewPath("status", "notAfter")
	beginRefreshPath = field.NewPath("status", "beginRefreshAt")
)

// DefaultPodCertificateRequest sets spec.maxExpirationSeconds to 86400
// when unset.
func DefaultPodCertificateRequest(r *certificatesv1.PodCertificateRequest) {
	if r.Spec.MaxExpirationSeconds == nil {
		v := DefaultMaxExpirationSeconds
		r.Spec.MaxExpirationSeconds = &v
	}
}

// ValidatePodCertificateRequest validates a PodCertificateRequest on
// create: the pod, service account and node it names, the expiration
// bounds, and a stub PKCS#10 request with a supported key and a valid
// signature.
func ValidatePodCertificateRequest(r *certificatesv1.PodCertificateRequest) field.ErrorList {
	errs := validateObjectMeta(&r.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	sp := field.NewPath("spec")
	s := &r.Spec
	errs = append(errs, ValidateSignerName(sp.Child("signerName"), s.SignerName)...)
	if s.UnverifiedUserAnnotations != nil {
		errs = append(errs, core.ValidateUserAnnotations(s.UnverifiedUserAnnotations, sp.Child("unverifiedUserAnnotations"))...)
	}
	name := func(fn apimachineryvalidation.ValidateNameFunc, value, child string) {
		for _, msg := range fn(value, false) {
			errs = append(errs, field.Invalid(sp.Child(child), value, msg))
		}
	}
	uid := func(value, child string) {
		if value == "" {
			errs = append(errs, field.Invalid(sp.Child(child), value, "must not be empty"))
		}
		if len(value) > maxUIDLength {
			errs = append(errs, field.TooLong(sp.Child(child), value, maxUIDLength))
		}
	}
	name(apimachineryvalidation.NameIsDNSSubdomain, s.PodName, "podName")
	uid(string(s.PodUID), "podUID")
	name(apimachineryvalidation.NameIsDNSSubdomain, s.ServiceAccountName, "serviceAccountName")
	uid(string(s.ServiceAccountUID), "serviceAccountUID")
	name(apimachineryvalidation.NameIsDNSSubdomain, string(s.NodeName), "nodeName")
	uid(string(s.NodeUID), "nodeUID")

	if s.MaxExpirationSeconds == nil {
		return append(errs, field.Required(sp.Child("maxExpirationSeconds"), "must be set"))
	}
	limit := int32(MaxMaxExpirationSeconds)
	if core.IsKubernetesSignerName(s.SignerName) {
		limit = KubernetesMaxMaxExpirationSeconds
	}
	if v := *s.MaxExpirationSeconds; v < MinMaxExpirationSeconds || v > limit {
		errs = append(errs, field.Invalid(sp.Child("maxExpirationSeconds"), v, fmt.Sprintf("must be in the range [%d, %d]", MinMaxExpirationSeconds, limit)))
	}
	if len(s.StubPKCS10Request) == 0 {
		return append(errs, field.Invalid(sp, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(errs, validateStubPKCS10Request(s.StubPKCS10Request)...)
}

func validateStubPKCS10Request(der []byte) field.ErrorList {
	if len(der) > maxStubPKCS10RequestSize {
		return field.ErrorList{field.TooLong(pkcs10ReqPath, der, maxStubPKCS10RequestSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(pkcs10ReqPath, "curve "+pub.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(pkcs10ReqPath, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if err := req.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "invalid signature")}
	}
	return nil
}

// ValidatePodCertificateRequestUpdate validates an update outside status:
// only metadata may change.
func ValidatePodCertificateRequestUpdate(r, old *certificatesv1.PodCertificateRequest) field.ErrorList {
	errs := validateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)
	return append(errs, apimachineryvalidation.ValidateImmutableField(r.Spec, old.Spec, field.NewPath("spec"))...)
}

func pcrCondition(r *certificatesv1.PodCertificateRequest, t string) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == t && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func pcrTerminal(r *certificatesv1.PodCertificateRequest) bool {
	return pcrCondition(r, certificatesv1.PodCertificateRequestConditionTypeIssued) ||
		pcrCondition(r, certificatesv1.PodCertificateRequestConditionTypeDenied) ||
		pcrCondition(r, certificatesv1.PodCertificateRequestConditionTypeFailed)
}

// ValidatePodCertificateRequestStatusUpdate validates a status update at
// now: at most one of the Issued, Denied and Failed conditions, each True;
// a terminal status is immutable; Denied and Failed carry nothing but
// conditions; Issued carries a certificate chain whose leaf is issued to
// the requested key, lives one hour to maxExpirationSeconds, starts within
// five minutes of now, and the matching notBefore, notAfter and a
// beginRefreshAt at least ten minutes inside them. The signer's permission
// is checked by the registry.
func ValidatePodCertificateRequestStatusUpdate(r, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	errs := validateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)
	if len(errs) > 0 {
		return errs
	}
	known := []string{certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed}
	n := 0
	for i, c := range r.Status.Conditions {
		cp := field.NewPath("status", "conditions").Index(i)
		switch c.Type {
		case known[0], known[1], known[2]:
			n++
			if n > 1 {
				errs = append(errs, field.Invalid(cp.Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != metav1.ConditionTrue {
				errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			errs = append(errs, field.NotSupported(cp.Child("type"), c.Type, known))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(r.Status.Conditions, field.NewPath("status", "conditions"))...)
	if len(errs) > 0 {
		return errs
	}
	sameAs := func(a, b certificatesv1.PodCertificateRequestStatus, detail string) field.ErrorList {
		if !apiequality.Semantic.DeepEqual(a, b) {
			return field.ErrorList{field.Invalid(field.NewPath("status"), field.OmitValueType{}, detail)}
		}
		return nil
	}
	switch {
	case pcrTerminal(old):
		return sameAs(r.Status, old.Status, "immutable after PodCertificateRequest is issued, denied, or failed")
	case pcrCondition(r, known[1]) || pcrCondition(r, known[2]):
		return sameAs(r.Status, certificatesv1.PodCertificateRequestStatus{Conditions: r.Status.Conditions},
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest")
	case pcrCondition(r, known[0]):
		return validateIssued(r, old, now)
	}
	return sameAs(r.Status, old.Status, `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)
}

func validateIssued(r, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	st := &r.Status
	chain := st.CertificateChain
	if len(chain) > maxCertificateChainSize {
		return field.ErrorList{field.TooLong(certChainPath, chain, maxCertificateChainSize)}
	}
	leafBlock, rest := pem.Decode([]byte(chain))
	if leafBlock == nil {
		return field.ErrorList{field.Invalid(certChainPath, chain, "issued certificate chain must contain at least one certificate")}
	}
	if leafBlock.Type != "CERTIFICATE" {
		return field.ErrorList{field.Invalid(certChainPath, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")}
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return field.ErrorList{field.Invalid(certChainPath, chain, "leaf certificate does not parse as valid X.509")}
	}
	var errs field.ErrorList
	for _, dns := range leaf.DNSNames {
		if dns == "" {
			errs = append(errs, field.Invalid(certChainPath, dns, "leaf certificate should not contain empty DNSName"))
		}
		if strings.Contains(dns, "..") {
			errs = append(errs, field.Invalid(certChainPath, dns, "leaf certificate's DNSName should not contain '..'"))
		}
		if strings.HasPrefix(dns, ".") || strings.HasSuffix(dns, ".") {
			errs = append(errs, field.Invalid(certChainPath, dns, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, addr := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(addr); err != nil {
			errs = append(errs, field.Invalid(certChainPath, addr, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	req, err := x509.ParseCertificateRequest(old.Spec.StubPKCS10Request)
	if err != nil {
		return append(errs, field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR"))
	}
	if want, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !want.Equal(leaf.PublicKey) {
		return append(errs, field.Invalid(certChainPath, chain, "leaf certificate was not issued to the requested public key"))
	}
	if st.NotBefore == nil {
		errs = append(errs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if st.NotAfter == nil {
		errs = append(errs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if st.BeginRefreshAt == nil {
		errs = append(errs, field.Required(beginRefreshPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(errs) > 0 {
		return errs
	}
	if !st.NotBefore.Time.Equal(leaf.NotBefore) {
		return field.ErrorList{field.Invalid(notBeforePath, st.NotBefore.Time, "must be set to the NotBefore time encoded in the leaf certificate")}
	}
	if nb := st.NotBefore.Time; !(nb.After(now.Add(-5*time.Minute)) && nb.Before(now.Add(5*time.Minute))) {
		return field.ErrorList{field.Invalid(notBeforePath, nb, "must be set to within 5 minutes of kube-apiserver's current time")}
	}
	if !st.NotAfter.Time.Equal(leaf.NotAfter) {
		return field.ErrorList{field.Invalid(notAfterPath, st.NotAfter.Time, "must be set to the NotAfter time encoded in the leaf certificate")}
	}
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	if life < time.Hour {
		return field.ErrorList{field.Invalid(certChainPath, life, "leaf certificate lifetime must be >= 1 hour")}
	}
	if max := r.Spec.MaxExpirationSeconds; max != nil && life > time.Duration(*max)*time.Second {
		return field.ErrorList{field.Invalid(certChainPath, life, fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *max))}
	}
	if st.BeginRefreshAt.Time.Before(st.NotBefore.Time.Add(10 * time.Minute)) {
		return field.ErrorList{field.Invalid(beginRefreshPath, st.BeginRefreshAt.Time, "must be at least 10 minutes after status.notBefore")}
	}
	if st.BeginRefreshAt.Time.After(st.NotAfter.Time.Add(-10 * time.Minute)) {
		return field.ErrorList{field.Invalid(beginRefreshPath, st.BeginRefreshAt.Time, "must be at least 10 minutes before status.notAfter")}
	}
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil
		}
		if b.Type != "CERTIFICATE" {
			return field.ErrorList{field.Invalid(certChainPath, chain, "issued certificate chain must consist entirely of CERTFICATE PEM blocks")}
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return field.ErrorList{field.Invalid(certChainPath, chain, "intermediate certificate does not parse as valid X.509")}
		}
	}
}
