package certificates

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the CertificateSigningRequest defaulters (object and
// List) to s. certificates.k8s.io/v1 defaults nothing; the defaulters exist
// so that every kind has one.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&certificatesv1.CertificateSigningRequest{}, func(obj interface{}) {
		DefaultCertificateSigningRequest(obj.(*certificatesv1.CertificateSigningRequest))
	})
	s.AddTypeDefaultingFunc(&certificatesv1.CertificateSigningRequestList{}, func(obj interface{}) {
		list := obj.(*certificatesv1.CertificateSigningRequestList)
		for i := range list.Items {
			DefaultCertificateSigningRequest(&list.Items[i])
		}
	})
	return nil
}

// DefaultCertificateSigningRequest sets defaults on a CSR. Nothing is
// defaulted in certificates.k8s.io/v1 (signerName is required).
func DefaultCertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) {}
