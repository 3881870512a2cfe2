package bootstrappolicy_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/k1s/k1s/server/auth/rbac"
	"github.com/k1s/k1s/server/auth/rbac/bootstrappolicy"
)

func clusterRolesByName(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	out := map[string]rbacv1.ClusterRole{}
	for _, r := range bootstrappolicy.AllClusterRoles() {
		if _, dup := out[r.Name]; dup {
			t.Fatalf("duplicate clusterrole %q", r.Name)
		}
		out[r.Name] = r
	}
	return out
}

func TestPolicyContainsRequiredObjects(t *testing.T) {
	roles := clusterRolesByName(t)
	for _, name := range []string{
		"cluster-admin", "admin", "edit", "view",
		"system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view",
		"system:basic-user", "system:discovery", "system:public-info-viewer", "system:monitoring",
		"system:node", "system:node-proxier", "system:kube-scheduler", "system:volume-scheduler",
		"system:kube-controller-manager", "system:node-bootstrapper", "system:auth-delegator",
		"system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
		"system:certificates.k8s.io:kube-apiserver-client-approver",
		"system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
		"system:certificates.k8s.io:kubelet-serving-approver",
		"system:certificates.k8s.io:legacy-unknown-approver",
		"system:kubelet-api-admin", "system:service-account-issuer-discovery",
	} {
		if _, ok := roles[name]; !ok {
			t.Errorf("missing clusterrole %q", name)
		}
	}
	if _, ok := roles["system:heapster"]; ok {
		t.Error("system:heapster should not be part of the k1s policy")
	}

	controllers := []string{
		"node-controller", "replicaset-controller", "replication-controller", "deployment-controller", "daemon-set-controller",
		"statefulset-controller", "job-controller", "cronjob-controller", "endpoint-controller",
		"endpointslice-controller", "namespace-controller", "generic-garbage-collector",
		"service-account-controller", "root-ca-cert-publisher", "pod-garbage-collector",
		"disruption-controller", "resourcequota-controller", "clusterrole-aggregation-controller",
		"ttl-after-finished-controller", "service-lb-controller", "endpointslicemirroring-controller",
		"certificate-controller", "horizontal-pod-autoscaler",
		"persistent-volume-binder", "pv-protection-controller", "pvc-protection-controller", "ephemeral-volume-controller",
	}
	if got := bootstrappolicy.ControllerNames(); len(got) != len(controllers) {
		t.Errorf("ControllerNames() = %v, want the %d controllers k1s runs", got, len(controllers))
	}
	bindings := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range bootstrappolicy.AllClusterRoleBindings() {
		if _, dup := bindings[b.Name]; dup {
			t.Fatalf("duplicate clusterrolebinding %q", b.Name)
		}
		bindings[b.Name] = b
	}
	for _, c := range controllers {
		name := "system:controller:" + c
		if _, ok := roles[name]; !ok {
			t.Errorf("missing controller role %q", name)
		}
		b, ok := bindings[name]
		want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: c}
		if !ok || len(b.Subjects) != 1 || b.Subjects[0] != want {
			t.Errorf("controller binding %q = %+v, want subject %+v", name, b.Subjects, want)
		}
	}

	wantSubjects := map[string][]string{
		"cluster-admin":                  {"Group/system:masters"},
		"system:discovery":               {"Group/system:authenticated"},
		"system:basic-user":              {"Group/system:authenticated"},
		"system:public-info-viewer":      {"Group/system:authenticated", "Group/system:unauthenticated"},
		"system:kube-scheduler":          {"User/system:kube-scheduler", "ServiceAccount/kube-scheduler"},
		"system:volume-scheduler":        {"User/system:kube-scheduler", "ServiceAccount/kube-scheduler"},
		"system:kube-controller-manager": {"User/system:kube-controller-manager"},
		"system:node-proxier":            {"User/system:kube-proxy"},
		"system:monitoring":              {"Group/system:monitoring"},
		"system:node":                    nil,
		"k1s:local-path-provisioner":     {"Group/system:nodes"},
	}
	for name, want := range wantSubjects {
		var got []string
		for _, s := range bindings[name].Subjects {
			got = append(got, s.Kind+"/"+s.Name)
		}
		if len(got) != len(want) {
			t.Errorf("binding %q subjects = %v, want %v", name, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("binding %q subjects = %v, want %v", name, got, want)
			}
		}
	}
}

