package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/k1s/k1s/controllers/history"
)

// revisionCacheSize bounds the remembered "this revision equals the set's
// template once defaulted" answers.
const revisionCacheSize = 10_000

// newRevision is the unsaved revision of set's template with the given
// number, carrying set's annotations.
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := history.TemplatePatch(&set.Spec.Template)
	if err != nil {
		return nil, err
	}
	rev := history.NewRevision(set, controllerKind, set.Spec.Template.Labels, runtime.RawExtension{Raw: patch}, revision, collisionCount)
	if len(set.Annotations) > 0 {
		if rev.Annotations == nil {
			rev.Annotations = map[string]string{}
		}
		maps.Copy(rev.Annotations, set.Annotations)
	}
	return rev, nil
}

// ApplyRevision returns a copy of set whose spec has rev's template
// restored.
func ApplyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	clone := set.DeepCopy()
	orig, err := json.Marshal(clone)
	if err != nil {
		return nil, fmt.Errorf("encode statefulset: %w", err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, rev.Data.Raw, clone)
	if err != nil {
		return nil, fmt.Errorf("apply controller revision %s: %w", rev.Name, err)
	}
	restored := &appsv1.StatefulSet{}
	if err := json.Unmarshal(patched, restored); err != nil {
		return nil, fmt.Errorf("decode statefulset from revision %s: %w", rev.Name, err)
	}
	clone.Spec = restored.Spec
	return clone, nil
}

// nextRevision is one more than the highest of the sorted revisions, 1
// for none.
func nextRevision(sorted []*appsv1.ControllerRevision) int64 {
	if len(sorted) == 0 {
		return 1
	}
	return sorted[len(sorted)-1].Revision + 1
}

type revisionCacheKey struct {
	uid             types.UID
	generation      int64
	resourceVersion string
}

// matchesLatest reports whether latest, once its template is defaulted as
// the apiserver defaults today, is the proposed revision: then a template
// that differs only by defaults added since latest was recorded starts no
// rollout.
func (c *Controller) matchesLatest(set *appsv1.StatefulSet, proposed, latest *appsv1.ControllerRevision) bool {
	if c.defaulter == nil {
		return false
	}
	key := revisionCacheKey{uid: set.UID, generation: set.Generation, resourceVersion: latest.ResourceVersion}
	if _, ok := c.revisionEquality.Get(key); ok {
		return true
	}
	restored, err := ApplyRevision(set, latest)
	if err != nil {
		return false
	}
	c.defaulter(restored)
	rebuilt, err := newRevision(restored, -1, nil)
	if err != nil || !history.Equal(proposed, rebuilt) {
		return false
	}
	c.revisionEquality.Add(key, struct{}{})
	return true
}

// revisions returns set's current and update revisions and its collision
// count: the update revision records the present template (reusing an
// equal revision, renumbered to be the newest, or creating one), the
// current revision is status.currentRevision (the update revision if that
// is unknown). revisions must be sorted.
func (c *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisionCount int32, err error) {
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	proposed, err := newRevision(set, nextRevision(revisions), &collisionCount)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	equal := history.FindEqual(revisions, proposed)
	n := len(revisions)
	switch {
	case len(equal) > 0 && history.Equal(revisions[n-1], equal[len(equal)-1]):
		// The newest revision already is the template.
		update = revisions[n-1]
	case len(equal) > 0:
		// Back to an earlier template: make its revision the newest.
		update, err = c.history.UpdateRevision(ctx, equal[len(equal)-1], proposed.Revision)
	case n > 0 && c.matchesLatest(set, proposed, revisions[n-1]):
		update = revisions[n-1]
	default:
		update, err = c.history.Create(ctx, set, proposed, &collisionCount)
	}
	if err != nil {
		return nil, nil, collisionCount, err
	}
	for _, r := range revisions {
		if r.Name == set.Status.CurrentRevision {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisionCount, nil
}

// truncateHistory deletes the oldest revisions beyond
// revisionHistoryLimit among those neither current, nor the update
// revision, nor carried by a pod. revisions must be sorted.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, current, update *appsv1.ControllerRevision) error {
	live := map[string]bool{}
	if current != nil {
		live[current.Name] = true
	}
	if update != nil {
		live[update.Name] = true
	}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	var unused []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live[r.Name] {
			unused = append(unused, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(unused) <= limit {
		return nil
	}
	for _, r := range unused[:len(unused)-limit] {
		if err := c.history.Delete(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// adoptOrphanRevisions makes set the controller of the orphaned revisions
// its selector matches, after checking afresh that set is not being
// deleted.
func (c *Controller) adoptOrphanRevisions(ctx context.Context, set *appsv1.StatefulSet) error {
	revs, err := c.listRevisions(set)
	if err != nil {
		return err
	}
	var orphans []*appsv1.ControllerRevision
	for _, r := range revs {
		if metav1.GetControllerOfNoCopy(r) == nil {
			orphans = append(orphans, r)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	if err := c.canAdopt(set)(ctx); err != nil {
		return fmt.Errorf("can't adopt ControllerRevisions: %w", err)
	}
	for _, r := range orphans {
		if _, err := c.history.Adopt(ctx, set, controllerKind, r); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) listRevisions(set *appsv1.StatefulSet) ([]*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return c.history.List(set, controllerKind, sel)
}
