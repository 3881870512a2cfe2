package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// parseRequest decodes the PEM certificate request of a CSR.
func parseRequest(csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM certificate request")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	return req, nil
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status != corev1.ConditionFalse {
			return true
		}
	}
	return false
}

func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certificatesv1.CertificateApproved) && !hasCondition(csr, certificatesv1.CertificateDenied)
}

func finished(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0 || hasCondition(csr, certificatesv1.CertificateDenied) || hasCondition(csr, certificatesv1.CertificateFailed)
}

func usagesOnly(have []certificatesv1.KeyUsage, allowed ...certificatesv1.KeyUsage) bool {
	for _, u := range have {
		if !slices.Contains(allowed, u) {
			return false
		}
	}
	return true
}

// kubeletClientErr explains why req is not a kubelet client request:
// CN system:node:<name>, organization exactly [system:nodes], no SANs,
// client auth with at most digital signature and key encipherment.
func kubeletClientErr(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") || len(req.Subject.CommonName) == len("system:node:") {
		return fmt.Errorf("subject common name %q is not system:node:<name>", req.Subject.CommonName)
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "system:nodes" {
		return fmt.Errorf("subject organization %v is not [system:nodes]", req.Subject.Organization)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return errors.New("a client certificate holds no subject alternative names")
	}
	if !slices.Contains(usages, certificatesv1.UsageClientAuth) ||
		!usagesOnly(usages, certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment) {
		return fmt.Errorf("usages %v: want client auth, optionally digital signature and key encipherment", usages)
	}
	return nil
}

// kubeletServingErr explains why req is not a kubelet serving request:
// CN system:node:<name>, organization [system:nodes], DNS or IP SANs
// only, server auth with at most digital signature and key encipherment.
func kubeletServingErr(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") || len(req.Subject.CommonName) == len("system:node:") {
		return fmt.Errorf("subject common name %q is not system:node:<name>", req.Subject.CommonName)
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "system:nodes" {
		return fmt.Errorf("subject organization %v is not [system:nodes]", req.Subject.Organization)
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return errors.New("a serving certificate needs a DNS name or an IP address")
	}
	if len(req.EmailAddresses)+len(req.URIs) > 0 {
		return errors.New("email and URI subject alternative names are not allowed")
	}
	if !slices.Contains(usages, certificatesv1.UsageServerAuth) ||
		!usagesOnly(usages, certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment) {
		return fmt.Errorf("usages %v: want server auth, optionally digital signature and key encipherment", usages)
	}
	return nil
}

// apiserverClientErr: any client certificate without SANs.
func apiserverClientErr(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return errors.New("a client certificate holds no subject alternative names")
	}
	if !slices.Contains(usages, certificatesv1.UsageClientAuth) ||
		!usagesOnly(usages, certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment) {
		return fmt.Errorf("usages %v: want client auth, optionally digital signature and key encipherment", usages)
	}
	return nil
}