func TestPolicyMetadataAndReferences(t *testing.T) {
	roles := clusterRolesByName(t)
	checkMeta := func(kind, name string, labels, annotations map[string]string) {
		if labels["kubernetes.io/bootstrapping"] != "rbac-defaults" {
			t.Errorf("%s %q: labels %v lack kubernetes.io/bootstrapping=rbac-defaults", kind, name, labels)
		}
		if annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
			t.Errorf("%s %q: annotations %v lack autoupdate=true", kind, name, annotations)
		}
	}
	for _, r := range roles {
		checkMeta("clusterrole", r.Name, r.Labels, r.Annotations)
		for _, rule := range r.Rules {
			if len(rule.Verbs) == 0 || (len(rule.Resources) == 0) == (len(rule.NonResourceURLs) == 0) {
				t.Errorf("clusterrole %q has a malformed rule %+v", r.Name, rule)
			}
		}
	}
	for _, b := range bootstrappolicy.AllClusterRoleBindings() {
		checkMeta("clusterrolebinding", b.Name, b.Labels, b.Annotations)
		if _, ok := roles[b.RoleRef.Name]; !ok || b.RoleRef.Kind != "ClusterRole" || b.RoleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("clusterrolebinding %q references unknown %+v", b.Name, b.RoleRef)
		}
	}
	nsRoles := bootstrappolicy.NamespaceRoles()
	for ns, list := range nsRoles {
		for _, r := range list {
			checkMeta("role", r.Name, r.Labels, r.Annotations)
			if r.Namespace != ns {
				t.Errorf("role %q listed under %q has namespace %q", r.Name, ns, r.Namespace)
			}
		}
	}
	for ns, list := range bootstrappolicy.NamespaceRoleBindings() {
		for _, b := range list {
			checkMeta("rolebinding", b.Name, b.Labels, b.Annotations)
			found := false
			for _, r := range nsRoles[ns] {
				found = found || (r.Name == b.RoleRef.Name && b.RoleRef.Kind == "Role")
			}
			if !found || b.Namespace != ns {
				t.Errorf("rolebinding %s/%s references unknown %+v", b.Namespace, b.Name, b.RoleRef)
			}
		}
	}
}

func TestAggregatedRoles(t *testing.T) {
	roles := clusterRolesByName(t)
	admin, edit, view := roles["admin"], roles["edit"], roles["view"]
	for _, r := range []rbacv1.ClusterRole{admin, edit, view} {
		if r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 {
			t.Fatalf("%s: want one aggregation selector, got %+v", r.Name, r.AggregationRule)
		}
	}
	if edit.Labels[bootstrappolicy.AggregateToAdminLabel] != "true" || view.Labels[bootstrappolicy.AggregateToEditLabel] != "true" {
		t.Error("edit must aggregate into admin and view into edit")
	}
	covers := func(owner, servant []rbacv1.PolicyRule) bool { ok, _ := rbac.Covers(owner, servant); return ok }

	if !covers(view.Rules, roles["system:aggregate-to-view"].Rules) || !covers(roles["system:aggregate-to-view"].Rules, view.Rules) {
		t.Error("view rules differ from system:aggregate-to-view")
	}
	if !covers(edit.Rules, view.Rules) || !covers(edit.Rules, roles["system:aggregate-to-edit"].Rules) {
		t.Error("edit does not include view and system:aggregate-to-edit")
	}
	if !covers(admin.Rules, edit.Rules) || !covers(admin.Rules, roles["system:aggregate-to-admin"].Rules) {
		t.Error("admin does not include edit and system:aggregate-to-admin")
	}
	if covers(edit.Rules, admin.Rules) {
		t.Error("edit must not hold admin's role management")
	}

	// AggregatedRules recomputes admin from the set; it must be stable.
	all := bootstrappolicy.AllClusterRoles()
	again, err := bootstrappolicy.AggregatedRules(&admin, all)
	if err != nil || len(again) != len(admin.Rules) {
		t.Errorf("AggregatedRules(admin) = %d rules, err %v; want %d", len(again), err, len(admin.Rules))
	}
	if r, _ := bootstrappolicy.AggregatedRules(&view, nil); len(r) != 0 {
		t.Errorf("AggregatedRules with no candidates = %v, want none", r)
	}
}

