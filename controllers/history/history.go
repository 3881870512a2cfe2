package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/rand"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// HashLabel is the label every revision made by NewRevision carries: the
// hash part of its name.
const HashLabel = "controller.kubernetes.io/hash"

// OwnerIndex is the name of the informer index that maps a revision to its
// controller ("namespace/kind/name/uid") or, for orphans, to its namespace.
const OwnerIndex = "controllerRevisionOwner"

// maxCreateAttempts bounds the renames Create tries on name collisions.
const maxCreateAttempts = 32

// maxNamePrefix keeps prefix, dash and a 10-character hash within the
// 253 characters of a DNS subdomain.
const maxNamePrefix = 223

// ownerIndexKey is the OwnerIndex value for a revision in namespace whose
// controller is ref, or for an orphan when ref is nil.
func ownerIndexKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace
	}
	return namespace + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}

// AddOwnerIndex adds OwnerIndex to informer unless it is there already, so
// that several controllers sharing the informer may each call it.
func AddOwnerIndex(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[OwnerIndex]; ok {
		return nil
	}
	err := informer.AddIndexers(cache.Indexers{OwnerIndex: func(obj any) ([]string, error) {
		rev, ok := obj.(*appsv1.ControllerRevision)
		if !ok {
			return nil, nil
		}
		return []string{ownerIndexKey(rev.Namespace, metav1.GetControllerOfNoCopy(rev))}, nil
	}})
	if err != nil {
		// Another controller may have won the race to add it.
		if _, ok := informer.GetIndexer().GetIndexers()[OwnerIndex]; ok {
			return nil
		}
		return fmt.Errorf("add controller revision owner index: %w", err)
	}
	return nil
}

// Name is the revision name for a parent named prefix and a hash: the two
// joined by a dash, the prefix cut to 223 characters.
func Name(prefix, hash string) string {
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return prefix + "-" + hash
}

