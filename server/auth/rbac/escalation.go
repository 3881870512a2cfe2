package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// fullAuthority is what a user must hold to set an aggregationRule: an
// aggregated ClusterRole can gather any permission.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// ConfirmNoEscalation returns nil when the rules u already holds in namespace
// (cluster-wide rules plus, for a non-empty namespace, that namespace's
// RoleBinding rules) cover rules. Otherwise it returns an error listing the
// permissions u lacks. Resolution errors do not fail the check by themselves
// (rules only add permissions) but are appended to the message when the
// check fails.
func ConfirmNoEscalation(ctx context.Context, resolver PolicyRuleResolver, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	if u == nil {
		return errors.New("no user to check for privilege escalation")
	}
	held, resolveErr := resolver.PolicyRulesFor(ctx, u, namespace)
	if resolveErr != nil {
		klog.FromContext(ctx).V(1).Info("Partial rule resolution during escalation check", "user", u.GetName(), "err", resolveErr)
	}
	ok, missing := Covers(held, rules)
	if ok {
		return nil
	}
	var lines []string
	for _, r := range CompactRules(missing) {
		lines = append(lines, DescribeRule(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", resolveErr)
	}
	return errors.New(msg)
}

// EscalationAllowed reports whether u is in system:masters. The apiserver
// uses that group for its own loopback client, so its members may always
// write any role or binding.
func EscalationAllowed(u user.Info) bool {
	return u != nil && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

// EscalationChecker runs the checks the RBAC registry makes before storing a
// role or binding on behalf of a user. Safe for concurrent use.
type EscalationChecker struct {
	authz    authorizer.UnconditionalAuthorizer
	resolver PolicyRuleResolver
}

// NewEscalationChecker returns a checker. authz is the apiserver's complete
// authorizer chain, used to ask whether a user holds the "escalate" verb on
// roles/clusterroles or the "bind" verb on the referenced role; it may be
// nil, in which case those verbs are never granted. resolver (normally the
// RBAC *Authorizer) supplies the rules a user holds.
func NewEscalationChecker(authz authorizer.UnconditionalAuthorizer, resolver PolicyRuleResolver) *EscalationChecker {
	return &EscalationChecker{authz: authz, resolver: resolver}
}

var (
	rolesResource               = rbacv1.Resource("roles")
	clusterRolesResource        = rbacv1.Resource("clusterroles")
	roleBindingsResource        = rbacv1.Resource("rolebindings")
	clusterRoleBindingsResource = rbacv1.Resource("clusterrolebindings")
)

// CheckRole decides whether u may store role (a create when old is nil, an
// update otherwise). It returns nil when allowed and a Forbidden status error
// otherwise. Allowed when u is in system:masters, holds "escalate" on that
// role, the update only touches finalizers, owner references or managed
// fields, or u already holds every rule of role in its namespace.
func (c *EscalationChecker) CheckRole(ctx context.Context, u user.Info, role, old *rbacv1.Role) error {
	if EscalationAllowed(u) || c.mayEscalate(ctx, u, rolesResource, role.Namespace, role.Name) {
		return nil
	}
	if old != nil && onlyGCFieldsChanged(&role.ObjectMeta, &old.ObjectMeta, func() bool {
		return equality.Semantic.DeepEqual(role.Rules, old.Rules)
	}) {
		return nil
	}
	if err := ConfirmNoEscalation(ctx, c.resolver, u, role.Namespace, role.Rules); err != nil {
		return apierrors.NewForbidden(rolesResource, role.Name, err)
	}
	return nil
}

// CheckClusterRole is CheckRole for a ClusterRole, checked against u's
// cluster-wide rules. In addition, setting, changing or removing an
// aggregationRule requires full authority ("*" on everything), as an
// aggregated role can collect any permission.
func (c *EscalationChecker) CheckClusterRole(ctx context.Context, u user.Info, role, old *rbacv1.ClusterRole) error {
	if EscalationAllowed(u) || c.mayEscalate(ctx, u, clusterRolesResource, "", role.Name) {
		return nil
	}
	if old != nil && onlyGCFieldsChanged(&role.ObjectMeta, &old.ObjectMeta, func() bool {
		return equality.Semantic.DeepEqual(role.Rules, old.Rules) &&
			equality.Semantic.DeepEqual(role.AggregationRule, old.AggregationRule)
	}) {
		return nil
	}
	if err := ConfirmNoEscalation(ctx, c.resolver, u, "", role.Rules); err != nil {
		return apierrors.NewForbidden(clusterRolesResource, role.Name, err)
	}
	if hasAggregation(role) || (old != nil && hasAggregation(old)) {
		if err := ConfirmNoEscalation(ctx, c.resolver, u, "", fullAuthority); err != nil {
			return apierrors.NewForbidden(clusterRolesResource, role.Name,
				errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// CheckRoleBinding decides whether u may store binding (create when old is
// nil, update otherwise). Allowed when u is in system:masters, the update
// only touches finalizers, owner references or managed fields, u holds
// "bind" on the referenced role in the binding's namespace, or u already
// holds every rule of the referenced role in that namespace. Errors resolving
// the role are returned as they are (a missing role is NotFound).
func (c *EscalationChecker) CheckRoleBinding(ctx context.Context, u user.Info, binding, old *rbacv1.RoleBinding) error {
	if EscalationAllowed(u) {
		return nil
	}
	if old != nil && onlyGCFieldsChanged(&binding.ObjectMeta, &old.ObjectMeta, func() bool {
		return binding.RoleRef == old.RoleRef && equality.Semantic.DeepEqual(binding.Subjects, old.Subjects)
	}) {
		return nil
	}
	return c.checkBinding(ctx, u, roleBindingsResource, binding.Name, binding.Namespace, binding.RoleRef)
}

// CheckClusterRoleBinding is CheckRoleBinding for a ClusterRoleBinding: the
// "bind" check is cluster-wide and the held rules are u's cluster-wide ones.
func (c *EscalationChecker) CheckClusterRoleBinding(ctx context.Context, u user.Info, binding, old *rbacv1.ClusterRoleBinding) error {
	if EscalationAllowed(u) {
		return nil
	}
	if old != nil && onlyGCFieldsChanged(&binding.ObjectMeta, &old.ObjectMeta, func() bool {
		return binding.RoleRef == old.RoleRef && equality.Semantic.DeepEqual(binding.Subjects, old.Subjects)
	}) {
		return nil
	}
	return c.checkBinding(ctx, u, clusterRoleBindingsResource, binding.Name, "", binding.RoleRef)
}

func (c *EscalationChecker) checkBinding(ctx context.Context, u user.Info, gr schema.GroupResource, name, namespace string, ref rbacv1.RoleRef) error {
	if c.mayBind(ctx, u, ref, namespace) {
		return nil
	}
	rules, err := c.resolver.RoleRefRules(ctx, ref, namespace)
	if err != nil {
		return err
	}
	if err := ConfirmNoEscalation(ctx, c.resolver, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// mayEscalate asks the authorizer whether u holds the "escalate" verb on the
// named role or clusterrole.
func (c *EscalationChecker) mayEscalate(ctx context.Context, u user.Info, gr schema.GroupResource, namespace, name string) bool {
	return c.allowed(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            "escalate",
		APIGroup:        gr.Group,
		APIVersion:      "*",
		Resource:        gr.Resource,
		Name:            name,
		Namespace:       namespace,
		ResourceRequest: true,
	})
}

// mayBind asks the authorizer whether u holds the "bind" verb on the role
// ref names, in the namespace of the binding ("" for a ClusterRoleBinding).
// Checking the binding's namespace lets an admin delegate binding a
// ClusterRole within one namespace only.
func (c *EscalationChecker) mayBind(ctx context.Context, u user.Info, ref rbacv1.RoleRef, bindingNamespace string) bool {
	var resource string
	switch ref.Kind {
	case "ClusterRole":
		resource = "clusterroles"
	case "Role":
		resource = "roles"
	default:
		return false
	}
	return c.allowed(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            "bind",
		APIGroup:        ref.APIGroup,
		APIVersion:      "*",
		Resource:        resource,
		Name:            ref.Name,
		Namespace:       bindingNamespace,
		ResourceRequest: true,
	})
}

func (c *EscalationChecker) allowed(ctx context.Context, attrs authorizer.AttributesRecord) bool {
	if c.authz == nil || attrs.User == nil {
		return false
	}
	decision, _, err := c.authz.Authorize(ctx, attrs)
	if err != nil && decision != authorizer.DecisionAllow {
		klog.FromContext(ctx).Error(err, "Authorizer failed during escalation check",
			"user", attrs.User.GetName(), "verb", attrs.Verb, "resource", attrs.Resource, "name", attrs.Name, "namespace", attrs.Namespace)
	}
	return decision == authorizer.DecisionAllow
}

func hasAggregation(r *rbacv1.ClusterRole) bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// onlyGCFieldsChanged reports whether an update changed nothing but the
// fields the garbage collector and server-side apply maintain (finalizers,
// owner references, managed fields, self link). bodyEqual compares the
// type-specific fields.
func onlyGCFieldsChanged(newMeta, oldMeta *metav1.ObjectMeta, bodyEqual func() bool) bool {
	a := newMeta.DeepCopy()
	b := oldMeta.DeepCopy()
	for _, m := range []*metav1.ObjectMeta{a, b} {
		m.Finalizers = nil
		m.OwnerReferences = nil
		m.ManagedFields = nil
		m.SelfLink = ""
	}
	return equality.Semantic.DeepEqual(a, b) && bodyEqual()
}
