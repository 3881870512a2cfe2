// Package authorization owns the REST storages of the authorization.k8s.io/v1
// review APIs: SubjectAccessReview (may user X do Y), LocalSubjectAccessReview
// (the same, confined to one namespace), SelfSubjectAccessReview (may I do Y,
// behind `kubectl auth can-i`) and SelfSubjectRulesReview (what may I do in
// a namespace, behind `kubectl auth can-i --list`). They validate the spec,
// ask the apiserver's authorizer or rule resolver, and return the status;
// nothing is stored.
package authorization
