package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// deletionConditions are the namespace conditions this controller owns, in
// the order they are added to a namespace.
var deletionConditions = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// healthy is the reason and message of each condition when all is well
// (status False), as upstream words them.
var healthy = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// conditionSet collects the problems of one deletion round; every
// condition it does not hold is healthy.
type conditionSet struct {
	problems       map[corev1.NamespaceConditionType]corev1.NamespaceCondition
	contentErrors  []string
	groupVersionEr []string
}

func (s *conditionSet) set(t corev1.NamespaceConditionType, reason, message string) {
	if s.problems == nil {
		s.problems = map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	}
	s.problems[t] = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message}
}

func (s *conditionSet) has(t corev1.NamespaceConditionType) bool {
	_, ok := s.problems[t]
	return ok
}

func (s *conditionSet) discoveryFailed(err error) {
	msg := err.Error()
	if failed, ok := errors.AsType[*discovery.ErrGroupDiscoveryFailed](err); ok {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(failed.Groups), err)
	}
	s.set(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

func (s *conditionSet) groupVersionFailed(err error) {
	s.groupVersionEr = append(s.groupVersionEr, err.Error())
	s.set(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", strings.Join(s.groupVersionEr, ", "))
}

func (s *conditionSet) contentFailed(err error) {
	s.contentErrors = append(s.contentErrors, err.Error())
	msgs := slices.Sorted(slices.Values(s.contentErrors))
	s.set(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
		fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")))
}

// contentTotals records what is left after the round.
func (s *conditionSet) contentTotals(left map[schema.GroupVersionResource]remaining) {
	var resources []string
	byFinalizer := map[string]int{}
	for gvr, r := range left {
		if r.count == 0 {
			continue
		}
		resources = append(resources, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, r.count))
		for f, n := range r.byFinalizer {
			byFinalizer[f] += n
		}
	}
	if len(resources) > 0 {
		slices.Sort(resources)
		s.set(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			"Some resources are remaining: "+strings.Join(resources, ", "))
	}
	var finalizers []string
	for f, n := range byFinalizer {
		if n > 0 {
			finalizers = append(finalizers, fmt.Sprintf("%s in %d resource instances", f, n))
		}
	}
	if len(finalizers) > 0 {
		slices.Sort(finalizers)
		s.set(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+strings.Join(finalizers, ", "))
	}
}

// apply writes the set into status, keeping the transition time of
// conditions whose status did not change. It reports whether anything
// changed.
func (s *conditionSet) apply(status *corev1.NamespaceStatus, now time.Time) bool {
	changed := false
	for _, t := range deletionConditions {
		want, ok := s.problems[t]
		if !ok {
			h := healthy[t]
			want = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: h.reason, Message: h.message}
		}
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == t })
		if i < 0 {
			want.LastTransitionTime = metav1.NewTime(now)
			status.Conditions = append(status.Conditions, want)
			changed = true
			continue
		}
		cur := &status.Conditions[i]
		if cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
			continue
		}
		if cur.Status != want.Status {
			cur.LastTransitionTime = metav1.NewTime(now)
		}
		cur.Status, cur.Reason, cur.Message = want.Status, want.Reason, want.Message
		changed = true
	}
	return changed
}

// updateConditions writes the round's conditions to the namespace status
// when they changed, and returns the namespace as now stored. A failed
// write is only logged: the next round writes them again.
func (c *Controller) updateConditions(ctx context.Context, ns *corev1.Namespace, conds *conditionSet) *corev1.Namespace {
	updated := ns.DeepCopy()
	if !conds.apply(&updated.Status, c.clock.Now()) {
		return ns
	}
	out, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to update namespace conditions", "namespace", ns.Name)
		return ns
	}
	return out
}

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }
