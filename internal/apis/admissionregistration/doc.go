// Package admissionregistration owns defaulting (and validation) for the
// admissionregistration.k8s.io/v1 kinds the k1s apiserver serves:
// ValidatingWebhookConfiguration, MutatingWebhookConfiguration,
// ValidatingAdmissionPolicy(Binding) and MutatingAdmissionPolicy(Binding).
//
// It works directly on the versioned k8s.io/api types, with upstream
// Kubernetes v1.37's defaults: a webhook fails closed, matches equivalent
// resources, selects every namespace and object, times out after 10 s and
// (mutating) is not reinvoked; a rule's scope is "*"; a service reference's
// port is 443; a policy fails closed and its match resources select every
// namespace and object, equivalently. The webhook plugins treat a missing
// selector as "match nothing", so without these defaults no webhook would
// ever be called. The code is written for k1s.
package admissionregistration
