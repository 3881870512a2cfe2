package rbac_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func fixture() []runtime.Object {
	return []runtime.Object{
		clusterRole("pod-reader", rule(l("get", "list", "watch"), l(""), l("pods"))),
		clusterRole("deployer", rule(l("create"), l("apps"), l("deployments"))),
		clusterRole("scaler", rule(l("update"), l("*"), l("*/scale"))),
		clusterRole("one-configmap", rule(l("get"), l(""), l("configmaps"), "cm1")),
		clusterRole("health", urlRule(l("get"), "/healthz", "/logs/*")),
		clusterRole("log-reader", rule(l("get"), l(""), l("pods/log"))),
		role("team-a", "secret-reader", rule(l("get"), l(""), l("secrets"))),

		crb("alice-pods", "pod-reader", userSubject("alice")),
		crb("devs-deploy", "deployer", groupSubject("devs")),
		crb("ops-scale", "scaler", groupSubject("ops")),
		crb("cm1", "one-configmap", userSubject("dave")),
		crb("sa-health", "health", groupSubject("system:serviceaccounts")),
		crb("broken", "does-not-exist", userSubject("carol")),
		rb("team-a", "bob-pods", "ClusterRole", "pod-reader", userSubject("bob")),
		// Namespace omitted: the binding's namespace applies.
		rb("team-a", "builder-secrets", "Role", "secret-reader", saSubject("", "builder")),
		rb("team-b", "all-sa-logs", "ClusterRole", "log-reader", groupSubject("system:serviceaccounts:team-b")),
		rb("team-c", "broken", "Role", "missing", userSubject("carol")),
	}
}

func TestAuthorize(t *testing.T) {
	a := newAuthorizer(t, fixture()...)
	alice := usr("alice", "system:authenticated")
	bob := usr("bob", "system:authenticated")
	builderA := usr("system:serviceaccount:team-a:builder", "system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated")
	builderB := usr("system:serviceaccount:team-b:builder", "system:serviceaccounts", "system:serviceaccounts:team-b", "system:authenticated")

	tests := []struct {
		name       string
		attrs      authorizer.AttributesRecord
		want       authorizer.Decision
		wantReason string // substring
	}{
		{"cluster binding to user allows", resReq(alice, "get", "", "pods", "x", "p"), authorizer.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "alice-pods" of ClusterRole "pod-reader" to User "alice"`},
		{"cluster binding allows cluster-wide list", resReq(alice, "list", "", "pods", "", ""), authorizer.DecisionAllow, "alice-pods"},
		{"verb not granted", resReq(alice, "delete", "", "pods", "x", "p"), authorizer.DecisionNoOpinion, ""},
		{"subresource not granted by resource", resReq(alice, "get", "", "pods/log", "x", "p"), authorizer.DecisionNoOpinion, ""},
		{"other group not granted", resReq(alice, "get", "apps", "pods", "x", "p"), authorizer.DecisionNoOpinion, ""},
		{"rolebinding to clusterrole applies in its namespace", resReq(bob, "get", "", "pods", "team-a", "p"), authorizer.DecisionAllow,
			`RBAC: allowed by RoleBinding "bob-pods/team-a" of ClusterRole "pod-reader" to User "bob"`},
		{"rolebinding to clusterrole not in other namespace", resReq(bob, "get", "", "pods", "team-b", "p"), authorizer.DecisionNoOpinion, ""},
		{"rolebinding to clusterrole not cluster-wide", resReq(bob, "list", "", "pods", "", ""), authorizer.DecisionNoOpinion, ""},
		{"service account subject defaults to binding namespace", resReq(builderA, "get", "", "secrets", "team-a", "s"), authorizer.DecisionAllow,
			`RoleBinding "builder-secrets/team-a" of Role "secret-reader" to ServiceAccount "builder/team-a"`},
		{"same SA name in another namespace does not match", resReq(builderB, "get", "", "secrets", "team-a", "s"), authorizer.DecisionNoOpinion, ""},
		{"serviceaccounts namespace group", resReq(builderB, "get", "", "pods/log", "team-b", "p"), authorizer.DecisionAllow, `Group "system:serviceaccounts:team-b"`},
		{"serviceaccounts namespace group other namespace", resReq(builderA, "get", "", "pods/log", "team-b", "p"), authorizer.DecisionNoOpinion, ""},
		{"group subject", resReq(usr("eve", "devs"), "create", "apps", "deployments", "x", ""), authorizer.DecisionAllow, `Group "devs"`},
		{"group subject wrong api group", resReq(usr("eve", "devs"), "create", "extensions", "deployments", "x", ""), authorizer.DecisionNoOpinion, ""},
		{"star subresource matches any resource", resReq(usr("o", "ops"), "update", "apps", "deployments/scale", "x", "d"), authorizer.DecisionAllow, "ops-scale"},
		{"star subresource does not match the resource", resReq(usr("o", "ops"), "update", "apps", "deployments", "x", "d"), authorizer.DecisionNoOpinion, ""},
		{"star subresource does not match other subresource", resReq(usr("o", "ops"), "update", "apps", "deployments/status", "x", "d"), authorizer.DecisionNoOpinion, ""},
		{"resource name matches", resReq(usr("dave"), "get", "", "configmaps", "x", "cm1"), authorizer.DecisionAllow, "cm1"},
		{"resource name differs", resReq(usr("dave"), "get", "", "configmaps", "x", "cm2"), authorizer.DecisionNoOpinion, ""},
		{"resource names need a name", resReq(usr("dave"), "get", "", "configmaps", "x", ""), authorizer.DecisionNoOpinion, ""},
		{"non-resource exact", urlReq(builderA, "get", "/healthz"), authorizer.DecisionAllow, `Group "system:serviceaccounts"`},
		{"non-resource prefix", urlReq(builderA, "get", "/logs/kube/x.log"), authorizer.DecisionAllow, "sa-health"},
		{"non-resource prefix is not substring", urlReq(builderA, "get", "/logsx"), authorizer.DecisionNoOpinion, ""},
		{"non-resource verb", urlReq(builderA, "post", "/healthz"), authorizer.DecisionNoOpinion, ""},
		{"non-resource rule does not grant resources", resReq(builderA, "get", "", "healthz", "", ""), authorizer.DecisionNoOpinion, ""},
		{"unknown user", resReq(usr("mallory"), "get", "", "pods", "x", "p"), authorizer.DecisionNoOpinion, ""},
		{"missing roles reported in reason", resReq(usr("carol"), "get", "", "pods", "team-c", "p"), authorizer.DecisionNoOpinion, `"does-not-exist" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatalf("Authorize error: %v", err)
			}
			if got != tc.want {
				t.Fatalf("decision = %v (reason %q), want %v", got, reason, tc.want)
			}
			if tc.wantReason != "" && !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", reason, tc.wantReason)
			}
			if tc.wantReason == "" && reason != "" {
				t.Errorf("reason = %q, want empty", reason)
			}
			cad := a.ConditionsAwareAuthorize(context.Background(), tc.attrs)
			if (tc.want == authorizer.DecisionAllow) != cad.IsAllow() {
				t.Errorf("ConditionsAwareAuthorize allow = %v, want %v", cad.IsAllow(), tc.want == authorizer.DecisionAllow)
			}
		})
	}
}

