package clusterroleaggregation

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func role(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func aggregated(name string, selectors []map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := role(name, nil, rules...)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func TestSync(t *testing.T) {
	toView := map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	toEdit := map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}
	tests := []struct {
		name      string
		roles     []*rbacv1.ClusterRole
		key       string
		wantWrite string // "apply" or "update"; empty for none
		wantRules []rbacv1.PolicyRule
	}{
		{
			name: "union of matching roles by name, duplicates once, self skipped",
			roles: []*rbacv1.ClusterRole{
				aggregated("view", []map[string]string{toView}),
				role("b-user", toView, rule("get", "widgets"), rule("list", "pods")),
				role("a-user", toView, rule("list", "pods")),
				role("unrelated", nil, rule("delete", "pods")),
			},
			key:       "view",
			wantWrite: "apply",
			wantRules: []rbacv1.PolicyRule{rule("list", "pods"), rule("get", "widgets")},
		},
		{
			name: "selectors are taken in order",
			roles: []*rbacv1.ClusterRole{
				aggregated("edit", []map[string]string{toEdit, toView}),
				role("a-view", toView, rule("get", "pods")),
				role("z-edit", toEdit, rule("update", "pods")),
			},
			key:       "edit",
			wantWrite: "apply",
			wantRules: []rbacv1.PolicyRule{rule("update", "pods"), rule("get", "pods")},
		},
		{
			name: "stale rules are replaced",
			roles: []*rbacv1.ClusterRole{
				aggregated("view", []map[string]string{toView}, rule("delete", "secrets")),
				role("a", toView, rule("get", "pods")),
			},
			key:       "view",
			wantWrite: "apply",
			wantRules: []rbacv1.PolicyRule{rule("get", "pods")},
		},
		{
			name: "nothing selected empties the rules",
			roles: []*rbacv1.ClusterRole{
				aggregated("view", []map[string]string{toView}, rule("delete", "secrets")),
			},
			key:       "view",
			wantWrite: "update",
			wantRules: nil,
		},
		{
			name: "up to date role is not written",
			roles: []*rbacv1.ClusterRole{
				aggregated("view", []map[string]string{toView}, rule("get", "pods")),
				role("a", toView, rule("get", "pods")),
			},
			key: "view",
		},
		{
			name:  "role without aggregation rule is left alone",
			roles: []*rbacv1.ClusterRole{role("plain", toView, rule("get", "pods"))},
			key:   "plain",
		},
		{
			name: "missing role is ignored",
			key:  "gone",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, r := range tt.roles {
				objs = append(objs, r)
			}
			client := fake.NewClientset(objs...)
			factory := informers.NewSharedInformerFactory(client, 0)
			inf := factory.Rbac().V1().ClusterRoles()
			c, err := New(client.RbacV1(), inf)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tt.roles {
				if err := inf.Informer().GetStore().Add(r); err != nil {
					t.Fatal(err)
				}
			}
			client.ClearActions()
			if err := c.sync(context.Background(), tt.key); err != nil {
				t.Fatalf("sync: %v", err)
			}
			var writes []string
			for _, a := range client.Actions() {
				switch a := a.(type) {
				case clienttesting.PatchAction:
					if a.GetPatchType() != types.ApplyPatchType {
						t.Errorf("patch of type %s, want apply", a.GetPatchType())
					}
					if a.GetName() != tt.key {
						t.Errorf("applied to %q, want %q", a.GetName(), tt.key)
					}
					writes = append(writes, "apply")
				case clienttesting.UpdateAction:
					writes = append(writes, "update")
				default:
					if a.GetVerb() != "get" {
						t.Errorf("unexpected action %v", a)
					}
				}
			}
			var want []string
			if tt.wantWrite != "" {
				want = []string{tt.wantWrite}
			}
			if !cmp.Equal(writes, want) {
				t.Fatalf("writes %v, want %v", writes, want)
			}
			if tt.wantWrite == "" {
				return
			}
			got, err := client.RbacV1().ClusterRoles().Get(context.Background(), tt.key, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantRules, got.Rules, emptyIsNil()); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if got.AggregationRule == nil {
				t.Errorf("aggregation rule lost by the apply")
			}
		})
	}
}

func emptyIsNil() cmp.Option {
	return cmp.FilterValues(func(a, b []rbacv1.PolicyRule) bool { return len(a) == 0 && len(b) == 0 }, cmp.Comparer(func(_, _ []rbacv1.PolicyRule) bool { return true }))
}

func TestEventsEnqueueAggregatedRoles(t *testing.T) {
	toView := map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Rbac().V1().ClusterRoles()
	c, err := New(client.RbacV1(), inf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*rbacv1.ClusterRole{aggregated("view", []map[string]string{toView}), aggregated("edit", nil), role("user", toView)} {
		if err := inf.Informer().GetStore().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	c.enqueueAggregated()
	if got := c.queue.Len(); got != 2 {
		t.Fatalf("queue length %d, want 2 (view and edit)", got)
	}
}
