package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDefaultSubjects(t *testing.T) {
	rb := &rbacv1.RoleBinding{
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, Name: "alice"},
			{Kind: rbacv1.GroupKind, Name: "devs"},
			{Kind: rbacv1.ServiceAccountKind, Name: "builder"},
			{Kind: rbacv1.UserKind, Name: "bob", APIGroup: "example.com"},
			{Kind: "Robot", Name: "r2"},
		},
	}
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	s.Default(rb)
	if rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef.apiGroup = %q", rb.RoleRef.APIGroup)
	}
	want := []string{rbacv1.GroupName, rbacv1.GroupName, "", "example.com", ""}
	for i, w := range want {
		if got := rb.Subjects[i].APIGroup; got != w {
			t.Errorf("subjects[%d].apiGroup = %q, want %q", i, got, w)
		}
	}

	crbList := &rbacv1.ClusterRoleBindingList{Items: []rbacv1.ClusterRoleBinding{{
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "g"}},
	}}}
	s.Default(crbList)
	if got := crbList.Items[0].RoleRef.APIGroup; got != rbacv1.GroupName {
		t.Errorf("list item roleRef.apiGroup = %q", got)
	}
	if got := crbList.Items[0].Subjects[0].APIGroup; got != rbacv1.GroupName {
		t.Errorf("list item subject apiGroup = %q", got)
	}
}

func TestValidateRole(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "reader", Namespace: "default"}
	tests := []struct {
		name string
		role *rbacv1.Role
		want []errKey
	}{
		{
			name: "valid",
			role: &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		},
		{
			name: "colon in name is fine",
			role: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "system:reader", Namespace: "default"}},
		},
		{
			name: "slash in name",
			role: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "default"}},
			want: []errKey{e(field.ErrorTypeInvalid, "metadata.name")},
		},
		{
			name: "missing namespace",
			role: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}},
			want: []errKey{e(field.ErrorTypeRequired, "metadata.namespace")},
		},
		{
			name: "no verbs, groups, resources",
			role: &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{}}},
			want: []errKey{
				e(field.ErrorTypeRequired, "rules[0].verbs"),
				e(field.ErrorTypeRequired, "rules[0].apiGroups"),
				e(field.ErrorTypeRequired, "rules[0].resources"),
			},
		},
		{
			name: "non-resource URL in namespaced role",
			role: &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}},
			want: []errKey{e(field.ErrorTypeInvalid, "rules[0].nonResourceURLs")},
		},
		{
			name: "bad finalizer",
			role: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default", Finalizers: []string{"mine", "example.com/mine", "orphan"}}},
			want: []errKey{e(field.ErrorTypeInvalid, "metadata.finalizers[0]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidateRole(tc.role), tc.want...)
		})
	}
}

func TestValidateClusterRole(t *testing.T) {
	tests := []struct {
		name string
		role *rbacv1.ClusterRole
		want []errKey
	}{
		{
			name: "non-resource URLs",
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "health"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}},
		},
		{
			name: "mixed non-resource and resource",
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mixed"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, ResourceNames: []string{"x"}}}},
			want: []errKey{e(field.ErrorTypeInvalid, "rules[0].nonResourceURLs")},
		},
		{
			name: "namespace set on cluster-scoped",
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}},
			want: []errKey{e(field.ErrorTypeForbidden, "metadata.namespace")},
		},
		{
			name: "empty aggregation rule",
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{}},
			want: []errKey{e(field.ErrorTypeRequired, "aggregationRule.clusterRoleSelectors")},
		},
		{
			name: "bad aggregation selector value",
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "not valid!"}}},
			}},
			want: []errKey{
				e(field.ErrorTypeInvalid, "aggregationRule.clusterRoleSelectors[0].matchLabels"),
				e(field.ErrorTypeInvalid, "aggregationRule.clusterRoleSelectors[0]"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidateClusterRole(tc.role), tc.want...)
		})
	}
}

