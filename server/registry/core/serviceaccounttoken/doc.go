// Package serviceaccounttoken owns the serviceaccounts/token subresource:
// POST /api/v1/namespaces/NS/serviceaccounts/NAME/token with an
// authentication.k8s.io/v1 TokenRequest returns a freshly signed bound token
// for the ServiceAccount, optionally bound to a Pod, Secret or Node so the
// token dies with that object. The kubelet uses it for projected
// service-account token volumes, `kubectl create token` for humans.
package serviceaccounttoken
