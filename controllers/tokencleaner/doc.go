// Package tokencleaner owns kube-controller-manager's token-cleaner
// controller: a bootstrap-token Secret (type bootstrap.kubernetes.io/token)
// in kube-system is deleted once its expiration has passed, at that moment
// (the Secret is queued again for its expiry). A Secret whose expiration
// cannot be parsed counts as expired, as upstream's; one without an
// expiration is kept. The apiserver's authenticator already refuses an
// expired token; the cleaner removes what is left.
package tokencleaner
