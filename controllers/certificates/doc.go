// Package certificates holds kube-controller-manager's certificate
// controllers, which let a node join with a bootstrap token and keep its
// certificates fresh:
//
//   - csrsigning signs approved CertificateSigningRequests of the signers
//     the cluster's CAs serve: kubernetes.io/kube-apiserver-client and
//     kube-apiserver-client-kubelet with the client CA, kubernetes.io/kubelet-serving
//     with the server CA, after checking the request fits the signer (a
//     kubelet certificate names system:node:<name> in group system:nodes,
//     with its signer's usages only); the certificate lives
//     --cluster-signing-duration (default 1 year) or the request's
//     expirationSeconds if shorter.
//   - csrapproving approves, as upstream's, kubelet client requests from a
//     bootstrap identity allowed to create certificatesigningrequests/nodeclient
//     and renewals by a node of its own certificate (selfnodeclient). k1s
//     also approves a node's kubelet-serving request for its own name whose
//     addresses are the node's own (upstream leaves those to an operator or
//     an external approver; k3s signs them itself).
//   - csrcleaner deletes requests that are done: issued or denied or failed
//     after an hour, pending after a day.
package certificates
