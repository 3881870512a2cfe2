package rbac_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/k1s/k1s/server/auth/rbac"
)

func escalationFixture() []runtime.Object {
	return []runtime.Object{
		clusterRole("cluster-admin", rule(l("*"), l("*"), l("*")), urlRule(l("*"), "*")),
		clusterRole("pod-reader", rule(l("get", "list", "watch"), l(""), l("pods"))),
		clusterRole("role-writer", rule(l("create", "update"), l("rbac.authorization.k8s.io"), l("roles", "rolebindings", "clusterroles", "clusterrolebindings"))),
		clusterRole("role-escalator", rule(l("escalate"), l("rbac.authorization.k8s.io"), l("roles", "clusterroles"))),
		clusterRole("admin-binder", rule(l("bind"), l("rbac.authorization.k8s.io"), l("clusterroles"), "cluster-admin")),
		clusterRole("almost-all", rule(l("get", "list", "watch", "create", "update", "patch", "delete"), l("*"), l("*"))),

		// writer: may write RBAC objects, reads pods in team-a only.
		crb("writer-rbac", "role-writer", userSubject("writer")),
		rb("team-a", "writer-pods", "ClusterRole", "pod-reader", userSubject("writer")),
		// escalator: writer plus escalate.
		crb("escalator-rbac", "role-writer", userSubject("escalator")),
		crb("escalator-escalate", "role-escalator", userSubject("escalator")),
		// binder: writer plus bind on cluster-admin in team-a only.
		crb("binder-rbac", "role-writer", userSubject("binder")),
		rb("team-a", "binder-bind", "ClusterRole", "admin-binder", userSubject("binder")),
		// resource-admin: the common verbs on every resource, but neither "*",
		// escalate, bind nor non-resource URLs.
		crb("resource-admin", "almost-all", userSubject("resource-admin")),
	}
}

func TestConfirmNoEscalation(t *testing.T) {
	a := newAuthorizer(t, escalationFixture()...)
	ctx := context.Background()
	writer := usr("writer")

	if err := rbac.ConfirmNoEscalation(ctx, a, writer, "team-a", []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))}); err != nil {
		t.Errorf("rules held in team-a: %v", err)
	}
	err := rbac.ConfirmNoEscalation(ctx, a, writer, "team-b", []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))})
	want := "user \"writer\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n" +
		`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`
	if err == nil || err.Error() != want {
		t.Errorf("rules not held in team-b: err = %v\nwant %s", err, want)
	}
	if err := rbac.ConfirmNoEscalation(ctx, a, nil, "", nil); err == nil {
		t.Error("nil user: want an error")
	}
}

func TestEscalationCheckerRoles(t *testing.T) {
	a := newAuthorizer(t, escalationFixture()...)
	// The checker asks the authorizer chain about escalate/bind; here RBAC alone.
	c := rbac.NewEscalationChecker(a, a)
	ctx := context.Background()

	readPods := []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}
	readSecrets := []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))}
	nsRole := func(ns string, rules []rbacv1.PolicyRule) *rbacv1.Role { return role(ns, "r", rules...) }

	tests := []struct {
		name    string
		user    user.Info
		role    *rbacv1.Role
		old     *rbacv1.Role
		wantErr string // substring; empty means allowed
	}{
		{"rules held in the namespace", usr("writer"), nsRole("team-a", readPods), nil, ""},
		{"rules not held in that namespace", usr("writer"), nsRole("team-b", readPods), nil, "attempting to grant RBAC permissions not currently held"},
		{"rules never held", usr("writer"), nsRole("team-a", readSecrets), nil, `Resources:["secrets"]`},
		{"escalate verb allows", usr("escalator"), nsRole("team-b", readSecrets), nil, ""},
		{"system:masters allows", usr("root", user.SystemPrivilegedGroup), nsRole("team-b", readSecrets), nil, ""},
		{"update adding rules not held", usr("writer"), nsRole("team-b", readSecrets), nsRole("team-b", nil), "not currently held"},
		{"update of finalizers only is allowed", usr("writer"),
			withFinalizer(nsRole("team-b", readSecrets)), nsRole("team-b", readSecrets), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckRole(ctx, tc.user, tc.role, tc.old)
			checkErr(t, err, tc.wantErr)
		})
	}
}

func withFinalizer(r *rbacv1.Role) *rbacv1.Role {
	r.Finalizers = []string{"example.com/keep"}
	return r
}

