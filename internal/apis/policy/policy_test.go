package policy

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validPDB() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromString("50%")),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
}

func TestValidatePodDisruptionBudget(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*policyv1.PodDisruptionBudget)
		want   []errKey
	}{
		{name: "valid", mutate: func(*policyv1.PodDisruptionBudget) {}},
		{name: "colon in name (path segment rule)", mutate: func(p *policyv1.PodDisruptionBudget) { p.Name = "web:v1" }},
		{
			name:   "both set",
			mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1)) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec")},
		},
		{
			name:   "negative min available",
			mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(-1)) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.minAvailable")},
		},
		{
			name: "percent over 100",
			mutate: func(p *policyv1.PodDisruptionBudget) {
				p.Spec.MinAvailable = nil
				p.Spec.MaxUnavailable = ptr.To(intstr.FromString("120%"))
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.maxUnavailable")},
		},
		{
			name:   "not a percent",
			mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromString("half")) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.minAvailable")},
		},
		{
			name:   "neither set is allowed",
			mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = nil },
		},
		{
			name: "bad selector",
			mutate: func(p *policyv1.PodDisruptionBudget) {
				p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].operator")},
		},
		{
			name: "unknown eviction policy",
			mutate: func(p *policyv1.PodDisruptionBudget) {
				p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Never"))
			},
			want: []errKey{e(field.ErrorTypeNotSupported, "spec.unhealthyPodEvictionPolicy")},
		},
		{
			name:   "missing namespace",
			mutate: func(p *policyv1.PodDisruptionBudget) { p.Namespace = "" },
			want:   []errKey{e(field.ErrorTypeRequired, "metadata.namespace")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pdb := validPDB()
			tc.mutate(pdb)
			expectErrs(t, ValidatePodDisruptionBudget(pdb), tc.want...)
		})
	}
}

func TestValidatePodDisruptionBudgetUpdate(t *testing.T) {
	old := validPDB()
	upd := old.DeepCopy()
	upd.Spec.MinAvailable = nil
	upd.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	upd.Spec.Selector.MatchLabels["tier"] = "front"
	expectErrs(t, ValidatePodDisruptionBudgetUpdate(upd, old))

	stored := validPDB()
	stored.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"bad value"}}}}
	same := stored.DeepCopy()
	same.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	expectErrs(t, ValidatePodDisruptionBudgetUpdate(same, stored))
	expectErrs(t, ValidatePodDisruptionBudget(same), e(field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].values[0]"))
}

func TestValidatePodDisruptionBudgetStatusUpdate(t *testing.T) {
	old := validPDB()
	upd := old.DeepCopy()
	upd.Status = policyv1.PodDisruptionBudgetStatus{
		DisruptionsAllowed: -1,
		CurrentHealthy:     3,
		DesiredHealthy:     -2,
		ExpectedPods:       4,
		Conditions: []metav1.Condition{
			{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: "SufficientPods", LastTransitionTime: metav1.Now()},
			{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: "SufficientPods", LastTransitionTime: metav1.Now()},
		},
	}
	expectErrs(t, ValidatePodDisruptionBudgetStatusUpdate(upd, old),
		e(field.ErrorTypeInvalid, "status.disruptionsAllowed"),
		e(field.ErrorTypeInvalid, "status.desiredHealthy"),
		e(field.ErrorTypeDuplicate, "status.conditions[1]"))
}

func TestValidateEviction(t *testing.T) {
	expectErrs(t, ValidateEviction(&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}))
	bg := metav1.DeletePropagationBackground
	expectErrs(t, ValidateEviction(&policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{PropagationPolicy: &bg, GracePeriodSeconds: ptr.To[int64](0)}}))
	expectErrs(t, ValidateEviction(&policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}}),
		e(field.ErrorTypeInvalid, "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential"))
	odd := metav1.DeletionPropagation("Sometimes")
	expectErrs(t, ValidateEviction(&policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{PropagationPolicy: &odd, DryRun: []string{"Maybe"}}}),
		e(field.ErrorTypeNotSupported, "deleteOptions.propagationPolicy"),
		e(field.ErrorTypeNotSupported, "deleteOptions.dryRun"))
}
