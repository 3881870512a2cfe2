package apiserver

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/k1s/k1s/server/auth/rbac"
	"github.com/k1s/k1s/server/registry"
)

// escalationCheck refuses a write that would grant more than the writer holds.
type escalationCheck func(ctx context.Context, u user.Info, obj, old runtime.Object) error

// rbacREST guards an RBAC resource with the escalation check, as upstream's
// policy-based storage does.
type rbacREST struct {
	*registry.Store
	check escalationCheck
}

func (r *rbacREST) guard(ctx context.Context, obj, old runtime.Object) error {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewForbidden(r.Resource.GroupResource(), "", errors.New("no user in request"))
	}
	return r.check(ctx, u, obj, old)
}

// Create checks escalation once admission has run.
func (r *rbacREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if err := r.guard(ctx, obj, nil); err != nil {
			return err
		}
		return runValidation(ctx, createValidation, obj)
	}, options)
}

// Update checks escalation against the old object.
func (r *rbacREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.Store.Update(ctx, name, objInfo,
		func(ctx context.Context, obj runtime.Object) error {
			if err := r.guard(ctx, obj, nil); err != nil {
				return err
			}
			return runValidation(ctx, createValidation, obj)
		},
		func(ctx context.Context, obj, old runtime.Object) error {
			if err := r.guard(ctx, obj, old); err != nil {
				return err
			}
			if updateValidation == nil {
				return nil
			}
			return updateValidation(ctx, obj, old)
		}, forceAllowCreate, options)
}

func runValidation(ctx context.Context, v rest.ValidateObjectFunc, obj runtime.Object) error {
	if v == nil {
		return nil
	}
	return v(ctx, obj)
}

// rbacChecks adapts the escalation checker to each RBAC kind.
func rbacChecks(esc *rbac.EscalationChecker) map[string]escalationCheck {
	return map[string]escalationCheck{
		"roles": func(ctx context.Context, u user.Info, obj, old runtime.Object) error {
			o, _ := old.(*rbacv1.Role)
			return esc.CheckRole(ctx, u, obj.(*rbacv1.Role), o)
		},
		"clusterroles": func(ctx context.Context, u user.Info, obj, old runtime.Object) error {
			o, _ := old.(*rbacv1.ClusterRole)
			return esc.CheckClusterRole(ctx, u, obj.(*rbacv1.ClusterRole), o)
		},
		"rolebindings": func(ctx context.Context, u user.Info, obj, old runtime.Object) error {
			o, _ := old.(*rbacv1.RoleBinding)
			return esc.CheckRoleBinding(ctx, u, obj.(*rbacv1.RoleBinding), o)
		},
		"clusterrolebindings": func(ctx context.Context, u user.Info, obj, old runtime.Object) error {
			o, _ := old.(*rbacv1.ClusterRoleBinding)
			return esc.CheckClusterRoleBinding(ctx, u, obj.(*rbacv1.ClusterRoleBinding), o)
		},
	}
}