func TestAuthorizeMissingRoleBothBindings(t *testing.T) {
	// carol's ClusterRoleBinding and RoleBinding both reference missing roles:
	// both errors are reported.
	a := newAuthorizer(t, fixture()...)
	_, reason, _ := a.Authorize(context.Background(), resReq(usr("carol"), "get", "", "pods", "team-c", "p"))
	for _, want := range []string{`clusterrole.rbac.authorization.k8s.io "does-not-exist" not found`, `role.rbac.authorization.k8s.io "missing" not found`} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not contain %q", reason, want)
		}
	}
}

func TestRulesFor(t *testing.T) {
	a := newAuthorizer(t, fixture()...)
	builderA := usr("system:serviceaccount:team-a:builder", "system:serviceaccounts", "system:serviceaccounts:team-a")

	res, nonRes, incomplete, err := a.RulesFor(context.Background(), builderA, "team-a")
	if err != nil || incomplete {
		t.Fatalf("RulesFor err=%v incomplete=%v", err, incomplete)
	}
	if len(res) != 1 || res[0].GetResources()[0] != "secrets" || res[0].GetVerbs()[0] != "get" {
		t.Errorf("resource rules = %+v, want the secret-reader rule", res)
	}
	if len(nonRes) != 1 || strings.Join(nonRes[0].GetNonResourceURLs(), ",") != "/healthz,/logs/*" {
		t.Errorf("non-resource rules = %+v, want the health rule", nonRes)
	}

	// Without the namespace, only cluster-wide rules apply.
	res, _, _, _ = a.RulesFor(context.Background(), builderA, "")
	if len(res) != 0 {
		t.Errorf("cluster-wide resource rules = %+v, want none", res)
	}

	_, _, _, err = a.RulesFor(context.Background(), usr("carol"), "team-c")
	if err == nil {
		t.Error("RulesFor for carol: want the missing role errors")
	}
}

func TestRoleRefRules(t *testing.T) {
	a := newAuthorizer(t, fixture()...)
	ctx := context.Background()
	tests := []struct {
		name      string
		ref       rbacv1.RoleRef
		ns        string
		wantRules int
		wantErr   string
	}{
		{"clusterrole", rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"}, "", 1, ""},
		{"role", rbacv1.RoleRef{Kind: "Role", Name: "secret-reader"}, "team-a", 1, ""},
		{"role in other namespace", rbacv1.RoleRef{Kind: "Role", Name: "secret-reader"}, "team-b", 0, "not found"},
		{"role without namespace", rbacv1.RoleRef{Kind: "Role", Name: "secret-reader"}, "", 0, "namespaced binding"},
		{"bad kind", rbacv1.RoleRef{Kind: "User", Name: "x"}, "", 0, "unsupported role reference kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := a.RoleRefRules(ctx, tc.ref, tc.ns)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(rules) != tc.wantRules {
				t.Fatalf("rules=%v err=%v, want %d rules", rules, err, tc.wantRules)
			}
		})
	}
}

func TestEvaluateConditionsUnsupported(t *testing.T) {
	a := newAuthorizer(t)
	d, _, err := a.EvaluateConditions(context.Background(), authorizer.ConditionsAwareDecision{}, nil)
	if d != authorizer.DecisionDeny || err != authorizer.ErrorConditionEvaluationNotSupported {
		t.Fatalf("EvaluateConditions = %v, %v; want Deny, ErrorConditionEvaluationNotSupported", d, err)
	}
}

func TestAuthorizeWithoutUser(t *testing.T) {
	a := newAuthorizer(t, fixture()...)
	d, reason, err := a.Authorize(context.Background(), authorizer.AttributesRecord{Verb: "get", Resource: "pods", ResourceRequest: true})
	if d != authorizer.DecisionNoOpinion || reason != "" || err != nil {
		t.Fatalf("Authorize without user = %v, %q, %v; want NoOpinion", d, reason, err)
	}
}
