package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"
)

// TestBootstrapConfigurationIsValid: every object k8s.io/apiserver's
// bootstrap configuration holds, defaulted, passes validation (the
// apiserver creates them at every start).
func TestBootstrapConfigurationIsValid(t *testing.T) {
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		fs = fs.DeepCopy()
		DefaultFlowSchemaSpec(&fs.Spec)
		expectErrs(t, ValidateFlowSchema(fs))
	}
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		pl = pl.DeepCopy()
		DefaultPriorityLevelConfiguration(pl)
		expectErrs(t, ValidatePriorityLevelConfiguration(pl))
	}
}

func TestDefaults(t *testing.T) {
	fs := &flowcontrolv1.FlowSchema{}
	DefaultFlowSchemaSpec(&fs.Spec)
	if fs.Spec.MatchingPrecedence != 1000 {
		t.Errorf("matchingPrecedence = %d, want 1000", fs.Spec.MatchingPrecedence)
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
			Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{},
		}},
	}}
	DefaultPriorityLevelConfiguration(pl)
	l := pl.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.BorrowingLimitPercent != nil {
		t.Errorf("limited = %+v", l)
	}
	if q := l.LimitResponse.Queuing; q.Queues != 64 || q.HandSize != 8 || q.QueueLengthLimit != 50 {
		t.Errorf("queuing = %+v", q)
	}
	// v1 keeps an explicit zero.
	pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](0)
	DefaultPriorityLevelConfiguration(pl)
	if *pl.Spec.Limited.NominalConcurrencyShares != 0 {
		t.Errorf("explicit zero shares defaulted to %d", *pl.Spec.Limited.NominalConcurrencyShares)
	}
	ex := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{},
	}}
	DefaultPriorityLevelConfiguration(ex)
	if *ex.Spec.Exempt.NominalConcurrencyShares != 0 || *ex.Spec.Exempt.LendablePercent != 0 {
		t.Errorf("exempt = %+v", ex.Spec.Exempt)
	}
}

func validFlowSchema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "fs"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			MatchingPrecedence:         500,
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{
					{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}},
					{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ns", Name: "*"}},
				},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get", "list"}, APIGroups: []string{"*"}, Resources: []string{"pods"}, Namespaces: []string{"default"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/healthz", "/apis/*"}}},
			}},
		},
	}
}

func TestValidateFlowSchema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*flowcontrolv1.FlowSchema)
		want   []errKey
	}{
		{"valid", func(*flowcontrolv1.FlowSchema) {}, nil},
		{"precedence 1 not exempt", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 },
			[]errKey{e(field.ErrorTypeInvalid, "spec.matchingPrecedence")}},
		{"precedence too large", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 },
			[]errKey{e(field.ErrorTypeInvalid, "spec.matchingPrecedence")}},
		{"no level", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" },
			[]errKey{e(field.ErrorTypeRequired, "spec.priorityLevelConfiguration.name")}},
		{"bad distinguisher", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "ByPhase" },
			[]errKey{e(field.ErrorTypeNotSupported, "spec.distinguisherMethod.type")}},
		{"user subject with group", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[0].Group = &flowcontrolv1.GroupSubject{Name: "g"}
		}, []errKey{e(field.ErrorTypeForbidden, "spec.rules[0].subjects[0].group")}},
		{"service account without namespace", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[1].ServiceAccount.Namespace = ""
		}, []errKey{e(field.ErrorTypeRequired, "spec.rules[0].subjects[1].serviceAccount.namespace")}},
		{"unknown kind", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[0].Kind = "Robot" },
			[]errKey{e(field.ErrorTypeNotSupported, "spec.rules[0].subjects[0].kind")}},
		{"wildcard with others", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].NonResourceRules[0].Verbs = []string{"*", "get"}
			fs.Spec.Rules[0].ResourceRules[0].Resources = []string{"*", "pods"}
		}, []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].nonResourceRules[0].verbs"), e(field.ErrorTypeInvalid, "spec.rules[0].resourceRules[0].resources")}},
		{"unsupported verb", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules[0].Verbs = []string{"escalate"} },
			[]errKey{e(field.ErrorTypeNotSupported, "spec.rules[0].resourceRules[0].verbs")}},
		{"namespaced rule without namespaces", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules[0].Namespaces = nil },
			[]errKey{e(field.ErrorTypeRequired, "spec.rules[0].resourceRules[0].namespaces")}},
		{"bad URL", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"healthz", "/a//b", "/a/*/b"}
		}, []errKey{
			e(field.ErrorTypeInvalid, "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]"),
			e(field.ErrorTypeInvalid, "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]"),
			e(field.ErrorTypeInvalid, "spec.rules[0].nonResourceRules[0].nonResourceURLs[2]"),
		}},
		{"no rules in a rule", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules, fs.Spec.Rules[0].NonResourceRules = nil, nil
		}, []errKey{e(field.ErrorTypeRequired, "spec.rules[0]")}},
		{"duplicate condition", func(fs *flowcontrolv1.FlowSchema) {
			fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}, {Type: "Dangling"}}
		}, []errKey{e(field.ErrorTypeDuplicate, "status.conditions[1].type")}},
		{"mandatory spec changed", func(fs *flowcontrolv1.FlowSchema) { fs.Name = "catch-all" },
			[]errKey{e(field.ErrorTypeInvalid, "spec")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := validFlowSchema()
			tc.mutate(fs)
			expectErrs(t, ValidateFlowSchema(fs), tc.want...)
		})
	}
}

