// Package certificates owns defaulting and validation for the
// certificates.k8s.io/v1 kinds the k1s apiserver serves:
// CertificateSigningRequest, ClusterTrustBundle and PodCertificateRequest.
//
// It works directly on the versioned k8s.io/api/certificates/v1 types.
// Behaviour follows upstream Kubernetes v1.37: spec.request must be a
// PEM-encoded PKCS#10 request with a valid signature, signerName is required
// and shaped like "example.com/signer", usages are required, known and
// unique, Approved and Denied conditions exclude each other and may only be
// changed through the approval subresource, and status.certificate may only
// be set through the status subresource. Problems already present in a
// stored object are tolerated on update, as upstream does.
//
// A ClusterTrustBundle is named after its signer and holds distinct CA
// certificates. A PodCertificateRequest's spec is immutable; its status
// moves once to Issued (a chain for the requested key, checked against the
// spec and the clock), Denied or Failed. Field paths and error types match
// upstream. The code is written for k1s.
package certificates
