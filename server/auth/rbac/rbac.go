package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/klog/v2"
)

// RoleLister gives access to Roles by namespace. The client-go
// rbaclisters.RoleLister satisfies it.
type RoleLister interface {
	Roles(namespace string) rbaclisters.RoleNamespaceLister
}

// RoleBindingLister gives access to RoleBindings by namespace. The client-go
// rbaclisters.RoleBindingLister satisfies it.
type RoleBindingLister interface {
	RoleBindings(namespace string) rbaclisters.RoleBindingNamespaceLister
}

// ClusterRoleGetter fetches a ClusterRole by name. The client-go
// rbaclisters.ClusterRoleLister satisfies it.
type ClusterRoleGetter interface {
	Get(name string) (*rbacv1.ClusterRole, error)
}

// ClusterRoleBindingLister lists ClusterRoleBindings. The client-go
// rbaclisters.ClusterRoleBindingLister satisfies it.
type ClusterRoleBindingLister interface {
	List(selector labels.Selector) ([]*rbacv1.ClusterRoleBinding, error)
}

// PolicyRuleResolver resolves the RBAC rules that apply to a user, and the
// rules a role reference points at. *Authorizer implements it; the escalation
// checks consume it.
type PolicyRuleResolver interface {
	// PolicyRulesFor returns every rule granted to u by ClusterRoleBindings
	// and, when namespace is not empty, by RoleBindings in namespace. Rules
	// that could be resolved are returned even when err is not nil: rules
	// only ever add permissions, so a partial list is still safe to use.
	PolicyRulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error)
	// RoleRefRules returns the rules of the Role (looked up in
	// bindingNamespace) or ClusterRole that ref names.
	RoleRefRules(ctx context.Context, ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error)
}

// Authorizer is the RBAC authorizer. It answers Allow when a binding that
// applies to the user grants a matching rule, and NoOpinion otherwise; it
// never denies. It is safe for concurrent use: it only reads through listers.
type Authorizer struct {
	roles               RoleLister
	roleBindings        RoleBindingLister
	clusterRoles        ClusterRoleGetter
	clusterRoleBindings ClusterRoleBindingLister
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
	_ PolicyRuleResolver      = (*Authorizer)(nil)
)

// New returns an RBAC authorizer reading through the given listers, normally
// those of a started and synced informer factory:
//
//	f := informers.NewSharedInformerFactory(client, 0)
//	a := rbac.New(f.Rbac().V1().Roles().Lister(), f.Rbac().V1().RoleBindings().Lister(),
//		f.Rbac().V1().ClusterRoles().Lister(), f.Rbac().V1().ClusterRoleBindings().Lister())
//
// Until the caches are synced it simply finds no bindings.
func New(roles RoleLister, roleBindings RoleBindingLister, clusterRoles ClusterRoleGetter, clusterRoleBindings ClusterRoleBindingLister) *Authorizer {
	return &Authorizer{
		roles:               roles,
		roleBindings:        roleBindings,
		clusterRoles:        clusterRoles,
		clusterRoleBindings: clusterRoleBindings,
	}
}

// Authorize implements authorizer.Authorizer. The reason of an Allow names
// the binding, role and subject that granted it. On NoOpinion the reason
// lists the errors met while resolving bindings, if any; they are not
// returned as an error because a missing role only ever removes permissions.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var (
		allowedBy string
		errs      []error
	)
	a.visitRules(ctx, attrs.GetUser(), attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		if RuleAllows(attrs, rule) {
			allowedBy = source.String()
			return false
		}
		return true
	})
	if allowedBy != "" {
		return authorizer.DecisionAllow, "RBAC: allowed by " + allowedBy, nil
	}
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() && attrs.GetUser() != nil {
		logger.Info("RBAC: no rule allows the request", "user", attrs.GetUser().GetName(),
			"groups", attrs.GetUser().GetGroups(), "verb", attrs.GetVerb(), "resource", attrs.GetResource(),
			"subresource", attrs.GetSubresource(), "apiGroup", attrs.GetAPIGroup(), "name", attrs.GetName(),
			"namespace", attrs.GetNamespace(), "path", attrs.GetPath())
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, "RBAC: " + errors.Join(errs...).Error(), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer. RBAC has no
// conditions, so this is Authorize wrapped.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer; RBAC never returns a
// conditional decision, so evaluation is unsupported and fails closed.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor implements authorizer.RuleResolver (used by
// SelfSubjectRulesReview). The list is never marked incomplete; resolution
// errors are returned alongside the rules found.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, err := a.PolicyRulesFor(ctx, u, namespace)
	var (
		resourceRules    []authorizer.ResourceRuleInfo
		nonResourceRules []authorizer.NonResourceRuleInfo
	)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return resourceRules, nonResourceRules, false, err
}

