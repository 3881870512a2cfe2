// Package admissionregistration owns defaulting and validation for the
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
// ever be called.
//
// Validation follows upstream's rules, field paths and error types:
// webhooks' names, rules, client configs, side effects, review versions,
// timeouts, failure/match/reinvocation policies and selectors; policies'
// paramKind, match constraints, variables, validations, audit annotations
// and mutations; bindings' policy name, paramRef, match resources and
// validation actions. Every CEL expression (match conditions,
// variables, validations, message and audit expressions, patches) is
// compiled as the admission plugins compile it, so a configuration the
// plugins cannot run is refused with a 422 naming the expression's field.
// An update is let off the rules its stored object already broke, does
// not recompile unchanged match conditions, and compiles expressions the
// object already held in the stored-expressions environment. Whether the
// caller may read a policy's paramKind or a binding's params (upstream's
// authorization check in the registry) is not checked. The code is
// written for k1s.
package admissionregistration