// Hash is the FNV-32 hash of rev's data (Raw, else Object as JSON), with
// the decimal collision count appended when probe is not nil, as a string
// of safe characters.
func Hash(rev *appsv1.ControllerRevision, probe *int32) string {
	h := fnv.New32()
	switch {
	case len(rev.Data.Raw) > 0:
		h.Write(rev.Data.Raw)
	case rev.Data.Object != nil:
		if b, err := json.Marshal(rev.Data.Object); err == nil {
			h.Write(b)
		}
	}
	if probe != nil {
		h.Write([]byte(strconv.FormatInt(int64(*probe), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// NewRevision returns an unsaved revision of parent (of kind): controlled
// by parent, labelled with templateLabels and HashLabel, holding data with
// the given revision number, and named Name(parent, Hash(data,
// collisionCount)). Its namespace is parent's.
func NewRevision(parent metav1.Object, kind schema.GroupVersionKind, templateLabels map[string]string, data runtime.RawExtension, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	lbls := make(map[string]string, len(templateLabels)+1)
	for k, v := range templateLabels {
		lbls[k] = v
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       parent.GetNamespace(),
			Labels:          lbls,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, kind)},
		},
		Data:     data,
		Revision: revision,
	}
	hash := Hash(rev, collisionCount)
	rev.Name = Name(parent.GetName(), hash)
	rev.Labels[HashLabel] = hash
	return rev
}

// TemplatePatch is the revision data the DaemonSet and StatefulSet
// controllers record: a strategic merge patch that replaces spec.template
// with template, as JSON with sorted keys (integers kept as integers).
func TemplatePatch(template *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := utiljson.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("encode pod template: %w", err)
	}
	var tmpl map[string]any
	if err := utiljson.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("decode pod template: %w", err)
	}
	tmpl["$patch"] = "replace"
	return utiljson.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// Sort orders revisions by Revision, then creation time, then name.
func Sort(revisions []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revisions, func(a, b *appsv1.ControllerRevision) int {
		switch {
		case a.Revision != b.Revision:
			if a.Revision < b.Revision {
				return -1
			}
			return 1
		case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

// Equal reports whether a and b are both nil or hold the same data.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw) && apiequality.Semantic.DeepEqual(a.Data.Object, b.Data.Object)
}

// FindEqual returns the revisions whose data equals needle's, in the order
// of revisions.
func FindEqual(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if Equal(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// MaxRevision is the highest Revision among revisions, 0 for none.
func MaxRevision(revisions []*appsv1.ControllerRevision) int64 {
	var m int64
	for _, r := range revisions {
		m = max(m, r.Revision)
	}
	return m
}

// Interface manages the revisions of parents through the API, reading from
// an informer. It never modifies the revisions passed in. Safe for
// concurrent use.
type Interface interface {
	// List returns the revisions in parent's namespace matching selector
	// that parent (of kind) controls or that have no controller. The
	// results are cached objects: copy before modifying.
	List(parent metav1.Object, kind schema.GroupVersionKind, selector labels.Selector) ([]*appsv1.ControllerRevision, error)
	// Create saves rev in parent's namespace under Name(parent,
	// Hash(rev, collisionCount)). A revision of that name with the same
	// data is returned as is; one with other data is a collision:
	// *collisionCount is incremented and the name recomputed. collisionCount
	// must not be nil.
	Create(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error)
	// UpdateRevision sets rev's Revision to revision, retrying conflicts.
	UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision, revision int64) (*appsv1.ControllerRevision, error)
	// Delete deletes rev.
	Delete(ctx context.Context, rev *appsv1.ControllerRevision) error
	// Adopt makes parent (of kind) the controller of the orphan rev.
	Adopt(ctx context.Context, parent metav1.Object, kind schema.GroupVersionKind, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	// Release removes parent's owner reference from rev. A revision that
	// is gone or no longer owned by parent gives (nil, nil).
	Release(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
}

// New returns an Interface writing with client and reading from informer,
// to which it adds OwnerIndex (call it before the informer starts).
func New(client kubernetes.Interface, informer appsinformers.ControllerRevisionInformer) (Interface, error) {
	if err := AddOwnerIndex(informer.Informer()); err != nil {
		return nil, err
	}
	return &apiHistory{client: client, lister: informer.Lister(), indexer: informer.Informer().GetIndexer()}, nil
}

type apiHistory struct {
	client  kubernetes.Interface
	lister  appslisters.ControllerRevisionLister
	indexer cache.Indexer
}

func (h *apiHistory) List(parent metav1.Object, kind schema.GroupVersionKind, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	keys := []string{
		ownerIndexKey(parent.GetNamespace(), metav1.NewControllerRef(parent, kind)),
		ownerIndexKey(parent.GetNamespace(), nil),
	}
	var out []*appsv1.ControllerRevision
	for _, key := range keys {
		objs, err := h.indexer.ByIndex(OwnerIndex, key)
		if err != nil {
			return nil, fmt.Errorf("list controller revisions of %s/%s: %w", parent.GetNamespace(), parent.GetName(), err)
		}
		for _, obj := range objs {
			rev, ok := obj.(*appsv1.ControllerRevision)
			if !ok || !selector.Matches(labels.Set(rev.Labels)) {
				continue
			}
			// The index is keyed by name and UID; check the UID once more in
			// case the kind differs only in group.
			if ref := metav1.GetControllerOfNoCopy(rev); ref != nil && ref.UID != parent.GetUID() {
				continue
			}
			out = append(out, rev)
		}
	}
	return out, nil
}

func (h *apiHistory) Create(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, errors.New("create controller revision: nil collision count")
	}
	ns := parent.GetNamespace()
	for range maxCreateAttempts {
		attempt := rev.DeepCopy()
		hash := Hash(rev, collisionCount)
		attempt.Name = Name(parent.GetName(), hash)
		attempt.Namespace = ns
		if _, ok := attempt.Labels[HashLabel]; ok {
			attempt.Labels[HashLabel] = hash
		}
		created, err := h.client.AppsV1().ControllerRevisions(ns).Create(ctx, attempt, metav1.CreateOptions{})
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create controller revision %s/%s: %w", ns, attempt.Name, err)
		}
		existing, err := h.client.AppsV1().ControllerRevisions(ns).Get(ctx, attempt.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get controller revision %s/%s: %w", ns, attempt.Name, err)
		}
		if bytes.Equal(existing.Data.Raw, attempt.Data.Raw) {
			return existing, nil
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("create controller revision for %s/%s: %d name collisions", ns, parent.GetName(), maxCreateAttempts)
}

func (h *apiHistory) UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision, revision int64) (*appsv1.ControllerRevision, error) {
	cur := rev.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if cur.Revision == revision {
			return nil
		}
		cur.Revision = revision
		updated, err := h.client.AppsV1().ControllerRevisions(cur.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		if err == nil {
			cur = updated
			return nil
		}
		if fresh, getErr := h.lister.ControllerRevisions(cur.Namespace).Get(cur.Name); getErr == nil {
			cur = fresh.DeepCopy()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update controller revision %s/%s to revision %d: %w", rev.Namespace, rev.Name, revision, err)
	}
	return cur, nil
}

func (h *apiHistory) Delete(ctx context.Context, rev *appsv1.ControllerRevision) error {
	if err := h.client.AppsV1().ControllerRevisions(rev.Namespace).Delete(ctx, rev.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete controller revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}

func (h *apiHistory) Adopt(ctx context.Context, parent metav1.Object, kind schema.GroupVersionKind, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if ref := metav1.GetControllerOfNoCopy(rev); ref != nil {
		return nil, fmt.Errorf("adopt controller revision %s/%s: already controlled by %s %s", rev.Namespace, rev.Name, ref.Kind, ref.Name)
	}
	body, err := controllerutil.OwnerRefPatch(parent, kind, rev.UID)
	if err != nil {
		return nil, err
	}
	adopted, err := h.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("adopt controller revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return adopted, nil
}

func (h *apiHistory) Release(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	body, err := controllerutil.DeleteOwnerRefPatch(rev.UID, []types.UID{parent.GetUID()})
	if err != nil {
		return nil, err
	}
	released, err := h.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		// The revision is gone or no longer refers to parent.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("release controller revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return released, nil
}
