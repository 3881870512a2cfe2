package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

func role(namespace, name string, rules ...rbacv1.PolicyRule) rbacv1.Role {
	return rbacv1.Role{ObjectMeta: defaultMeta(namespace, name, nil), Rules: rules}
}

func roleBinding(namespace, name, roleName string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{
		ObjectMeta: defaultMeta(namespace, name, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   subjects,
	}
}

func leaderLockingRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "create", "update").groups(coordinationGroup).resources("leases").rule(),
		newRule("get", "list", "watch", "create", "update").groups(coordinationGroup).resources("leasecandidates").rule(),
	}
}

// NamespaceRoles returns the default Roles by namespace.
func NamespaceRoles() map[string][]rbacv1.Role {
	return map[string][]rbacv1.Role{
		"kube-system": {
			// Reading the client-CA configmap that delegated authentication uses.
			role("kube-system", "extension-apiserver-authentication-reader",
				newRule(read...).groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication").rule(),
			),
			role("kube-system", "system::leader-locking-kube-controller-manager", leaderLockingRules()...),
			role("kube-system", "system::leader-locking-kube-scheduler", leaderLockingRules()...),
			// The token-cleaner deletes expired bootstrap tokens, which live
			// in kube-system only: a Role there, as upstream's.
			role("kube-system", ControllerRolePrefix+"token-cleaner",
				newRule("delete", "get", "list", "watch").groups(legacyGroup).resources("secrets").rule(),
				eventsRule(),
			),
		},
	}
}

// NamespaceRoleBindings returns the default RoleBindings by namespace.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	return map[string][]rbacv1.RoleBinding{
		"kube-system": {
			roleBinding("kube-system", "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
				userSubjects(user.KubeControllerManager, user.KubeScheduler)...),
			roleBinding("kube-system", "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
				append(userSubjects(user.KubeControllerManager),
					saSubject("kube-system", "kube-controller-manager"),
					saSubject("kube-system", "leader-election-controller"))...),
			roleBinding("kube-system", "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
				append(userSubjects(user.KubeScheduler), saSubject("kube-system", "kube-scheduler"))...),
			roleBinding("kube-system", ControllerRolePrefix+"token-cleaner", ControllerRolePrefix+"token-cleaner",
				saSubject("kube-system", "token-cleaner")),
		},
	}
}
