package flowcontrol

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"
)

// maxMatchingPrecedence is the largest matchingPrecedence a FlowSchema may have.
const maxMatchingPrecedence int32 = 10000

// maxQueues bounds a priority level's queues (10^7).
const maxQueues int32 = 10 * 1000 * 1000

var (
	supportedDistinguisherMethods = []string{
		string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType),
		string(flowcontrolv1.FlowDistinguisherMethodByUserType),
	}
	supportedVerbs        = sets.New("get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy")
	supportedSubjectKinds = []string{
		string(flowcontrolv1.SubjectKindGroup),
		string(flowcontrolv1.SubjectKindServiceAccount),
		string(flowcontrolv1.SubjectKindUser),
	}
	supportedLevelTypes = []string{
		string(flowcontrolv1.PriorityLevelEnablementExempt),
		string(flowcontrolv1.PriorityLevelEnablementLimited),
	}
	supportedLimitResponseTypes = []string{
		string(flowcontrolv1.LimitResponseTypeQueue),
		string(flowcontrolv1.LimitResponseTypeReject),
	}
)

// mandatoryFlowSchemas and mandatoryLevels are the mandatory objects of
// k8s.io/apiserver's bootstrap configuration, defaulted as a request's
// object is, by name.
var (
	mandatoryFlowSchemas = func() map[string]*flowcontrolv1.FlowSchema {
		out := map[string]*flowcontrolv1.FlowSchema{}
		for _, fs := range bootstrap.MandatoryFlowSchemas {
			fs = fs.DeepCopy()
			DefaultFlowSchemaSpec(&fs.Spec)
			out[fs.Name] = fs
		}
		return out
	}()
	mandatoryLevels = func() map[string]*flowcontrolv1.PriorityLevelConfiguration {
		out := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
		for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
			pl = pl.DeepCopy()
			DefaultPriorityLevelConfiguration(pl)
			out[pl.Name] = pl
		}
		return out
	}()
)

// ValidateFlowSchema validates a FlowSchema on create.
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := validateObjectMeta(&fs.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	specPath := field.NewPath("spec")
	errs = append(errs, validateFlowSchemaSpec(fs.Name, &fs.Spec, specPath)...)
	if mand, ok := mandatoryFlowSchemas[fs.Name]; ok && !apiequality.Semantic.DeepEqual(fs.Spec, mand.Spec) {
		errs = append(errs, field.Invalid(specPath, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateFlowSchemaStatus(&fs.Status, field.NewPath("status"))...)
}

// ValidateFlowSchemaUpdate validates a FlowSchema on update: as on create
// (the generic registry checks the metadata update).
func ValidateFlowSchemaUpdate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	return ValidateFlowSchema(fs)
}

// ValidateFlowSchemaStatusUpdate validates an update of a FlowSchema's status.
func ValidateFlowSchemaStatusUpdate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	return validateFlowSchemaStatus(&fs.Status, field.NewPath("status"))
}

func validateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > maxMatchingPrecedence {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", maxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(supportedDistinguisherMethods, string(dm.Type)) {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), dm, supportedDistinguisherMethods))
	}
	plPath := p.Child("priorityLevelConfiguration", "name")
	if pl := spec.PriorityLevelConfiguration.Name; pl != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(pl, false) {
			errs = append(errs, field.Invalid(plPath, pl, msg))
		}
	} else {
		errs = append(errs, field.Required(plPath, "must reference a priority level"))
	}
	for i := range spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&spec.Rules[i], p.Child("rules").Index(i))...)
	}
	return errs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

func validateSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, name, msg string) {
		if set {
			errs = append(errs, field.Forbidden(p.Child(name), msg))
		}
	}
	const notUser, notGroup, notSA = "user is forbidden when subject kind is not 'User'",
		"group is forbidden when subject kind is not 'Group'",
		"serviceAccount is forbidden when subject kind is not 'ServiceAccount'"
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = append(errs, validateServiceAccountSubject(s.ServiceAccount, p.Child("serviceAccount"))...)
		forbid(s.User != nil, "user", notUser)
		forbid(s.Group != nil, "group", notGroup)
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", notSA)
		forbid(s.Group != nil, "group", notGroup)
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", notSA)
		forbid(s.User != nil, "user", notUser)
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, supportedSubjectKinds))
	}
	return errs
}

