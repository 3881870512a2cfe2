// Package authentication owns the REST storages of the
// authentication.k8s.io/v1 review APIs: TokenReview (ask the apiserver's
// authenticators about a bearer token) and SelfSubjectReview (who am I,
// behind `kubectl auth whoami`). Neither stores anything: Create computes
// the status and returns the object.
package authentication
