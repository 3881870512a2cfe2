package bootstrappolicy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/server/auth/rbac"
)

// AllClusterRoles returns ClusterRoles followed by ControllerRoles: every
// ClusterRole Reconcile maintains.
func AllClusterRoles() []rbacv1.ClusterRole {
	return append(ClusterRoles(), ControllerRoles()...)
}

// AllClusterRoleBindings returns ClusterRoleBindings followed by
// ControllerRoleBindings: every ClusterRoleBinding Reconcile maintains.
func AllClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return append(ClusterRoleBindings(), ControllerRoleBindings()...)
}

// Reconcile makes the cluster hold the default policy, as the apiserver does
// once at start (call it with a loopback client in system:masters):
//
//   - a missing object is created (and a missing namespace for a Role or
//     RoleBinding too);
//   - an existing object whose rbac.authorization.kubernetes.io/autoupdate
//     annotation is "false" is left alone;
//   - otherwise missing default labels and annotations are added (values a
//     user changed are kept), default rules a role does not already cover
//     are appended, missing aggregation selectors are added, and missing
//     subjects are appended to bindings. Nothing a user added is removed,
//     except that an aggregationRule on a role the defaults do not aggregate
//     is dropped;
//   - a binding whose roleRef differs from the default (roleRef is
//     immutable) is deleted and created again.
//
// Update conflicts are retried. Every object is attempted; the errors of
// those that failed are returned joined. Reconcile is idempotent.
func Reconcile(ctx context.Context, client kubernetes.Interface) error {
	// A new cluster has none of the objects: create each at once rather
	// than read it first (half the requests of the start-up bootstrap).
	// An object that exists after all is reconciled as usual.
	_, err := client.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{})
	fresh := apierrors.IsNotFound(err)
	var tasks []func() error
	for _, want := range AllClusterRoles() {
		tasks = append(tasks, func() error {
			if err := reconcileClusterRole(ctx, client, want.DeepCopy(), fresh); err != nil {
				return fmt.Errorf("reconcile clusterrole %q: %w", want.Name, err)
			}
			return nil
		})
	}
	for _, want := range AllClusterRoleBindings() {
		tasks = append(tasks, func() error {
			if err := reconcileClusterRoleBinding(ctx, client, want.DeepCopy(), fresh); err != nil {
				return fmt.Errorf("reconcile clusterrolebinding %q: %w", want.Name, err)
			}
			return nil
		})
	}
	roles := NamespaceRoles()
	for _, ns := range slices.Sorted(maps.Keys(roles)) {
		for _, want := range roles[ns] {
			tasks = append(tasks, func() error {
				if err := reconcileRole(ctx, client, want.DeepCopy(), fresh); err != nil {
					return fmt.Errorf("reconcile role %s/%s: %w", ns, want.Name, err)
				}
				return nil
			})
		}
	}
	bindings := NamespaceRoleBindings()
	for _, ns := range slices.Sorted(maps.Keys(bindings)) {
		for _, want := range bindings[ns] {
			tasks = append(tasks, func() error {
				if err := reconcileRoleBinding(ctx, client, want.DeepCopy(), fresh); err != nil {
					return fmt.Errorf("reconcile rolebinding %s/%s: %w", ns, want.Name, err)
				}
				return nil
			})
		}
	}
	return runAll(tasks, reconcileWorkers)
}

// reconcileWorkers bounds the objects reconciled at once. The objects are
// independent (a binding may name a role not yet created), and one at a
// time a new cluster's ~150 objects took most of a second.
const reconcileWorkers = 8

// runAll runs the tasks, workers at a time, and joins their errors in the
// tasks' order.
func runAll(tasks []func() error, workers int) error {
	errs := make([]error, len(tasks))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(tasks)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = tasks[i]()
			}
		})
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func protected(m *metav1.ObjectMeta) bool {
	return m.Annotations[rbacv1.AutoUpdateAnnotationKey] == "false"
}

// mergeMeta adds the labels and annotations of want that existing lacks;
// existing values win. It reports whether existing changed.
func mergeMeta(existing, want *metav1.ObjectMeta) bool {
	changed := false
	merge := func(have *map[string]string, add map[string]string) {
		for k, v := range add {
			if _, ok := (*have)[k]; ok {
				continue
			}
			if *have == nil {
				*have = map[string]string{}
			}
			(*have)[k] = v
			changed = true
		}
	}
	merge(&existing.Labels, want.Labels)
	merge(&existing.Annotations, want.Annotations)
	return changed
}

