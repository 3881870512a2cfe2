package bootstrappolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API groups named by the default policy.
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	extensionsGroup     = "extensions"
	networkingGroup     = "networking.k8s.io"
	nodeGroup           = "node.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = rbacv1.GroupName
	resourceGroup       = "resource.k8s.io"
	storageGroup        = "storage.k8s.io"
)

// Verb sets used throughout the policy.
var (
	read       = []string{"get", "list", "watch"}
	write      = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite  = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	readUpdate = []string{"get", "list", "watch", "update", "patch"}
)

// BootstrapLabelKey and BootstrapLabelValue mark every default object.
const (
	BootstrapLabelKey   = "kubernetes.io/bootstrapping"
	BootstrapLabelValue = "rbac-defaults"
)

// ruleBuilder assembles a PolicyRule; every list is sorted and de-duplicated
// so the objects compare equal to upstream's.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func newRule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: verbs}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

func (b *ruleBuilder) resources(r ...string) *ruleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

func (b *ruleBuilder) names(n ...string) *ruleBuilder {
	b.r.ResourceNames = append(b.r.ResourceNames, n...)
	return b
}

func (b *ruleBuilder) urls(u ...string) *ruleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

func (b *ruleBuilder) rule() rbacv1.PolicyRule {
	norm := func(s []string) []string {
		if s == nil {
			return nil
		}
		s = slices.Clone(s)
		slices.Sort(s)
		return slices.Compact(s)
	}
	return rbacv1.PolicyRule{
		Verbs:           norm(b.r.Verbs),
		APIGroups:       norm(b.r.APIGroups),
		Resources:       norm(b.r.Resources),
		ResourceNames:   norm(b.r.ResourceNames),
		NonResourceURLs: norm(b.r.NonResourceURLs),
	}
}

// eventsRule lets a component record events through either events API.
func eventsRule() rbacv1.PolicyRule {
	return newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
}

// defaultMeta returns object metadata carrying the bootstrap label and the
// autoupdate annotation, plus any extra labels.
func defaultMeta(namespace, name string, extraLabels map[string]string) metav1.ObjectMeta {
	labels := map[string]string{BootstrapLabelKey: BootstrapLabelValue}
	for k, v := range extraLabels {
		labels[k] = v
	}
	return metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        name,
		Labels:      labels,
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
	}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: defaultMeta("", name, nil), Rules: rules}
}

func groupSubjects(names ...string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return out
}

func userSubjects(names ...string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return out
}

func saSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterBinding binds the ClusterRole of the same name to subjects.
func clusterBinding(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: defaultMeta("", name, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}
}
