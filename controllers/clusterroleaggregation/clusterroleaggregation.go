package clusterroleaggregation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/manager"
)

const (
	// FieldManager is the server-side apply manager of aggregated rules.
	FieldManager = "clusterrole-aggregation-controller"
	// DefaultWorkers is how many roles are aggregated at once, as upstream.
	DefaultWorkers = 5
)

// Controller keeps the rules of aggregated ClusterRoles. Create it with
// New; Run may be called once.
type Controller struct {
	client rbacclient.ClusterRolesGetter
	lister rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller that watches ClusterRoles through informer
// (started by the caller) and applies aggregated rules with client.
func New(client rbacclient.ClusterRolesGetter, informer rbacinformers.ClusterRoleInformer) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: informer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "clusterrole_aggregation"}),
	}
	// Any change may alter what some aggregated role selects, so every
	// event re-examines every aggregated role.
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(any, any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	})
	if err != nil {
		return nil, fmt.Errorf("clusterrole aggregation controller: watch cluster roles: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/clusterrole-aggregation-controller with DefaultWorkers
// workers.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "clusterrole-aggregation-controller",
		Aliases:        []string{"clusterrole-aggregation"},
		ServiceAccount: "clusterrole-aggregation-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client.RbacV1(), cc.InformerFactory.Rbac().V1().ClusterRoles())
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

func (c *Controller) enqueueAggregated() {
	roles, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run waits for the cache, then aggregates with workers goroutines until
// ctx is cancelled, and returns nil.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting clusterrole aggregation controller")
	defer logger.Info("Shut down clusterrole aggregation controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("clusterrole aggregation controller: cache did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to aggregate cluster role, will retry", "clusterRole", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync sets the rules of the named ClusterRole, if it aggregates, to the
// union of the rules of the roles its selectors match.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := c.aggregate(role)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	if len(rules) == 0 {
		// An apply configuration cannot say "no rules" (an empty list is
		// omitted, and omission keeps rules another manager owns), so an
		// update empties them.
		updated := role.DeepCopy()
		updated.Rules = nil
		if _, err := c.client.ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("empty the rules of aggregated cluster role %s: %w", role.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Aggregated cluster role selects no rules", "clusterRole", role.Name)
		return nil
	}
	apply := rbacv1ac.ClusterRole(role.Name)
	for _, r := range rules {
		pr := rbacv1ac.PolicyRule().WithVerbs(r.Verbs...)
		// Nil and empty lists differ in an apply configuration; keep what the
		// source role said.
		pr.APIGroups = r.APIGroups
		pr.Resources = r.Resources
		pr.ResourceNames = r.ResourceNames
		pr.NonResourceURLs = r.NonResourceURLs
		apply.WithRules(pr)
	}
	if _, err := c.client.ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply aggregated rules to cluster role %s: %w", role.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Aggregated cluster role rules", "clusterRole", role.Name, "rules", len(rules))
	return nil
}

// aggregate returns the rules role should have: for each selector in
// order, the rules of the matching roles (other than role itself) by name,
// each distinct rule once.
func (c *Controller) aggregate(role *rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("cluster role %s: selector %d: %w", role.Name, i, err)
		}
		matched, err := c.lister.List(sel)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(matched, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range matched {
			if m.Name == role.Name {
				continue
			}
			for _, r := range m.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}