// mergeRules appends every rule of want that have does not already cover.
func mergeRules(have, want []rbacv1.PolicyRule) ([]rbacv1.PolicyRule, []rbacv1.PolicyRule) {
	var added []rbacv1.PolicyRule
	for _, r := range want {
		if ok, _ := rbac.Covers(have, []rbacv1.PolicyRule{r}); !ok {
			have = append(have, r)
			added = append(added, r)
		}
	}
	return have, added
}

// mergeAggregation adds missing selectors, or drops the aggregationRule when
// the default role has none. It reports whether role changed.
func mergeAggregation(role, want *rbacv1.ClusterRole) bool {
	switch {
	case want.AggregationRule == nil && role.AggregationRule == nil:
		return false
	case want.AggregationRule == nil:
		role.AggregationRule = nil
		return true
	case role.AggregationRule == nil:
		role.AggregationRule = &rbacv1.AggregationRule{}
	}
	changed := false
	for _, sel := range want.AggregationRule.ClusterRoleSelectors {
		if !slices.ContainsFunc(role.AggregationRule.ClusterRoleSelectors, func(s metav1.LabelSelector) bool {
			return equality.Semantic.DeepEqual(s, sel)
		}) {
			role.AggregationRule.ClusterRoleSelectors = append(role.AggregationRule.ClusterRoleSelectors, sel)
			changed = true
		}
	}
	return changed
}

// mergeSubjects appends the subjects of want missing from have.
func mergeSubjects(have, want []rbacv1.Subject) ([]rbacv1.Subject, bool) {
	changed := false
	for _, s := range want {
		if !slices.Contains(have, s) {
			have = append(have, s)
			changed = true
		}
	}
	return have, changed
}

func reconcileClusterRole(ctx context.Context, client kubernetes.Interface, want *rbacv1.ClusterRole, fresh bool) error {
	logger := klog.FromContext(ctx)
	c := client.RbacV1().ClusterRoles()
	if fresh {
		if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err == nil {
			logger.V(2).Info("Created default clusterrole", "clusterrole", want.Name)
			return nil
		} // else reconciled below (it exists after all)
	}
	return retryConflicts(func() error {
		existing, err := c.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return conflictIfExists(err)
			}
			logger.V(2).Info("Created default clusterrole", "clusterrole", want.Name)
			return nil
		}
		if err != nil {
			return err
		}
		if protected(&existing.ObjectMeta) {
			logger.V(2).Info("Skipped reconcile-protected clusterrole", "clusterrole", want.Name)
			return nil
		}
		updated := existing.DeepCopy()
		changed := mergeMeta(&updated.ObjectMeta, &want.ObjectMeta)
		var added []rbacv1.PolicyRule
		updated.Rules, added = mergeRules(updated.Rules, want.Rules)
		changed = mergeAggregation(updated, want) || changed || len(added) > 0
		if !changed {
			return nil
		}
		if _, err := c.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
		logger.V(2).Info("Updated default clusterrole", "clusterrole", want.Name, "addedRules", len(added))
		return nil
	})
}

func reconcileRole(ctx context.Context, client kubernetes.Interface, want *rbacv1.Role, fresh bool) error {
	logger := klog.FromContext(ctx)
	c := client.RbacV1().Roles(want.Namespace)
	if fresh && ensureNamespace(ctx, client, want.Namespace) == nil {
		if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err == nil {
			logger.V(2).Info("Created default role", "role", klog.KObj(want))
			return nil
		} // else reconciled below (it exists after all)
	}
	return retryConflicts(func() error {
		existing, err := c.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if err := ensureNamespace(ctx, client, want.Namespace); err != nil {
				return err
			}
			if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return conflictIfExists(err)
			}
			logger.V(2).Info("Created default role", "role", klog.KObj(want))
			return nil
		}
		if err != nil {
			return err
		}
		if protected(&existing.ObjectMeta) {
			logger.V(2).Info("Skipped reconcile-protected role", "role", klog.KObj(want))
			return nil
		}
		updated := existing.DeepCopy()
		changed := mergeMeta(&updated.ObjectMeta, &want.ObjectMeta)
		var added []rbacv1.PolicyRule
		updated.Rules, added = mergeRules(updated.Rules, want.Rules)
		if !changed && len(added) == 0 {
			return nil
		}
		if _, err := c.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
		logger.V(2).Info("Updated default role", "role", klog.KObj(want), "addedRules", len(added))
		return nil
	})
}

