package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// resourceVerbs maps each deletable resource to its verbs.
type resourceVerbs map[schema.GroupVersionResource]sets.Set[string]

// deletableResources keeps the top-level resources that support delete,
// recording a condition for group versions that do not parse.
func deletableResources(lists []*metav1.APIResourceList, conds *conditionSet) resourceVerbs {
	out := resourceVerbs{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			conds.groupVersionFailed(err)
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			out[gv.WithResource(r.Name)] = sets.New(r.Verbs...)
		}
	}
	return out
}

// remaining is what is left of one resource after a deletion round.
type remaining struct {
	// estimate is the expected wait in seconds; 0 is no estimate.
	estimate int64
	// count of objects left.
	count int
	// byFinalizer counts the objects left per finalizer.
	byFinalizer map[string]int
}

// deleteAllContent deletes everything in the namespace, pods first (other
// content waits until no pod is left, so that controllers do not recreate
// pods whose owners are gone), and records the outcome in the namespace's
// conditions. It returns the namespace as last written, and the expected
// wait in seconds before the remaining content is gone; errors do not stop
// it from trying every resource.
func (c *Controller) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, int64, error) {
	logger := klog.FromContext(ctx)
	var errs []error
	conds := &conditionSet{}
	lists, err := c.discover(ctx)
	if err != nil {
		// Discovery is often partial (an aggregated API is down): delete
		// what is known, but do not finalize.
		errs = append(errs, fmt.Errorf("discover resources: %w", err))
		conds.discoveryFailed(err)
	}
	resources := deletableResources(lists, conds)
	if conds.has(corev1.NamespaceDeletionGVParsingFailure) {
		errs = append(errs, errors.New("some group versions could not be parsed"))
	}

	var estimate int64
	left := map[schema.GroupVersionResource]remaining{}
	account := func(gvr schema.GroupVersionResource, r remaining, err error) {
		if err != nil {
			errs = append(errs, err)
			conds.contentFailed(err)
		}
		estimate = max(estimate, r.estimate)
		if r.count > 0 {
			left[gvr] = r
		}
	}

	if verbs, ok := resources[podsResource]; ok {
		r, err := c.deleteResource(ctx, podsResource, verbs, ns)
		account(podsResource, r, err)
		if r.count > 0 {
			logger.V(4).Info("Pods remain, other content waits", "namespace", ns.Name, "pods", r.count)
			conds.contentTotals(left)
			return c.updateConditions(ctx, ns, conds), estimate, errors.Join(errs...)
		}
	}
	gvrs := make([]schema.GroupVersionResource, 0, len(resources))
	for gvr := range resources {
		if gvr != podsResource {
			gvrs = append(gvrs, gvr)
		}
	}
	slices.SortFunc(gvrs, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	for _, gvr := range gvrs {
		r, err := c.deleteResource(ctx, gvr, resources[gvr], ns)
		account(gvr, r, err)
	}
	conds.contentTotals(left)
	ns = c.updateConditions(ctx, ns, conds)
	err = errors.Join(errs...)
	logger.V(4).Info("Deleted namespace content", "namespace", ns.Name, "estimate", estimate, "err", err)
	return ns, estimate, err
}

// deleteResource deletes every object of one resource in the namespace
// and reports what is left.
func (c *Controller) deleteResource(ctx context.Context, gvr schema.GroupVersionResource, verbs sets.Set[string], ns *corev1.Namespace) (remaining, error) {
	var estimate int64
	if gvr == podsResource {
		var err error
		if estimate, err = c.podEstimate(ctx, ns); err != nil {
			return remaining{}, fmt.Errorf("estimate pod termination in %s: %w", ns.Name, err)
		}
	}
	client := c.metadata.Resource(gvr).Namespace(ns.Name)
	background := metav1.DeletePropagationBackground
	// Background propagation: the garbage collector must not add the
	// orphan finalizer, everything here goes anyway.
	opts := metav1.DeleteOptions{PropagationPolicy: &background}

	collection := verbs.Has("deletecollection")
	if collection {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		switch {
		case err == nil:
		case unsupported(err):
			collection = false
		default:
			return remaining{estimate: estimate}, fmt.Errorf("delete %s in %s: %w", gvr, ns.Name, err)
		}
	}
	if !verbs.Has("list") {
		// Nothing more can be done, nor checked.
		return remaining{estimate: estimate}, nil
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if unsupported(err) {
		return remaining{estimate: estimate}, nil
	}
	if err != nil {
		return remaining{estimate: estimate}, fmt.Errorf("list %s in %s: %w", gvr, ns.Name, err)
	}
	if !collection {
		for i := range list.Items {
			err := client.Delete(ctx, list.Items[i].Name, opts)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				return remaining{estimate: estimate}, fmt.Errorf("delete %s %s/%s: %w", gvr, ns.Name, list.Items[i].Name, err)
			}
		}
		if list, err = client.List(ctx, metav1.ListOptions{}); err != nil {
			return remaining{estimate: estimate}, fmt.Errorf("list %s in %s: %w", gvr, ns.Name, err)
		}
	}
	if len(list.Items) == 0 {
		return remaining{}, nil
	}
	r := remaining{estimate: estimate, count: len(list.Items), byFinalizer: map[string]int{}}
	for _, item := range list.Items {
		for _, f := range item.Finalizers {
			r.byFinalizer[f]++
		}
	}
	if r.estimate > 0 {
		return r, nil
	}
	if len(r.byFinalizer) > 0 {
		r.estimate = finalizerEstimate
		return r, nil
	}
	return r, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, gvr)
}

// unsupported reports errors of resources that list in discovery but do
// not serve the verb.
func unsupported(err error) bool {
	return apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err)
}

// podEstimate is the longest termination grace period of the namespace's
// running pods, or 0 once that much time has passed since the namespace
// was deleted.
func (c *Controller) podEstimate(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	pods, err := c.client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var estimate int64
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			estimate = max(estimate, *g)
		}
	}
	if c.clock.Since(ns.DeletionTimestamp.Time) >= secondsDuration(estimate) {
		return 0, nil
	}
	return estimate, nil
}