func TestEscalationCheckerClusterRoles(t *testing.T) {
	a := newAuthorizer(t, escalationFixture()...)
	c := rbac.NewEscalationChecker(a, a)
	ctx := context.Background()

	aggregated := func(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		cr := clusterRole("agg", rules...)
		cr.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}
		return cr
	}
	tests := []struct {
		name    string
		user    user.Info
		role    *rbacv1.ClusterRole
		old     *rbacv1.ClusterRole
		wantErr string
	}{
		{"cluster-wide rules held", usr("writer"), clusterRole("c", rule(l("create"), l("rbac.authorization.k8s.io"), l("roles"))), nil, ""},
		// writer reads pods only in team-a, which does not count for a ClusterRole.
		{"namespaced rules do not count", usr("writer"), clusterRole("c", rule(l("get"), l(""), l("pods"))), nil, "not currently held"},
		{"escalate verb allows", usr("escalator"), clusterRole("c", rule(l("get"), l(""), l("pods"))), nil, ""},
		{"aggregation needs full authority", usr("resource-admin"), aggregated(), nil, "must have cluster-admin privileges to use the aggregationRule"},
		{"removing aggregation needs full authority", usr("resource-admin"), clusterRole("agg"), aggregated(), "must have cluster-admin privileges"},
		{"aggregation by cluster admin", usr("root", user.SystemPrivilegedGroup), aggregated(), nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, c.CheckClusterRole(ctx, tc.user, tc.role, tc.old), tc.wantErr)
		})
	}
}

func TestEscalationCheckerBindings(t *testing.T) {
	a := newAuthorizer(t, escalationFixture()...)
	c := rbac.NewEscalationChecker(a, a)
	ctx := context.Background()

	tests := []struct {
		name         string
		user         user.Info
		binding      *rbacv1.RoleBinding        // one of binding
		crb          *rbacv1.ClusterRoleBinding // or crb
		wantErr      string
		wantNotFound bool
	}{
		{"bind role whose rules are held in namespace", usr("writer"),
			rb("team-a", "b", "ClusterRole", "pod-reader", userSubject("friend")), nil, "", false},
		{"bind role whose rules are not held in namespace", usr("writer"),
			rb("team-b", "b", "ClusterRole", "pod-reader", userSubject("friend")), nil, "not currently held", false},
		{"grant cluster-admin without rights", usr("writer"),
			rb("team-a", "b", "ClusterRole", "cluster-admin", userSubject("writer")), nil, `Resources:["*"]`, false},
		{"bind verb allows in its namespace", usr("binder"),
			rb("team-a", "b", "ClusterRole", "cluster-admin", userSubject("friend")), nil, "", false},
		{"bind verb in one namespace does not allow another", usr("binder"),
			rb("team-b", "b", "ClusterRole", "cluster-admin", userSubject("friend")), nil, "not currently held", false},
		{"bind verb in a namespace does not allow cluster binding", usr("binder"),
			nil, crb("b", "cluster-admin", userSubject("friend")), "not currently held", false},
		{"cluster binding needs cluster-wide rules", usr("writer"),
			nil, crb("b", "pod-reader", userSubject("friend")), "not currently held", false},
		{"system:masters binds anything", usr("root", user.SystemPrivilegedGroup),
			nil, crb("b", "cluster-admin", userSubject("friend")), "", false},
		{"missing role is NotFound", usr("writer"),
			rb("team-a", "b", "Role", "nope", userSubject("friend")), nil, "not found", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.binding != nil {
				err = c.CheckRoleBinding(ctx, tc.user, tc.binding, nil)
			} else {
				err = c.CheckClusterRoleBinding(ctx, tc.user, tc.crb, nil)
			}
			checkErr(t, err, tc.wantErr)
			if tc.wantNotFound && !apierrors.IsNotFound(err) {
				t.Errorf("err = %v, want NotFound", err)
			}
		})
	}
}

func TestEscalationCheckerBindingUpdateGCOnly(t *testing.T) {
	a := newAuthorizer(t, escalationFixture()...)
	c := rbac.NewEscalationChecker(a, a)
	old := crb("b", "cluster-admin", userSubject("x"))
	updated := old.DeepCopy()
	updated.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "n", UID: "u"}}
	if err := c.CheckClusterRoleBinding(context.Background(), usr("writer"), updated, old); err != nil {
		t.Errorf("owner reference only update: %v", err)
	}
	updated.Subjects = append(updated.Subjects, userSubject("writer"))
	if err := c.CheckClusterRoleBinding(context.Background(), usr("writer"), updated, old); err == nil {
		t.Error("adding a subject to a cluster-admin binding: want forbidden")
	}
}

func TestEscalationCheckerNilAuthorizer(t *testing.T) {
	a := newAuthorizer(t, escalationFixture()...)
	c := rbac.NewEscalationChecker(nil, a)
	// Without an authorizer the escalate verb cannot be confirmed.
	err := c.CheckRole(context.Background(), usr("escalator"), role("team-b", "r", rule(l("get"), l(""), l("secrets"))), nil)
	checkErr(t, err, "not currently held")
}

// checkErr asserts err is nil when want is empty, or a Forbidden (or other)
// error containing want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("err = nil, want error containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
	if !strings.Contains(want, "not found") && !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want a Forbidden status error", err)
	}
}
