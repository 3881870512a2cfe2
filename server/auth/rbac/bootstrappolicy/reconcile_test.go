package bootstrappolicy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/k1s/k1s/server/auth/rbac"
	"github.com/k1s/k1s/server/auth/rbac/bootstrappolicy"
)

func metaNS(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// writes returns the create/update/delete actions recorded by client.
func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "delete", "patch":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func TestReconcileCreatesEverythingAndIsIdempotent(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if err := bootstrappolicy.Reconcile(ctx, client); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}

	// A new cluster: each object is created without being read first.
	gets := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Group == "rbac.authorization.k8s.io" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d RBAC reads on a new cluster, want the one that finds it new", gets)
	}

	crs, _ := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if got, want := len(crs.Items), len(bootstrappolicy.AllClusterRoles()); got != want {
		t.Errorf("clusterroles = %d, want %d", got, want)
	}
	crbs, _ := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if got, want := len(crbs.Items), len(bootstrappolicy.AllClusterRoleBindings()); got != want {
		t.Errorf("clusterrolebindings = %d, want %d", got, want)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system namespace not created: %v", err)
	}
	role, err := client.RbacV1().Roles("kube-system").Get(ctx, "extension-apiserver-authentication-reader", metav1.GetOptions{})
	if err != nil || len(role.Rules) != 1 {
		t.Errorf("extension-apiserver-authentication-reader = %+v, %v", role, err)
	}
	if _, err := client.RbacV1().RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{}); err != nil {
		t.Errorf("leader-locking binding: %v", err)
	}
	admin, err := client.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
	if err != nil || admin.AggregationRule == nil || len(admin.Rules) == 0 {
		t.Errorf("admin = %+v, %v; want aggregation rule and rules", admin, err)
	}

	client.ClearActions()
	if err := bootstrappolicy.Reconcile(ctx, client); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	if w := writes(client); len(w) != 0 {
		t.Errorf("second Reconcile wrote %v, want no writes", w)
	}
}

func TestReconcileMergesWithoutDroppingUserChanges(t *testing.T) {
	ctx := context.Background()
	userRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	var wantView rbacv1.ClusterRole
	for _, r := range bootstrappolicy.ClusterRoles() {
		if r.Name == "view" {
			wantView = r
		}
	}
	firstViewRule := wantView.Rules[0]

	// An old "view" that lost most default rules and gained a user rule and label.
	view := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: map[string]string{"team": "x", "kubernetes.io/bootstrapping": "custom"}},
		Rules:      []rbacv1.PolicyRule{firstViewRule, userRule},
	}
	// A protected default role with no rules at all.
	protectedRole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user", Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "false"}},
	}
	// A default binding with an extra user subject and none of its own.
	discovery := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:discovery"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "extra"}},
	}
	// A default binding pointing at the wrong role.
	basic := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user", UID: "old"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}},
	}
	// A default Role with an extra user rule.
	reader := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "extension-apiserver-authentication-reader"},
		Rules:      []rbacv1.PolicyRule{userRule},
	}
	client := fake.NewClientset(view, protectedRole, discovery, basic, reader)

	if err := bootstrappolicy.Reconcile(ctx, client); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}

	gotView, _ := client.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if ok, missing := rbac.Covers(gotView.Rules, wantView.Rules); !ok {
		t.Errorf("view lacks default rules %v", missing)
	}
	if !slices.ContainsFunc(gotView.Rules, func(r rbacv1.PolicyRule) bool { return r.APIGroups[0] == "example.com" }) {
		t.Error("view lost the user's rule")
	}
	if gotView.Labels["team"] != "x" || gotView.Labels["kubernetes.io/bootstrapping"] != "custom" {
		t.Errorf("view labels = %v, want user labels kept", gotView.Labels)
	}
	if gotView.Labels[bootstrappolicy.AggregateToEditLabel] != "true" || gotView.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("view meta = %v %v, want default label and annotation added", gotView.Labels, gotView.Annotations)
	}
	if gotView.AggregationRule == nil || len(gotView.AggregationRule.ClusterRoleSelectors) != 1 {
		t.Errorf("view aggregationRule = %+v, want the default selector added", gotView.AggregationRule)
	}
	// The default rule that was already there is not added again.
	count := 0
	for _, r := range gotView.Rules {
		if equality.Semantic.DeepEqual(r, firstViewRule) {
			count++
		}
	}
	if count != 1 || len(gotView.Rules) != len(wantView.Rules)+1 {
		t.Errorf("view has %d rules with the first default present %d times; want %d rules, once",
			len(gotView.Rules), count, len(wantView.Rules)+1)
	}

	gotProtected, _ := client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if len(gotProtected.Rules) != 0 {
		t.Errorf("protected role was changed: %+v", gotProtected.Rules)
	}

	gotDiscovery, _ := client.RbacV1().ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{})
	var names []string
	for _, s := range gotDiscovery.Subjects {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"extra", "system:authenticated"}) {
		t.Errorf("system:discovery subjects = %v, want [extra system:authenticated]", names)
	}

	gotBasic, _ := client.RbacV1().ClusterRoleBindings().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if gotBasic.RoleRef.Name != "system:basic-user" {
		t.Errorf("system:basic-user binding roleRef = %+v, want it recreated with the default", gotBasic.RoleRef)
	}

	gotReader, _ := client.RbacV1().Roles("kube-system").Get(ctx, "extension-apiserver-authentication-reader", metav1.GetOptions{})
	if len(gotReader.Rules) != 2 || gotReader.Rules[0].APIGroups[0] != "example.com" {
		t.Errorf("reader rules = %+v, want user rule then the default", gotReader.Rules)
	}
}

func TestReconcileRetriesConflictsAndReportsErrors(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}})

	conflicts := 0
	client.PrependReactor("update", "clusterroles", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts < 2 {
			conflicts++
			return true, nil, apierrors.NewConflict(rbacv1.Resource("clusterroles"), "edit", errors.New("stale"))
		}
		return false, nil, nil
	})
	client.PrependReactor("create", "clusterrolebindings", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*rbacv1.ClusterRoleBinding)
		if obj.Name == "system:monitoring" {
			return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
		}
		return false, nil, nil
	})

	err := bootstrappolicy.Reconcile(ctx, client)
	if err == nil || !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `reconcile clusterrolebinding "system:monitoring"`) {
		t.Fatalf("Reconcile error = %v, want the system:monitoring internal error", err)
	}
	if conflicts != 2 {
		t.Errorf("conflicts seen = %d, want 2 retried", conflicts)
	}
	edit, _ := client.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	if len(edit.Rules) == 0 {
		t.Error("edit was not updated after the conflicts")
	}
	// Objects after the failing one were still reconciled.
	if _, err := client.RbacV1().ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{}); err != nil {
		t.Errorf("system:discovery binding not created: %v", err)
	}
}
