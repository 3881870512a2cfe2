package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RulesAllow reports whether any of rules permits the request described by
// attrs.
func RulesAllow(attrs authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

// RuleAllows reports whether rule permits the request described by attrs.
//
// For resource requests the verb, API group, resource (as "resource" or
// "resource/subresource", where a rule entry "*/subresource" matches that
// subresource of every resource) and, when the rule lists any, the object
// name must all match. For non-resource requests the verb and the URL must
// match; a rule URL ending in "*" matches every path with that prefix.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule, attrs.GetPath())
	}
	resource := attrs.GetResource()
	sub := attrs.GetSubresource()
	if sub != "" {
		resource = resource + "/" + sub
	}
	return apiGroupMatches(rule, attrs.GetAPIGroup()) &&
		resourceMatches(rule, resource, sub) &&
		resourceNameMatches(rule, attrs.GetName())
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches matches the combined "resource[/subresource]" string. A
// rule entry of the form "*/<sub>" matches any resource's <sub> subresource.
func resourceMatches(rule *rbacv1.PolicyRule, combined, sub string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if sub != "" && r == "*/"+sub {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	return slices.Contains(rule.ResourceNames, name)
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if urlCovers(u, path) {
			return true
		}
	}
	return false
}

// urlCovers reports whether the rule URL pattern matches (or, for coverage,
// includes) the given path: an exact match, "*", or a prefix ending in "*".
func urlCovers(pattern, path string) bool {
	if pattern == rbacv1.NonResourceAll || pattern == path {
		return true
	}
	prefix, ok := strings.CutSuffix(pattern, "*")
	if !ok {
		return false
	}
	// Every trailing star is part of the wildcard ("/api/**" acts as "/api/*").
	prefix = strings.TrimRight(prefix, "*")
	return strings.HasPrefix(path, prefix)
}
