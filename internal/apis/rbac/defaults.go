package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds a defaulting function for every kind of the group and
// its List to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&rbacv1.RoleBinding{}, func(obj interface{}) {
		DefaultRoleBinding(obj.(*rbacv1.RoleBinding))
	})
	s.AddTypeDefaultingFunc(&rbacv1.RoleBindingList{}, func(obj interface{}) {
		list := obj.(*rbacv1.RoleBindingList)
		for i := range list.Items {
			DefaultRoleBinding(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBinding{}, func(obj interface{}) {
		DefaultClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding))
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBindingList{}, func(obj interface{}) {
		list := obj.(*rbacv1.ClusterRoleBindingList)
		for i := range list.Items {
			DefaultClusterRoleBinding(&list.Items[i])
		}
	})
	// Roles and ClusterRoles carry no defaulted fields; registering no-op
	// defaulters keeps "every kind has a defaulter" true for callers that
	// enumerate the scheme.
	s.AddTypeDefaultingFunc(&rbacv1.Role{}, func(obj interface{}) { DefaultRole(obj.(*rbacv1.Role)) })
	s.AddTypeDefaultingFunc(&rbacv1.RoleList{}, func(obj interface{}) {
		list := obj.(*rbacv1.RoleList)
		for i := range list.Items {
			DefaultRole(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRole{}, func(obj interface{}) { DefaultClusterRole(obj.(*rbacv1.ClusterRole)) })
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleList{}, func(obj interface{}) {
		list := obj.(*rbacv1.ClusterRoleList)
		for i := range list.Items {
			DefaultClusterRole(&list.Items[i])
		}
	})
	return nil
}

// DefaultRole sets defaults on a Role. Roles have no defaulted fields; the
// function exists so that every kind has a defaulter.
func DefaultRole(obj *rbacv1.Role) {}

// DefaultClusterRole sets defaults on a ClusterRole. ClusterRoles have no
// defaulted fields; the function exists so that every kind has a defaulter.
func DefaultClusterRole(obj *rbacv1.ClusterRole) {}

// DefaultRoleBinding fills roleRef.apiGroup with rbac.authorization.k8s.io
// when empty and defaults the apiGroup of every subject (see DefaultSubject).
func DefaultRoleBinding(obj *rbacv1.RoleBinding) {
	if obj.RoleRef.APIGroup == "" {
		obj.RoleRef.APIGroup = rbacv1.GroupName
	}
	for i := range obj.Subjects {
		DefaultSubject(&obj.Subjects[i])
	}
}

// DefaultClusterRoleBinding fills roleRef.apiGroup with
// rbac.authorization.k8s.io when empty and defaults the apiGroup of every
// subject (see DefaultSubject).
func DefaultClusterRoleBinding(obj *rbacv1.ClusterRoleBinding) {
	if obj.RoleRef.APIGroup == "" {
		obj.RoleRef.APIGroup = rbacv1.GroupName
	}
	for i := range obj.Subjects {
		DefaultSubject(&obj.Subjects[i])
	}
}

// DefaultSubject sets an empty apiGroup by kind: rbac.authorization.k8s.io
// for User and Group subjects, the core group ("") for ServiceAccounts.
// Subjects of unknown kind are left alone so validation can reject them.
func DefaultSubject(s *rbacv1.Subject) {
	if s.APIGroup != "" {
		return
	}
	switch s.Kind {
	case rbacv1.UserKind, rbacv1.GroupKind:
		s.APIGroup = rbacv1.GroupName
	case rbacv1.ServiceAccountKind:
		s.APIGroup = ""
	}
}
