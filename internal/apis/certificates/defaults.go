package certificates

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the CertificateSigningRequest and
// PodCertificateRequest defaulters (object and List) to s. A CSR has no
// defaulted field; its defaulter exists so that the kind has one.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&certificatesv1.PodCertificateRequest{}, func(obj interface{}) {
		DefaultPodCertificateRequest(obj.(*certificatesv1.PodCertificateRequest))
	})
	s.AddTypeDefaultingFunc(&certificatesv1.PodCertificateRequestList{}, func(obj interface{}) {
		list := obj.(*certificatesv1.PodCertificateRequestList)
		for i := range list.Items {
			DefaultPodCertificateRequest(&list.Items[i])
		}
	})
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