func reconcileClusterRoleBinding(ctx context.Context, client kubernetes.Interface, want *rbacv1.ClusterRoleBinding, fresh bool) error {
	logger := klog.FromContext(ctx)
	c := client.RbacV1().ClusterRoleBindings()
	if fresh {
		if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err == nil {
			logger.V(2).Info("Created default clusterrolebinding", "clusterrolebinding", want.Name)
			return nil
		} // else reconciled below (it exists after all)
	}
	return retryConflicts(func() error {
		existing, err := c.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return conflictIfExists(err)
			}
			logger.V(2).Info("Created default clusterrolebinding", "clusterrolebinding", want.Name)
			return nil
		}
		if err != nil {
			return err
		}
		if protected(&existing.ObjectMeta) {
			logger.V(2).Info("Skipped reconcile-protected clusterrolebinding", "clusterrolebinding", want.Name)
			return nil
		}
		if existing.RoleRef != want.RoleRef {
			if err := c.Delete(ctx, existing.Name, uidPrecondition(existing.UID)); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return conflictIfExists(err)
			}
			logger.V(2).Info("Recreated default clusterrolebinding with its default roleRef", "clusterrolebinding", want.Name)
			return nil
		}
		updated := existing.DeepCopy()
		changed := mergeMeta(&updated.ObjectMeta, &want.ObjectMeta)
		var subjectsChanged bool
		updated.Subjects, subjectsChanged = mergeSubjects(updated.Subjects, want.Subjects)
		if !changed && !subjectsChanged {
			return nil
		}
		if _, err := c.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
		logger.V(2).Info("Updated default clusterrolebinding", "clusterrolebinding", want.Name)
		return nil
	})
}

func reconcileRoleBinding(ctx context.Context, client kubernetes.Interface, want *rbacv1.RoleBinding, fresh bool) error {
	logger := klog.FromContext(ctx)
	c := client.RbacV1().RoleBindings(want.Namespace)
	if fresh && ensureNamespace(ctx, client, want.Namespace) == nil {
		if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err == nil {
			logger.V(2).Info("Created default rolebinding", "rolebinding", klog.KObj(want))
			return nil
		} // else reconciled below (it exists after all)
	}
	return retryConflicts(func() error {
		existing, err := c.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if err := ensureNamespace(ctx, client, want.Namespace); err != nil {
				return err
			}
			if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return conflictIfExists(err)
			}
			logger.V(2).Info("Created default rolebinding", "rolebinding", klog.KObj(want))
			return nil
		}
		if err != nil {
			return err
		}
		if protected(&existing.ObjectMeta) {
			logger.V(2).Info("Skipped reconcile-protected rolebinding", "rolebinding", klog.KObj(want))
			return nil
		}
		if existing.RoleRef != want.RoleRef {
			if err := c.Delete(ctx, existing.Name, uidPrecondition(existing.UID)); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if _, err := c.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return conflictIfExists(err)
			}
			logger.V(2).Info("Recreated default rolebinding with its default roleRef", "rolebinding", klog.KObj(want))
			return nil
		}
		updated := existing.DeepCopy()
		changed := mergeMeta(&updated.ObjectMeta, &want.ObjectMeta)
		var subjectsChanged bool
		updated.Subjects, subjectsChanged = mergeSubjects(updated.Subjects, want.Subjects)
		if !changed && !subjectsChanged {
			return nil
		}
		if _, err := c.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
		logger.V(2).Info("Updated default rolebinding", "rolebinding", klog.KObj(want))
		return nil
	})
}

// ensureNamespace creates namespace if it does not exist.
func ensureNamespace(ctx context.Context, client kubernetes.Interface, namespace string) error {
	_, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %q: %w", namespace, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %q: %w", namespace, err)
	}
	return nil
}

func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// conflictIfExists turns AlreadyExists (someone created the object between
// our Get and Create) into a Conflict so the attempt is retried.
func conflictIfExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return apierrors.NewConflict(rbacv1.Resource(""), "", err)
	}
	return err
}

func retryConflicts(fn func() error) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, fn)
}