func TestValidateClusterRoleUpdateToleratesStoredBadSelector(t *testing.T) {
	expr := func(v string) []metav1.LabelSelector {
		return []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{v}}}}}
	}
	old := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg", ResourceVersion: "1"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: expr("not valid!")}}
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"x": "y"}
	expectErrs(t, ValidateClusterRoleUpdate(upd, old))
	expectErrs(t, ValidateClusterRole(upd),
		e(field.ErrorTypeInvalid, "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]"),
		e(field.ErrorTypeInvalid, "aggregationRule.clusterRoleSelectors[0]"))

	good := old.DeepCopy()
	good.AggregationRule.ClusterRoleSelectors = expr("ok")
	bad := good.DeepCopy()
	bad.AggregationRule.ClusterRoleSelectors = expr("still bad!")
	expectErrs(t, ValidateClusterRoleUpdate(bad, good),
		e(field.ErrorTypeInvalid, "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]"),
		e(field.ErrorTypeInvalid, "aggregationRule.clusterRoleSelectors[0]"))
}

func TestValidateRoleBinding(t *testing.T) {
	base := func() *rbacv1.RoleBinding {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "default"},
			RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.ServiceAccountKind, Name: "builder"},
				{Kind: rbacv1.UserKind, Name: "alice"},
			},
		}
		DefaultRoleBinding(rb)
		return rb
	}
	tests := []struct {
		name   string
		mutate func(*rbacv1.RoleBinding)
		want   []errKey
	}{
		{name: "valid", mutate: func(*rbacv1.RoleBinding) {}},
		{name: "clusterrole ref allowed", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Kind = "ClusterRole" }},
		{
			name:   "wrong roleRef group and kind",
			mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.APIGroup = "example.com"; rb.RoleRef.Kind = "Pod" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "roleRef.apiGroup"), e(field.ErrorTypeNotSupported, "roleRef.kind")},
		},
		{
			name:   "missing roleRef name",
			mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "" },
			want:   []errKey{e(field.ErrorTypeRequired, "roleRef.name")},
		},
		{
			name:   "unknown subject kind",
			mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[1].Kind = "Robot" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "subjects[1].kind")},
		},
		{
			name:   "service account with api group",
			mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[0].APIGroup = rbacv1.GroupName },
			want:   []errKey{e(field.ErrorTypeNotSupported, "subjects[0].apiGroup")},
		},
		{
			name:   "user with wrong api group",
			mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[1].APIGroup = "" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "subjects[1].apiGroup")},
		},
		{
			name:   "invalid service account name and missing user name",
			mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[0].Name = "Bad_Name"; rb.Subjects[1].Name = "" },
			want:   []errKey{e(field.ErrorTypeInvalid, "subjects[0].name"), e(field.ErrorTypeRequired, "subjects[1].name")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rb := base()
			tc.mutate(rb)
			expectErrs(t, ValidateRoleBinding(rb), tc.want...)
		})
	}
}

func TestValidateClusterRoleBinding(t *testing.T) {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "crb"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder"}},
	}
	expectErrs(t, ValidateClusterRoleBinding(crb),
		e(field.ErrorTypeNotSupported, "roleRef.kind"),
		e(field.ErrorTypeRequired, "subjects[0].namespace"))
}

func TestBindingRoleRefImmutable(t *testing.T) {
	old := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "default", ResourceVersion: "1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
	}
	same := old.DeepCopy()
	same.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}
	expectErrs(t, ValidateRoleBindingUpdate(same, old))

	changed := old.DeepCopy()
	changed.RoleRef.Name = "writer"
	expectErrs(t, ValidateRoleBindingUpdate(changed, old), e(field.ErrorTypeInvalid, "roleRef"))

	oldC := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "crb", ResourceVersion: "1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}
	newC := oldC.DeepCopy()
	newC.RoleRef.Name = "edit"
	newC.Name = "other"
	expectErrs(t, ValidateClusterRoleBindingUpdate(newC, oldC),
		e(field.ErrorTypeInvalid, "roleRef"),
		e(field.ErrorTypeInvalid, "metadata.name"))
}
