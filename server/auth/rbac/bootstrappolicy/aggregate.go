package bootstrappolicy

import (
	"cmp"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregatedRules computes the rules of the aggregated ClusterRole target:
// for each of its selectors in order, the rules of the roles in all that
// match it (target itself excluded), taken in name order, skipping rules
// already collected. It returns nil rules for a role without an
// aggregationRule. This is what a clusterrole-aggregation controller writes.
func AggregatedRules(target *rbacv1.ClusterRole, all []rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if target.AggregationRule == nil {
		return nil, nil
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b rbacv1.ClusterRole) int { return cmp.Compare(a.Name, b.Name) })
	rules := []rbacv1.PolicyRule{}
	for i := range target.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&target.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %q: aggregation selector %d: %w", target.Name, i, err)
		}
		for j := range sorted {
			if sorted[j].Name == target.Name || !sel.Matches(labels.Set(sorted[j].Labels)) {
				continue
			}
			for _, r := range sorted[j].Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

// fillAggregatedRules sets the rules of every aggregated role in roles to its
// aggregation over roles, repeating until nothing changes so that chains
// (view into edit into admin) settle. The selectors are static and valid.
func fillAggregatedRules(roles []rbacv1.ClusterRole) {
	for range len(roles) + 1 {
		changed := false
		for i := range roles {
			if roles[i].AggregationRule == nil {
				continue
			}
			rules, err := AggregatedRules(&roles[i], roles)
			if err != nil {
				panic(fmt.Sprintf("bootstrap policy: %v", err)) // static data; covered by tests
			}
			if !equality.Semantic.DeepEqual(rules, roles[i].Rules) {
				roles[i].Rules = rules
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}
