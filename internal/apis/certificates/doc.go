// Package certificates owns defaulting and validation for the
// certificates.k8s.io/v1 kind the k1s apiserver serves:
// CertificateSigningRequest.
//
// It works directly on the versioned k8s.io/api/certificates/v1 types.
// Behaviour follows upstream Kubernetes v1.37: spec.request must be a
// PEM-encoded PKCS#10 request with a valid signature, signerName is required
// and shaped like "example.com/signer", usages are required, known and
// unique, Approved and Denied conditions exclude each other and may only be
// changed through the approval subresource, and status.certificate may only
// be set through the status subresource. Problems already present in a
// stored object are tolerated on update, as upstream does. Field paths and
// error types match upstream. The code is written for k1s.
package certificates