// policyAuthorizer is an RBAC authorizer over the whole default policy.
func policyAuthorizer(t *testing.T) *rbac.Authorizer {
	t.Helper()
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	roles, rbs, crs, crbs := idx(), idx(), idx(), idx()
	for _, r := range bootstrappolicy.AllClusterRoles() {
		_ = crs.Add(r.DeepCopy())
	}
	for _, b := range bootstrappolicy.AllClusterRoleBindings() {
		_ = crbs.Add(b.DeepCopy())
	}
	for _, list := range bootstrappolicy.NamespaceRoles() {
		for _, r := range list {
			_ = roles.Add(r.DeepCopy())
		}
	}
	for _, list := range bootstrappolicy.NamespaceRoleBindings() {
		for _, b := range list {
			_ = rbs.Add(b.DeepCopy())
		}
	}
	// A user bound to admin, edit and view in namespace "app".
	for _, name := range []string{"admin", "edit", "view"} {
		_ = rbs.Add(&rbacv1.RoleBinding{
			ObjectMeta: metaNS("app", name+"-binding"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name + "-user"}},
		})
	}
	return rbac.New(rbaclisters.NewRoleLister(roles), rbaclisters.NewRoleBindingLister(rbs),
		rbaclisters.NewClusterRoleLister(crs), rbaclisters.NewClusterRoleBindingLister(crbs))
}

