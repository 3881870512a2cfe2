// Package serviceaccount owns the service account controller: every active
// namespace has a ServiceAccount named "default", created when the
// namespace appears and again whenever it is deleted. Namespaces that are
// terminating are left alone.
package serviceaccount
