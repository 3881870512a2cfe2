package admissionregistration

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
)

var webhooksPath = field.NewPath("webhooks")

// admissionReviewVersions are the AdmissionReview versions the apiserver
// can send; a webhook must accept one of them.
var admissionReviewVersions = []string{"v1", "v1beta1"}

var (
	// noSideEffects are the side-effect classes a v1 webhook may declare
	// (this list and the next are sorted, as NotSupported lists them).
	noSideEffects = []string{string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun)}
	// allSideEffects also holds the classes only v1beta1 allowed; a stored
	// configuration that has one may still be updated.
	allSideEffects = []string{string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun),
		string(admissionregistrationv1.SideEffectClassSome), string(admissionregistrationv1.SideEffectClassUnknown)}
)

// webhookRules says how strictly a configuration's webhooks are checked. A
// create gets the strict rules; an update is let off a rule the stored
// object already broke, so that objects written under older rules stay
// updatable.
type webhookRules struct {
	skipMatchConditions   bool // no webhook's match conditions changed
	sideEffectsMustBeNone bool
	knownReviewVersion    bool // a webhook must accept a version the apiserver sends
	uniqueNames           bool
	invalidSelectorValues bool // match expressions may hold invalid label values
	stored                storedExpressions
}

func createWebhookRules() webhookRules {
	return webhookRules{sideEffectsMustBeNone: true, knownReviewVersion: true, uniqueNames: true, stored: storedExpressions{}}
}

// hook is what the two kinds of webhook have in common.
type hook struct {
	name                    string
	clientConfig            *admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
	// reinvocationPolicy is set for mutating webhooks only.
	reinvocationPolicy *admissionregistrationv1.ReinvocationPolicyType
}

func validatingHooks(in []admissionregistrationv1.ValidatingWebhook) []hook {
	out := make([]hook, len(in))
	for i := range in {
		w := &in[i]
		out[i] = hook{name: w.Name, clientConfig: &w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy,
			matchPolicy: w.MatchPolicy, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
			sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, admissionReviewVersions: w.AdmissionReviewVersions,
			matchConditions: w.MatchConditions}
	}
	return out
}

func mutatingHooks(in []admissionregistrationv1.MutatingWebhook) []hook {
	out := make([]hook, len(in))
	for i := range in {
		w := &in[i]
		out[i] = hook{name: w.Name, clientConfig: &w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy,
			matchPolicy: w.MatchPolicy, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
			sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, admissionReviewVersions: w.AdmissionReviewVersions,
			matchConditions: w.MatchConditions, reinvocationPolicy: w.ReinvocationPolicy}
	}
	return out
}

// ValidateValidatingWebhookConfiguration validates a
// ValidatingWebhookConfiguration on create.
func ValidateValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	errs := validateWebhookConfiguration(&c.ObjectMeta, validatingHooks(c.Webhooks), createWebhookRules())
	return append(errs, validateStaticSuffix(c.Name)...)
}

// ValidateValidatingWebhookConfigurationUpdate validates an update of a
// ValidatingWebhookConfiguration: the create rules, less those old already
// broke; unchanged match conditions are not compiled again.
func ValidateValidatingWebhookConfigurationUpdate(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	hooks := validatingHooks(c.Webhooks)
	return validateWebhookConfiguration(&c.ObjectMeta, hooks, updateWebhookRules(hooks, validatingHooks(old.Webhooks)))
}

// ValidateMutatingWebhookConfiguration validates a
// MutatingWebhookConfiguration on create.
func ValidateMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	errs := validateWebhookConfiguration(&c.ObjectMeta, mutatingHooks(c.Webhooks), createWebhookRules())
	return append(errs, validateStaticSuffix(c.Name)...)
}

// ValidateMutatingWebhookConfigurationUpdate validates an update of a
// MutatingWebhookConfiguration, as its validating counterpart does.
func ValidateMutatingWebhookConfigurationUpdate(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	hooks := mutatingHooks(c.Webhooks)
	return validateWebhookConfiguration(&c.ObjectMeta, hooks, updateWebhookRules(hooks, mutatingHooks(old.Webhooks)))
}

