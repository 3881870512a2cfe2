package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Covers reports whether the owner rules grant at least everything the
// servant rules grant. When they do not, it also returns the uncovered
// permissions, each broken down to a single verb on a single group/resource
// (and name) or a single non-resource URL.
//
// Wildcards are honoured on the owner side: "*" verbs, groups and resources,
// "*/subresource" resources, and non-resource URLs ending in "*". An owner
// rule restricted to resourceNames never covers an unrestricted servant rule.
func Covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, s := range servant {
		for _, atom := range BreakdownRule(s) {
			if !coveredByAny(owner, atom) {
				missing = append(missing, atom)
			}
		}
	}
	return len(missing) == 0, missing
}

// BreakdownRule splits rule into the equivalent list of rules that each
// carry exactly one verb and either one group, one resource and at most one
// resource name, or one non-resource URL.
func BreakdownRule(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range rule.APIGroups {
		for _, r := range rule.Resources {
			for _, v := range rule.Verbs {
				if len(rule.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{r}, Verbs: []string{v}})
					continue
				}
				for _, n := range rule.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{r}, Verbs: []string{v}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range rule.NonResourceURLs {
		for _, v := range rule.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

func coveredByAny(owner []rbacv1.PolicyRule, atom rbacv1.PolicyRule) bool {
	for i := range owner {
		if ruleCovers(&owner[i], &atom) {
			return true
		}
	}
	return false
}

// ruleCovers reports whether owner covers atom, a rule produced by
// BreakdownRule.
func ruleCovers(owner, atom *rbacv1.PolicyRule) bool {
	if !containsAllOrWildcard(owner.Verbs, atom.Verbs, rbacv1.VerbAll) {
		return false
	}
	if !containsAllOrWildcard(owner.APIGroups, atom.APIGroups, rbacv1.APIGroupAll) {
		return false
	}
	if !resourcesCover(owner.Resources, atom.Resources) {
		return false
	}
	for _, u := range atom.NonResourceURLs {
		if !slices.ContainsFunc(owner.NonResourceURLs, func(p string) bool { return urlCovers(p, u) }) {
			return false
		}
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	if len(atom.ResourceNames) == 0 {
		// The owner is limited to some names; the servant wants all of them.
		return false
	}
	return containsAll(owner.ResourceNames, atom.ResourceNames)
}

func containsAllOrWildcard(set, want []string, wildcard string) bool {
	return slices.Contains(set, wildcard) || containsAll(set, want)
}

func containsAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

func resourcesCover(owner, want []string) bool {
	if slices.Contains(owner, rbacv1.ResourceAll) {
		return true
	}
	for _, w := range want {
		if slices.Contains(owner, w) {
			continue
		}
		_, sub, isSub := strings.Cut(w, "/")
		if !isSub || !slices.Contains(owner, "*/"+sub) {
			return false
		}
	}
	return true
}

// CompactRules merges rules that name exactly one API group, one resource and
// at most one resource name, and differ only in their verbs. Other rules are
// returned unchanged. It is meant to shorten the list of missing permissions
// returned by Covers before showing it to a user; the result is sorted by its
// string form so messages are stable.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct {
		group, resource, name string
		hasName               bool
	}
	var out []rbacv1.PolicyRule
	merged := map[key]int{}
	for _, r := range rules {
		simple := len(r.APIGroups) == 1 && len(r.Resources) == 1 && len(r.ResourceNames) <= 1 && len(r.NonResourceURLs) == 0
		if !simple {
			out = append(out, *r.DeepCopy())
			continue
		}
		k := key{group: r.APIGroups[0], resource: r.Resources[0]}
		if len(r.ResourceNames) == 1 {
			k.name, k.hasName = r.ResourceNames[0], true
		}
		if i, ok := merged[k]; ok {
			for _, v := range r.Verbs {
				if !slices.Contains(out[i].Verbs, v) {
					out[i].Verbs = append(out[i].Verbs, v)
				}
			}
			continue
		}
		merged[k] = len(out)
		out = append(out, *r.DeepCopy())
	}
	slices.SortFunc(out, func(a, b rbacv1.PolicyRule) int { return strings.Compare(DescribeRule(a), DescribeRule(b)) })
	return out
}

// DescribeRule renders a rule compactly for messages, listing only the
// fields that are set, e.g. {APIGroups:[""], Resources:["pods"], Verbs:["get"]}.
func DescribeRule(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(label string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", label, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