func validLevel() *flowcontrolv1.PriorityLevelConfiguration {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "pl"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{},
			}},
		},
	}
	DefaultPriorityLevelConfiguration(pl)
	return pl
}

func TestValidatePriorityLevelConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*flowcontrolv1.PriorityLevelConfiguration)
		want   []errKey
	}{
		{"valid", func(*flowcontrolv1.PriorityLevelConfiguration) {}, nil},
		{"exempt type for another name", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Type, pl.Spec.Limited = flowcontrolv1.PriorityLevelEnablementExempt, nil
		}, []errKey{e(field.ErrorTypeInvalid, "spec.type")}},
		{"limited without limited", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil },
			[]errKey{e(field.ErrorTypeRequired, "spec.limited")}},
		{"limited with exempt", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}, []errKey{e(field.ErrorTypeForbidden, "spec.exempt")}},
		{"negative shares, lendable over 100", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](-1)
			pl.Spec.Limited.LendablePercent = ptr.To[int32](101)
			pl.Spec.Limited.BorrowingLimitPercent = ptr.To[int32](-1)
		}, []errKey{
			e(field.ErrorTypeInvalid, "spec.limited.nominalConcurrencyShares"),
			e(field.ErrorTypeInvalid, "spec.limited.lendablePercent"),
			e(field.ErrorTypeInvalid, "spec.limited.borrowingLimitPercent"),
		}},
		{"reject with queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}, []errKey{e(field.ErrorTypeForbidden, "spec.limited.limitResponse.queuing")}},
		{"hand larger than deck", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 65
		}, []errKey{e(field.ErrorTypeInvalid, "spec.limited.limitResponse.queuing.handSize")}},
		{"too much entropy", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.Queues = 1 << 20
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 60
		}, []errKey{e(field.ErrorTypeInvalid, "spec.limited.limitResponse.queuing.handSize")}},
		{"queue length", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.QueueLengthLimit = -1
		}, []errKey{e(field.ErrorTypeInvalid, "spec.limited.limitResponse.queuing.queueLengthLimit")}},
		{"round-trip annotation", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}
		}, []errKey{e(field.ErrorTypeForbidden, "metadata.annotations")}},
		{"catch-all changed", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Name = "catch-all" },
			[]errKey{e(field.ErrorTypeInvalid, "spec")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := validLevel()
			tc.mutate(pl)
			expectErrs(t, ValidatePriorityLevelConfiguration(pl), tc.want...)
		})
	}
}

// TestExemptLevelMayChangeItsExemptSettings: of the mandatory "exempt"
// level, only spec.exempt may differ from the fixed value.
func TestExemptLevelMayChangeItsExemptSettings(t *testing.T) {
	pl := bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
	DefaultPriorityLevelConfiguration(pl)
	pl.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](10)
	pl.Spec.Exempt.LendablePercent = ptr.To[int32](50)
	expectErrs(t, ValidatePriorityLevelConfiguration(pl))
	pl.Spec.Exempt.LendablePercent = ptr.To[int32](150)
	expectErrs(t, ValidatePriorityLevelConfiguration(pl), e(field.ErrorTypeInvalid, "spec.exempt.lendablePercent"))
}
