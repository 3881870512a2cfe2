// Package rootcacertpublisher owns the root CA publisher: every namespace
// that is not terminating has a ConfigMap "kube-root-ca.crt" whose "ca.crt"
// is the bundle that verifies the apiserver, so that pods reaching it
// through the kubernetes service (projected service account volumes mount
// it) can check its certificate. The ConfigMap is created when a namespace
// appears and restored whenever it is deleted or edited.
package rootcacertpublisher