func validateServiceAccountSubject(sa *flowcontrolv1.ServiceAccountSubject, p *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(p, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if sa.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if sa.Name != flowcontrolv1.NameAll {
		for _, msg := range apimachineryvalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

// validateVerbs checks a rule's verbs: "*" alone, or supported verbs.
func validateVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case slices.Contains(verbs, flowcontrolv1.VerbAll):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !supportedVerbs.HasAll(verbs...):
		return field.ErrorList{field.NotSupported(p, verbs, sets.List(supportedVerbs))}
	}
	return nil
}

func validateNonResourceRule(rule *flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, p.Child("verbs"))
	urls := p.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urls, "nonResourceURLs must contain at least one value"))
	case slices.Contains(rule.NonResourceURLs, flowcontrolv1.NonResourceAll):
		if len(rule.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urls, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range rule.NonResourceURLs {
			if err := validateNonResourceURLPath(u, urls.Index(i)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func validateResourceRule(rule *flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, p.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, flowcontrolv1.APIGroupAll) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && slices.Contains(rule.Resources, flowcontrolv1.ResourceAll) {
		errs = append(errs, field.Invalid(p.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	ns := p.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		errs = append(errs, field.Required(ns, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(rule.Namespaces, flowcontrolv1.NamespaceEvery):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(ns, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, n := range rule.Namespaces {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(n, false) {
				errs = append(errs, field.Invalid(ns.Index(i), n, "each member of this list must be '*' or a DNS-1123 label; "+msg))
			}
		}
	}
	return errs
}

// validateNonResourceURLPath: a path starts with a slash, has no white
// space and no double slash, and has at most a trailing "/*" wildcard.
func validateNonResourceURLPath(path string, p *field.Path) *field.Error {
	switch {
	case path == "":
		return field.Invalid(p, path, "must not be empty")
	case path == "/":
		return nil
	case !strings.HasPrefix(path, "/"):
		return field.Invalid(p, path, "must start with slash")
	case strings.Contains(path, " "):
		return field.Invalid(p, path, "must not contain white-space")
	case strings.Contains(path, "//"):
		return field.Invalid(p, path, "must not contain double slash")
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && !strings.HasSuffix(path, "/*")) {
		return field.Invalid(p, path, "wildcard can only do suffix matching")
	}
	return nil
}

func validateFlowSchemaStatus(status *flowcontrolv1.FlowSchemaStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range status.Conditions {
		cp := p.Child("conditions").Index(i)
		if seen.Has(string(c.Type)) {
			errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
		}
		seen.Insert(string(c.Type))
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
	}
	return errs
}

// ValidatePriorityLevelConfiguration validates a PriorityLevelConfiguration
// on create.
func ValidatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	errs := validateObjectMeta(&pl.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	// The v1beta3 round-trip annotation is for v1beta3 alone.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(metadataPath.Child("annotations"), fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	specPath := field.NewPath("spec")
	errs = append(errs, validateLevelSpec(pl.Name, &pl.Spec, specPath)...)
	errs = append(errs, validateMandatoryLevel(pl, specPath)...)
	return append(errs, validateLevelStatus(&pl.Status, field.NewPath("status"))...)
}

// ValidatePriorityLevelConfigurationUpdate validates a
// PriorityLevelConfiguration on update: as on create.
func ValidatePriorityLevelConfigurationUpdate(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	return ValidatePriorityLevelConfiguration(pl)
}

// ValidatePriorityLevelConfigurationStatusUpdate validates an update of a
// PriorityLevelConfiguration's status.
func ValidatePriorityLevelConfigurationStatusUpdate(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	return validateLevelStatus(&pl.Status, field.NewPath("status"))
}

// validateMandatoryLevel holds "exempt" and "catch-all" to their fixed
// specs; the admin may change the exempt level's spec.exempt.
func validateMandatoryLevel(pl *flowcontrolv1.PriorityLevelConfiguration, p *field.Path) field.ErrorList {
	mand, ok := mandatoryLevels[pl.Name]
	if !ok {
		return nil
	}
	have := pl.Spec.DeepCopy()
	if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
		have.Exempt = mand.Spec.Exempt
		if !apiequality.Semantic.DeepEqual(&mand.Spec, have) {
			return field.ErrorList{field.Invalid(p, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name))}
		}
		return nil
	}
	if !apiequality.Semantic.DeepEqual(&mand.Spec, have) {
		return field.ErrorList{field.Invalid(p, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name))}
	}
	return nil
}

func validateLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			ep := p.Child("exempt")
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(ep.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			errs = append(errs, validateLendablePercent(e.LendablePercent, ep)...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(spec.Limited, p.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, supportedLevelTypes))
	}
	return errs
}

func validateLendablePercent(v *int32, p *field.Path) field.ErrorList {
	if v != nil && (*v < 0 || *v > 100) {
		return field.ErrorList{field.Invalid(p.Child("lendablePercent"), *v, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	errs = append(errs, validateLimitResponse(&l.LimitResponse, p.Child("limitResponse"))...)
	errs = append(errs, validateLendablePercent(l.LendablePercent, p)...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		return validateQueuing(lr.Queuing, p.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), lr.Type, supportedLimitResponseTypes)}
	}
	return nil
}

func validateQueuing(q *flowcontrolv1.QueuingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(p.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return errs
}

func validateLevelStatus(status *flowcontrolv1.PriorityLevelConfigurationStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range status.Conditions {
		cp := p.Child("conditions").Index(i)
		if seen.Has(string(c.Type)) {
			errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
		}
		seen.Insert(string(c.Type))
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
	}
	return errs
}
