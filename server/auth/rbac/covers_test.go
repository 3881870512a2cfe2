package rbac_test

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/k1s/k1s/server/auth/rbac"
)

func TestCovers(t *testing.T) {
	tests := []struct {
		name        string
		owner       []rbacv1.PolicyRule
		servant     []rbacv1.PolicyRule
		wantCovers  bool
		wantMissing []rbacv1.PolicyRule
	}{
		{
			name:       "exact",
			owner:      []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))},
			servant:    []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			wantCovers: true,
		},
		{
			name:        "missing verb",
			owner:       []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			servant:     []rbacv1.PolicyRule{rule(l("get", "delete"), l(""), l("pods"))},
			wantMissing: []rbacv1.PolicyRule{rule(l("delete"), l(""), l("pods"))},
		},
		{
			name:       "union of owner rules covers one servant rule",
			owner:      []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods")), rule(l("list"), l(""), l("pods"))},
			servant:    []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))},
			wantCovers: true,
		},
		{
			name:       "star everything",
			owner:      []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))},
			servant:    []rbacv1.PolicyRule{rule(l("escalate"), l("rbac.authorization.k8s.io"), l("roles/status"), "x")},
			wantCovers: true,
		},
		{
			name:        "star does not cover non-resource urls",
			owner:       []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))},
			servant:     []rbacv1.PolicyRule{urlRule(l("get"), "/healthz")},
			wantMissing: []rbacv1.PolicyRule{urlRule(l("get"), "/healthz")},
		},
		{
			name:       "star subresource covers subresource of any resource",
			owner:      []rbacv1.PolicyRule{rule(l("update"), l("apps"), l("*/scale"))},
			servant:    []rbacv1.PolicyRule{rule(l("update"), l("apps"), l("deployments/scale", "statefulsets/scale"))},
			wantCovers: true,
		},
		{
			name:        "star subresource does not cover the resource",
			owner:       []rbacv1.PolicyRule{rule(l("update"), l("apps"), l("*/scale"))},
			servant:     []rbacv1.PolicyRule{rule(l("update"), l("apps"), l("deployments"))},
			wantMissing: []rbacv1.PolicyRule{rule(l("update"), l("apps"), l("deployments"))},
		},
		{
			name:        "resource does not cover its subresource",
			owner:       []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			servant:     []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods/log"))},
			wantMissing: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods/log"))},
		},
		{
			name:       "unrestricted names cover named",
			owner:      []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))},
			servant:    []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a", "b")},
			wantCovers: true,
		},
		{
			name:        "named does not cover unrestricted",
			owner:       []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")},
			servant:     []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))},
			wantMissing: []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))},
		},
		{
			name:        "named covers only its names",
			owner:       []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")},
			servant:     []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a", "b")},
			wantMissing: []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "b")},
		},
		{
			name:       "url prefix covers longer url and narrower prefix",
			owner:      []rbacv1.PolicyRule{urlRule(l("get"), "/apis/*")},
			servant:    []rbacv1.PolicyRule{urlRule(l("get"), "/apis/apps", "/apis/apps/*")},
			wantCovers: true,
		},
		{
			name:        "url prefix does not cover wider prefix",
			owner:       []rbacv1.PolicyRule{urlRule(l("get"), "/apis/apps/*")},
			servant:     []rbacv1.PolicyRule{urlRule(l("get"), "/apis/*")},
			wantMissing: []rbacv1.PolicyRule{urlRule(l("get"), "/apis/*")},
		},
		{
			name:        "wrong group",
			owner:       []rbacv1.PolicyRule{rule(l("get"), l("apps"), l("deployments"))},
			servant:     []rbacv1.PolicyRule{rule(l("get"), l("extensions"), l("deployments"))},
			wantMissing: []rbacv1.PolicyRule{rule(l("get"), l("extensions"), l("deployments"))},
		},
		{
			name:       "empty servant",
			wantCovers: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			covers, missing := rbac.Covers(tc.owner, tc.servant)
			if covers != tc.wantCovers {
				t.Errorf("covers = %v, want %v", covers, tc.wantCovers)
			}
			if !reflect.DeepEqual(missing, tc.wantMissing) {
				t.Errorf("missing = %#v\nwant %#v", missing, tc.wantMissing)
			}
		})
	}
}

func TestBreakdownRule(t *testing.T) {
	got := rbac.BreakdownRule(rule(l("get", "list"), l("", "apps"), l("pods"), "a"))
	want := []rbacv1.PolicyRule{
		rule(l("get"), l(""), l("pods"), "a"),
		rule(l("list"), l(""), l("pods"), "a"),
		rule(l("get"), l("apps"), l("pods"), "a"),
		rule(l("list"), l("apps"), l("pods"), "a"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BreakdownRule = %#v\nwant %#v", got, want)
	}
}

func TestCompactRules(t *testing.T) {
	got := rbac.CompactRules([]rbacv1.PolicyRule{
		rule(l("get"), l(""), l("pods")),
		rule(l("list"), l(""), l("pods")),
		rule(l("get"), l(""), l("pods"), "x"),
		urlRule(l("get"), "/healthz"),
		rule(l("get"), l(""), l("pods")),
	})
	var desc []string
	for _, r := range got {
		desc = append(desc, rbac.DescribeRule(r))
	}
	want := []string{
		`{APIGroups:[""], Resources:["pods"], ResourceNames:["x"], Verbs:["get"]}`,
		`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`,
		`{NonResourceURLs:["/healthz"], Verbs:["get"]}`,
	}
	if !reflect.DeepEqual(desc, want) {
		t.Errorf("CompactRules = %q\nwant %q", desc, want)
	}
}
