package history

import (
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Claim reconciles the controller references of revisions with parent (of
// kind) and returns those parent controls afterwards: revisions it
// controls that no longer match selector are released (unless parent is
// being deleted), orphans in its namespace that match are adopted. Before
// the first adoption canAdopt is called (once); its error stops all
// adoptions, as it means parent is gone or going. Revisions are not
// modified; the returned ones may be cached objects.
func Claim(ctx context.Context, h Interface, parent metav1.Object, kind schema.GroupVersionKind, selector labels.Selector,
	canAdopt func(context.Context) error, revisions []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, error) {
	var (
		once      sync.Once
		adoptErr  error
		claimed   []*appsv1.ControllerRevision
		errs      []error
		deleting  = parent.GetDeletionTimestamp() != nil
		checkOnce = func() error {
			once.Do(func() {
				if canAdopt != nil {
					adoptErr = canAdopt(ctx)
				}
			})
			return adoptErr
		}
	)
	for _, rev := range revisions {
		match := selector.Matches(labels.Set(rev.Labels))
		if ref := metav1.GetControllerOfNoCopy(rev); ref != nil {
			switch {
			case ref.UID != parent.GetUID():
			case match:
				claimed = append(claimed, rev)
			case !deleting:
				if _, err := h.Release(ctx, parent, rev); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			}
			continue
		}
		if deleting || !match || rev.DeletionTimestamp != nil || rev.Namespace != parent.GetNamespace() {
			continue
		}
		if err := checkOnce(); err != nil {
			errs = append(errs, fmt.Errorf("adopt controller revision %s/%s: %w", rev.Namespace, rev.Name, err))
			continue
		}
		adopted, err := h.Adopt(ctx, parent, kind, rev)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, err)
		default:
			claimed = append(claimed, adopted)
		}
	}
	return claimed, errors.Join(errs...)
}
