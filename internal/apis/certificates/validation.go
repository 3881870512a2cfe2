package certificates

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// LegacyUnknownSignerName is the signer of CSRs created through the removed
// v1beta1 API without a signer. The v1 API does not accept it for new
// requests.
const LegacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// minExpirationSeconds is the shortest certificate lifetime a CSR may ask for.
const minExpirationSeconds = 600

var knownUsages = func() map[certificatesv1.KeyUsage]bool {
	m := map[certificatesv1.KeyUsage]bool{}
	for _, u := range []certificatesv1.KeyUsage{
		certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
		certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
		certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
		certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
		certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
		certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
	} {
		m[u] = true
	}
	return m
}()

func knownUsageList() []string {
	out := make([]string, 0, len(knownUsages))
	for u := range knownUsages {
		out = append(out, string(u))
	}
	sort.Strings(out)
	return out
}

// options switch individual rules off, either because a subresource is
// allowed to make a change or because the stored object already breaks the
// rule and must stay editable.
type options struct {
	allowApprovalChange        bool // approval subresource
	allowSettingCertificate    bool // status subresource
	allowBothApprovedAndDenied bool
	allowLegacySignerName      bool
	allowDuplicateConditions   bool
	allowEmptyConditionType    bool
	allowArbitraryCertificate  bool
	allowUnknownUsages         bool
	allowDuplicateUsages       bool
}

func optionsFor(csr, old *certificatesv1.CertificateSigningRequest) options {
	if old == nil {
		return options{}
	}
	return options{
		allowBothApprovedAndDenied: len(findConditions(old, certificatesv1.CertificateApproved)) > 0 && len(findConditions(old, certificatesv1.CertificateDenied)) > 0,
		allowLegacySignerName:      old.Spec.SignerName == LegacyUnknownSignerName,
		allowDuplicateConditions:   hasDuplicateConditionTypes(old),
		allowEmptyConditionType:    len(findConditions(old, "")) > 0,
		allowArbitraryCertificate:  bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || checkCertificatePEM(old.Status.Certificate) != nil,
		allowUnknownUsages:         hasUnknownUsage(old.Spec.Usages),
		allowDuplicateUsages:       hasDuplicateUsage(old.Spec.Usages),
	}
}

// ValidateCertificateSigningRequest validates a CSR on create. Names are not
// restricted beyond the generic metadata rules.
func ValidateCertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSR(csr, optionsFor(csr, nil))
}

// ValidateCertificateSigningRequestUpdate validates an update of the main
// resource: conditions Approved and Denied may not change and
// status.certificate may not be set.
func ValidateCertificateSigningRequestUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRUpdate(csr, old, optionsFor(csr, old))
}

// ValidateCertificateSigningRequestStatusUpdate validates a write to the
// status subresource, which may set status.certificate once (but not change
// it afterwards) and may not touch Approved or Denied conditions.
func ValidateCertificateSigningRequestStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	opts := optionsFor(csr, old)
	opts.allowSettingCertificate = true
	return validateCSRUpdate(csr, old, opts)
}

// ValidateCertificateSigningRequestApproval validates a write to the approval
// subresource, which may add Approved or Denied conditions (never both, and
// never remove one).
func ValidateCertificateSigningRequestApproval(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	opts := optionsFor(csr, old)
	opts.allowApprovalChange = true
	return validateCSRUpdate(csr, old, opts)
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest, opts options) field.ErrorList {
	noNameRule := func(string, bool) []string { return nil }
	errs := validateObjectMeta(&csr.ObjectMeta, false, noNameRule)
	spec := field.NewPath("spec")
	if err := checkRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	up := spec.Child("usages")
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(up, ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !opts.allowUnknownUsages && !knownUsages[u] {
			errs = append(errs, field.NotSupported(up.Index(i), u, knownUsageList()))
		}
		if !opts.allowDuplicateUsages && seen[u] {
			errs = append(errs, field.Duplicate(up.Index(i), u))
		}
		seen[u] = true
	}
	sp := spec.Child("signerName")
	if !opts.allowLegacySignerName && csr.Spec.SignerName == LegacyUnknownSignerName {
		errs = append(errs, field.Invalid(sp, csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, ValidateSignerName(sp, csr.Spec.SignerName)...)
	}
	if csr.Spec.ExpirationSeconds != nil && *csr.Spec.ExpirationSeconds < minExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *csr.Spec.ExpirationSeconds, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(csr, opts, field.NewPath("status", "conditions"))...)
	if !opts.allowArbitraryCertificate {
		if err := checkCertificatePEM(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

func validateConditions(csr *certificatesv1.CertificateSigningRequest, opts options, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range csr.Status.Conditions {
		cp := p.Index(i)
		if !opts.allowEmptyConditionType && c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(cp.Child("status"), ""))
		case !containsString(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, allowed))
		}
		if !opts.allowBothApprovedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					errs = append(errs, field.Invalid(p, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					errs = append(errs, field.Invalid(p, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !opts.allowDuplicateConditions && seen[c.Type] {
			errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return errs
}

func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest, opts options) field.ErrorList {
	errs := validateCSR(csr, opts)
	cp := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(csr, t)) < len(findConditions(old, t)) {
			errs = append(errs, field.Forbidden(cp, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !opts.allowApprovalChange {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			newConds, oldConds := findConditions(csr, t), findConditions(old, t)
			switch {
			case len(newConds) < len(oldConds):
				// Reported above.
			case len(newConds) > len(oldConds):
				errs = append(errs, field.Forbidden(cp, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !equality.Semantic.DeepEqual(newConds, oldConds):
				errs = append(errs, field.Forbidden(cp, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		certPath := field.NewPath("status", "certificate")
		switch {
		case !opts.allowSettingCertificate:
			errs = append(errs, field.Forbidden(certPath, "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(certPath, "updates may not modify existing certificate content"))
		}
	}
	return append(errs, validateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta)...)
}

// ValidateSignerName checks a signer name of the form "<domain>/<path>": the
// domain is a DNS name with at least two labels, the path is a dot-separated
// list of DNS subdomains (core.ValidateSignerName, which pod validation
// shares).
func ValidateSignerName(p *field.Path, name string) field.ErrorList {
	return core.ValidateSignerName(p, name)
}

// ParseCSR decodes the first PEM block of pemBytes as a PKCS#10 certificate
// request.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate request: %w", err)
	}
	return req, nil
}

func checkRequest(pemBytes []byte) error {
	req, err := ParseCSR(pemBytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// checkCertificatePEM accepts empty data or one or more CERTIFICATE blocks
// without headers, each holding parseable certificates.
func checkCertificatePEM(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) > 0 {
			return errors.New("no PEM block headers are permitted")
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

func findConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

func hasDuplicateConditionTypes(csr *certificatesv1.CertificateSigningRequest) bool {
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range csr.Status.Conditions {
		if seen[c.Type] {
			return true
		}
		seen[c.Type] = true
	}
	return false
}

func hasUnknownUsage(usages []certificatesv1.KeyUsage) bool {
	for _, u := range usages {
		if !knownUsages[u] {
			return true
		}
	}
	return false
}

func hasDuplicateUsage(usages []certificatesv1.KeyUsage) bool {
	seen := map[certificatesv1.KeyUsage]bool{}
	for _, u := range usages {
		if seen[u] {
			return true
		}
		seen[u] = true
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