// updateWebhookRules relaxes the create rules by what the stored webhooks
// already break.
func updateWebhookRules(hooks, old []hook) webhookRules {
	r := webhookRules{
		skipMatchConditions:   len(hooks) == len(old),
		sideEffectsMustBeNone: true,
		knownReviewVersion:    true,
		uniqueNames:           true,
		stored:                storedExpressions{},
	}
	for i, h := range old {
		if r.skipMatchConditions && !equality.Semantic.DeepEqual(hooks[i].matchConditions, h.matchConditions) {
			r.skipMatchConditions = false
		}
		if h.sideEffects == nil || !contains(noSideEffects, *h.sideEffects) {
			r.sideEffectsMustBeNone = false
		}
		if len(h.admissionReviewVersions) > 0 && !acceptsKnownVersion(h.admissionReviewVersions) {
			r.knownReviewVersion = false
		}
		for _, s := range []*metav1.LabelSelector{h.namespaceSelector, h.objectSelector} {
			if s != nil && len(metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
				r.invalidSelectorValues = true
			}
		}
		for _, mc := range h.matchConditions {
			r.stored.add(mc.Expression)
		}
	}
	names := sets.New[string]()
	for _, h := range old {
		if names.Has(h.name) {
			r.uniqueNames = false
		}
		names.Insert(h.name)
	}
	return r
}

func acceptsKnownVersion(versions []string) bool {
	for _, v := range versions {
		if contains(admissionReviewVersions, v) {
			return true
		}
	}
	return false
}

func validateWebhookConfiguration(m *metav1.ObjectMeta, hooks []hook, r webhookRules) field.ErrorList {
	errs := validateMeta(m)
	names := sets.New[string]()
	for i := range hooks {
		p := webhooksPath.Index(i)
		errs = append(errs, validateWebhook(&hooks[i], r, p)...)
		errs = append(errs, validateAdmissionReviewVersions(hooks[i].admissionReviewVersions, r.knownReviewVersion, p.Child("admissionReviewVersions"))...)
		if name := hooks[i].name; r.uniqueNames && name != "" {
			if names.Has(name) {
				errs = append(errs, field.Duplicate(p.Child("name"), name))
			}
			names.Insert(name)
		}
	}
	return errs
}

func validateWebhook(h *hook, r webhookRules, p *field.Path) field.ErrorList {
	// The name must be a domain of at least three segments.
	errs := validation.IsFullyQualifiedName(p.Child("name"), h.name)
	for i := range h.rules {
		errs = append(errs, validateRuleWithOperations(&h.rules[i], p.Child("rules").Index(i))...)
	}
	errs = append(errs, validateEnum(h.failurePolicy, failurePolicies, p.Child("failurePolicy"))...)
	errs = append(errs, validateEnum(h.matchPolicy, matchPolicies, p.Child("matchPolicy"))...)
	sideEffects := allSideEffects
	if r.sideEffectsMustBeNone {
		sideEffects = noSideEffects
	}
	if h.sideEffects == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(sideEffects, ", ")))
	} else {
		errs = append(errs, validateEnum(h.sideEffects, sideEffects, p.Child("sideEffects"))...)
	}
	if t := h.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: r.invalidSelectorValues}
	if h.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.namespaceSelector, selectorOpts, p.Child("namespaceSelector"))...)
	}
	if h.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.objectSelector, selectorOpts, p.Child("objectSelector"))...)
	}
	errs = append(errs, validateEnum(h.reinvocationPolicy, reinvocationPolicies, p.Child("reinvocationPolicy"))...)
	errs = append(errs, validateClientConfig(h.clientConfig, p.Child("clientConfig"))...)
	if !r.skipMatchConditions {
		errs = append(errs, validateMatchConditions(h.matchConditions, false, r.stored, p.Child("matchConditions"))...)
	}
	return errs
}

// validateClientConfig checks that exactly one of url and service is set:
// an https URL with a host and no user information, query or fragment, or
// a service with a name, a namespace, a port 1-65535 and a clean path.
func validateClientConfig(c *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	switch {
	case (c.URL == nil) == (c.Service == nil):
		return field.ErrorList{field.Required(p, "exactly one of url or service is required")}
	case c.URL != nil:
		return webhook.ValidateWebhookURL(p.Child("url"), *c.URL, true)
	default:
		s := c.Service
		port := int32(443) // the default; defaulting sets it before validation
		if s.Port != nil {
			port = *s.Port
		}
		// Upstream hands the service's name and namespace to this helper in
		// the opposite order of its parameters, so a missing namespace is
		// reported at service.name and a missing name at service.namespace.
		// k1s keeps upstream's field paths.
		return webhook.ValidateWebhookService(p.Child("service"), s.Name, s.Namespace, s.Path, port)
	}
}

// validateAdmissionReviewVersions requires at least one version, each a
// DNS label and listed once; on create one must be a version the apiserver
// sends.
func validateAdmissionReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("must specify one of %v", strings.Join(admissionReviewVersions, ", ")))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	if requireKnown && !acceptsKnownVersion(versions) {
		errs = append(errs, field.Invalid(p, versions, fmt.Sprintf("must include at least one of %v", strings.Join(admissionReviewVersions, ", "))))
	}
	return errs
}
