// Package rbac owns role-based access control for the k1s apiserver.
//
// It provides:
//
//   - Authorizer, an authorizer.Authorizer and authorizer.RuleResolver that
//     evaluates Roles, RoleBindings, ClusterRoles and ClusterRoleBindings read
//     through client-go listers. It only ever answers Allow or NoOpinion.
//   - Rule matching (RuleAllows, RulesAllow) and rule coverage (Covers), the
//     building blocks shared by the authorizer and the escalation checks.
//   - The privilege-escalation checks the RBAC registry runs before it stores
//     a Role, ClusterRole, RoleBinding or ClusterRoleBinding
//     (ConfirmNoEscalation and EscalationChecker).
//
// The default roles and bindings live in the bootstrappolicy sub-package.
package rbac
