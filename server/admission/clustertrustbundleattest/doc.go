// Package clustertrustbundleattest owns the ClusterTrustBundleAttest
// admission plugin of the k1s apiserver (upstream's
// plugin/pkg/admission/certificates/ctbattest): creating or updating a
// ClusterTrustBundle that names a signer needs the "attest" verb on
// certificates.k8s.io signers for that signer name (or its "<domain>/*").
// An update that changes only the fields the garbage collector writes
// (owner references, finalizers) is let through.
package clustertrustbundleattest