// PolicyRulesFor implements PolicyRuleResolver.
func (a *Authorizer) PolicyRulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	a.visitRules(ctx, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		} else {
			rules = append(rules, *rule)
		}
		return true
	})
	return rules, errors.Join(errs...)
}

// RoleRefRules implements PolicyRuleResolver.
func (a *Authorizer) RoleRefRules(_ context.Context, ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		if bindingNamespace == "" {
			return nil, fmt.Errorf("role %q: a Role can only be referenced from a namespaced binding", ref.Name)
		}
		role, err := a.roles.Roles(bindingNamespace).Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "ClusterRole":
		role, err := a.clusterRoles.Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// visitor receives each rule granted to a user together with the binding
// that granted it, or an error met while resolving. Returning false stops
// the walk.
type visitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// visitRules walks the ClusterRoleBindings, then (for a namespaced request)
// the RoleBindings of namespace, calling visit for every rule of every
// binding that applies to u.
func (a *Authorizer) visitRules(ctx context.Context, u user.Info, namespace string, visit visitor) {
	if u == nil {
		return
	}
	crbs, err := a.clusterRoleBindings.List(labels.Everything())
	if err != nil {
		if !visit(nil, nil, fmt.Errorf("list clusterrolebindings: %w", err)) {
			return
		}
	}
	for _, b := range crbs {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := a.RoleRefRules(ctx, b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := bindingSource{kind: "ClusterRoleBinding", name: b.Name, ref: b.RoleRef, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}

	if namespace == "" {
		return
	}
	rbs, err := a.roleBindings.RoleBindings(namespace).List(labels.Everything())
	if err != nil {
		visit(nil, nil, fmt.Errorf("list rolebindings in namespace %q: %w", namespace, err))
		return
	}
	for _, b := range rbs {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := a.RoleRefRules(ctx, b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := bindingSource{kind: "RoleBinding", name: b.Name + "/" + namespace, namespace: namespace, ref: b.RoleRef, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}
}

// bindingSource describes the binding that granted a rule, for the reason
// string of an Allow decision.
type bindingSource struct {
	kind      string // ClusterRoleBinding or RoleBinding
	name      string // name, or name/namespace for a RoleBinding
	namespace string // namespace of a RoleBinding
	ref       rbacv1.RoleRef
	subject   *rbacv1.Subject
}

func (s bindingSource) String() string {
	subj := fmt.Sprintf("%s %q", s.subject.Kind, s.subject.Name)
	if s.subject.Kind == rbacv1.ServiceAccountKind {
		ns := s.subject.Namespace
		if ns == "" {
			ns = s.namespace
		}
		subj = fmt.Sprintf("%s %q", s.subject.Kind, s.subject.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q of %s %q to %s", s.kind, s.name, s.ref.Kind, s.ref.Name, subj)
}

// appliesTo returns the index of the first subject that matches u.
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) (int, bool) {
	for i := range subjects {
		if subjectMatches(u, &subjects[i], bindingNamespace) {
			return i, true
		}
	}
	return 0, false
}

// subjectMatches reports whether subject names u. A ServiceAccount subject
// without a namespace means the binding's own namespace; service-account
// groups (system:serviceaccounts, system:serviceaccounts:NS) are ordinary
// Group subjects matched against the groups the authenticator set.
func subjectMatches(u user.Info, s *rbacv1.Subject, bindingNamespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		for _, g := range u.GetGroups() {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return false
		}
		return serviceaccount.MatchesUsername(ns, s.Name, u.GetName())
	default:
		return false
	}
}