func TestDefaultPolicyDecisions(t *testing.T) {
	a := policyAuthorizer(t)
	authn := func(name string, groups ...string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: append(groups, user.AllAuthenticated)}
	}
	sa := func(ns, name string) user.Info {
		return authn("system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	anon := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	res := func(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
			Namespace: ns, Name: name, ResourceRequest: true}
	}
	url := func(u user.Info, verb, path string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
	}
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"view gets pods", res(authn("view-user"), "get", "", "pods", "", "app", "p"), true},
		{"view reads pod logs", res(authn("view-user"), "get", "", "pods", "log", "app", "p"), true},
		{"view cannot get secrets", res(authn("view-user"), "get", "", "secrets", "", "app", "s"), false},
		{"view cannot exec", res(authn("view-user"), "create", "", "pods", "exec", "app", "p"), false},
		{"view only in its namespace", res(authn("view-user"), "get", "", "pods", "", "other", "p"), false},
		{"edit creates deployments", res(authn("edit-user"), "create", "apps", "deployments", "", "app", ""), true},
		{"edit gets secrets", res(authn("edit-user"), "get", "", "secrets", "", "app", "s"), true},
		{"edit reads through view", res(authn("edit-user"), "list", "batch", "jobs", "", "app", ""), true},
		{"edit cannot create rolebindings", res(authn("edit-user"), "create", rbacv1.GroupName, "rolebindings", "", "app", ""), false},
		{"edit cannot write resourcequotas", res(authn("edit-user"), "update", "", "resourcequotas", "", "app", "q"), false},
		{"admin creates rolebindings", res(authn("admin-user"), "create", rbacv1.GroupName, "rolebindings", "", "app", ""), true},
		{"admin scales deployments", res(authn("admin-user"), "update", "apps", "deployments", "scale", "app", "d"), true},
		{"admin cannot touch nodes", res(authn("admin-user"), "get", "", "nodes", "", "", "n"), false},
		{"masters do anything", res(&user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}, "delete", "x.io", "widgets", "", "", "w"), true},
		{"masters reach any URL", url(&user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}, "get", "/debug/pprof"), true},
		{"authenticated discovers APIs", url(authn("someone"), "get", "/apis/apps/v1"), true},
		{"authenticated self review", res(authn("someone"), "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true},
		{"authenticated cannot list pods", res(authn("someone"), "list", "", "pods", "", "", ""), false},
		{"anonymous reads healthz", url(anon, "get", "/healthz"), true},
		{"anonymous reads version", url(anon, "get", "/version"), true},
		{"anonymous cannot discover APIs", url(anon, "get", "/api"), false},
		{"monitoring reads metrics", url(authn("prom", user.MonitoringGroup), "get", "/metrics"), true},
		{"scheduler binds pods", res(authn(user.KubeScheduler), "create", "", "pods", "binding", "app", "p"), true},
		{"scheduler holds its lease in kube-system", res(authn(user.KubeScheduler), "update", "coordination.k8s.io", "leases", "", "kube-system", "kube-scheduler"), true},
		{"scheduler cannot update another lease", res(authn(user.KubeScheduler), "update", "coordination.k8s.io", "leases", "", "default", "other"), false},
		{"scheduler service account binds pods", res(sa("kube-system", "kube-scheduler"), "create", "", "pods", "binding", "app", "p"), true},
		{"scheduler service account preempts pods", res(sa("kube-system", "kube-scheduler"), "delete", "", "pods", "", "app", "p"), true},
		{"scheduler service account patches pod status", res(sa("kube-system", "kube-scheduler"), "patch", "", "pods", "status", "app", "p"), true},
		{"scheduler service account updates claims (volume scheduler)", res(sa("kube-system", "kube-scheduler"), "update", "", "persistentvolumeclaims", "", "app", "c"), true},
		{"scheduler service account cannot read secrets", res(sa("kube-system", "kube-scheduler"), "get", "", "secrets", "", "app", "s"), false},
		{"a kube-scheduler service account elsewhere binds nothing", res(sa("app", "kube-scheduler"), "create", "", "pods", "binding", "app", "p"), false},
		{"controller manager informers", res(authn(user.KubeControllerManager), "watch", "apps", "deployments", "", "", ""), true},
		{"replicaset controller creates pods", res(sa("kube-system", "replicaset-controller"), "create", "", "pods", "", "app", ""), true},
		{"replicaset controller cannot read secrets", res(sa("kube-system", "replicaset-controller"), "get", "", "secrets", "", "app", "s"), false},
		{"replication controller writes replication controller status", res(sa("kube-system", "replication-controller"), "update", "", "replicationcontrollers", "status", "app", "rc"), true},
		{"replication controller adopts pods", res(sa("kube-system", "replication-controller"), "patch", "", "pods", "", "app", "p"), true},
		{"replication controller cannot touch replica sets", res(sa("kube-system", "replication-controller"), "update", "apps", "replicasets", "", "app", "rs"), false},
		{"same SA name elsewhere is not the controller", res(sa("app", "replicaset-controller"), "create", "", "pods", "", "app", ""), false},
		{"garbage collector deletes anything", res(sa("kube-system", "generic-garbage-collector"), "delete", "example.com", "things", "", "app", "t"), true},
		{"aggregation controller escalates clusterroles", res(sa("kube-system", "clusterrole-aggregation-controller"), "escalate", rbacv1.GroupName, "clusterroles", "", "", "admin"), true},
		{"service accounts read issuer discovery", url(sa("app", "default"), "get", "/openid/v1/jwks"), true},
		{"nodes are not authorized by RBAC", res(authn("system:node:n1", user.NodesGroup), "get", "", "pods", "", "app", "p"), false},
		{"kube-proxy lists endpointslices", res(authn(user.KubeProxy), "list", "discovery.k8s.io", "endpointslices", "", "", ""), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if (d == authorizer.DecisionAllow) != tc.allow {
				t.Fatalf("decision %v (reason %q), want allow=%v", d, reason, tc.allow)
			}
		})
	}
}
