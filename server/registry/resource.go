// Package registry turns a declarative description of a served resource
// (Resource) into the generic apiserver's etcd-backed storage: a
// genericregistry.Store with a strategy that applies k1s's defaulting,
// validation and status/spec separation, plus the status subresource.
//
// Resources with behaviour beyond a strategy (pod binding, service IP
// allocation, scale ...) live in sub-packages that wrap these stores.
package registry

import (
	"context"
	"fmt"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/k1s/k1s/server/scheme"
)

// Resource describes one served resource. Only GVR, Kind, New and NewList
// are required; every hook is optional.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	New        func() runtime.Object
	NewList    func() runtime.Object
	ShortNames []string
	Categories []string
	// AlsoServedAs are further versions of the group the same store serves
	// (autoscaling/v1 HorizontalPodAutoscalers beside autoscaling/v2); the
	// scheme converts between them.
	AlsoServedAs []schema.GroupVersion

	// Validate and ValidateUpdate check an object on create and update.
	Validate       func(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate func(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// PrepareForCreate and PrepareForUpdate run after the generic preparation
	// (status reset, generation) and before validation.
	PrepareForCreate func(ctx context.Context, obj runtime.Object)
	PrepareForUpdate func(ctx context.Context, obj, old runtime.Object)
	// KeepStatusOnCreate keeps a Status field sent on create (nodes, events).
	// By default status is cleared on create and preserved on update.
	KeepStatusOnCreate bool

	// Status, when true, serves the status subresource.
	Status bool
	// ValidateStatusUpdate checks a status update.
	ValidateStatusUpdate func(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// PrepareForStatusUpdate runs after the spec is restored from old.
	PrepareForStatusUpdate func(ctx context.Context, obj, old runtime.Object)

	// Fields returns the selectable fields beyond metadata.name/namespace.
	Fields func(obj runtime.Object) fields.Set
	// TriggerFuncs index the watch cache by fields (pods by spec.nodeName).
	TriggerFuncs storage.IndexerFuncs
	// Indexers index the watch cache for list requests.
	Indexers *cache.Indexers

	AllowCreateOnUpdate      bool
	DisallowUnconditionalUpd bool
	// GracefulDelete, when set, decides whether a delete is graceful (pods).
	GracefulDelete func(ctx context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool
	// TableConvertor prints rows for kubectl get. Default: name and age.
	TableConvertor rest.TableConvertor
	// KeepDuringUpdate, when set, vetoes the store's removal of an object
	// with a deletionTimestamp and no finalizers on update (namespaces stay
	// until spec.finalizers is empty too).
	KeepDuringUpdate func(obj runtime.Object) bool
}

// GroupResource is the resource's group and plural name.
func (r *Resource) GroupResource() schema.GroupResource { return r.GVR.GroupResource() }

// Store is the storage of one resource and its status subresource.
type Store struct {
	*genericregistry.Store
	Resource *Resource
	// StatusStore updates only status; nil unless Resource.Status.
	StatusStore *genericregistry.Store
}

// Shortnames and categories for discovery.
var (
	_ rest.ShortNamesProvider   = &Store{}
	_ rest.CategoriesProvider   = &Store{}
	_ rest.SingularNameProvider = &Store{}
)

// ShortNames implements rest.ShortNamesProvider.
func (s *Store) ShortNames() []string { return s.Resource.ShortNames }

// Categories implements rest.CategoriesProvider.
func (s *Store) Categories() []string { return s.Resource.Categories }

// NewStore builds the etcd-backed storage for r.
func NewStore(r *Resource, opts generic.RESTOptionsGetter) (*Store, error) {
	st := &strategy{ObjectTyper: scheme.Scheme, NameGenerator: names.SimpleNameGenerator, r: r}
	singular := schema.GroupResource{Group: r.GVR.Group, Resource: singularName(r.Kind)}
	tc := r.TableConvertor
	if tc == nil {
		tc = rest.NewDefaultTableConvertor(r.GroupResource())
	}
	store := &genericregistry.Store{
		NewFunc:                   r.New,
		NewListFunc:               r.NewList,
		DefaultQualifiedResource:  r.GroupResource(),
		SingularQualifiedResource: singular,
		PredicateFunc:             r.predicate,
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		ResetFieldsStrategy:       st,
		TableConvertor:            tc,
	}
	if r.KeepDuringUpdate != nil {
		store.ShouldDeleteDuringUpdate = func(ctx context.Context, key string, obj, existing runtime.Object) bool {
			return !r.KeepDuringUpdate(obj) && genericregistry.ShouldDeleteDuringUpdate(ctx, key, obj, existing)
		}
	}
	options := &generic.StoreOptions{
		RESTOptions: opts,
		AttrFunc:    r.attrs,
		TriggerFunc: r.TriggerFuncs,
		Indexers:    r.Indexers,
	}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, fmt.Errorf("storage for %s: %w", r.GroupResource(), err)
	}
	out := &Store{Store: store, Resource: r}
	if r.Status {
		status := *store
		ss := &statusStrategy{strategy: st}
		status.UpdateStrategy = ss
		status.ResetFieldsStrategy = ss
		out.StatusStore = &status
	}
	return out, nil
}

func singularName(kind string) string {
	b := []byte(kind)
	for i := range b {
		if b[i] >= 'A' && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// attrs returns the labels and selectable fields of obj.
func (r *Resource) attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	fs := fields.Set{"metadata.name": m.GetName()}
	if r.Namespaced {
		fs["metadata.namespace"] = m.GetNamespace()
	}
	if r.Fields != nil {
		for k, v := range r.Fields(obj) {
			fs[k] = v
		}
	}
	return labels.Set(m.GetLabels()), fs, nil
}

func (r *Resource) predicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	var indexFields []string
	for f := range r.TriggerFuncs {
		indexFields = append(indexFields, f)
	}
	return storage.SelectionPredicate{
		Label:       label,
		Field:       field,
		GetAttrs:    r.attrs,
		IndexFields: indexFields,
	}
}

// strategy is the create/update/delete strategy of a Resource.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	r *Resource
}

func (s *strategy) NamespaceScoped() bool { return s.r.Namespaced }

func (s *strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	v := structValue(obj)
	if st := v.FieldByName("Status"); st.IsValid() && !s.r.KeepStatusOnCreate {
		st.Set(reflect.Zero(st.Type()))
	}
	if hasSpec(v) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetGeneration(1)
		}
	}
	if s.r.PrepareForCreate != nil {
		s.r.PrepareForCreate(ctx, obj)
	}
}

func (s *strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	v, ov := structValue(obj), structValue(old)
	if st := v.FieldByName("Status"); st.IsValid() && s.r.Status {
		st.Set(ov.FieldByName("Status"))
	}
	if hasSpec(v) && !specEqual(v, ov) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetGeneration(m.GetGeneration() + 1)
		}
	}
	if s.r.PrepareForUpdate != nil {
		s.r.PrepareForUpdate(ctx, obj, old)
	}
}

func (s *strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	if s.r.Validate == nil {
		return nil
	}
	return s.r.Validate(ctx, obj)
}

func (s *strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if s.r.ValidateUpdate == nil {
		return nil
	}
	return s.r.ValidateUpdate(ctx, obj, old)
}

func (s *strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (s *strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (s *strategy) Canonicalize(runtime.Object)              {}
func (s *strategy) AllowCreateOnUpdate(context.Context) bool { return s.r.AllowCreateOnUpdate }
func (s *strategy) AllowUnconditionalUpdate(context.Context) bool {
	return !s.r.DisallowUnconditionalUpd
}

func (s *strategy) CheckGracefulDelete(ctx context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	if s.r.GracefulDelete == nil {
		return false
	}
	return s.r.GracefulDelete(ctx, obj, options)
}

func (s *strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if !s.r.Status {
		return nil
	}
	return s.r.perVersion(func() *fieldpath.Set { return fieldpath.NewSet(fieldpath.MakePathOrDie("status")) })
}

// perVersion maps every version r is served as to a set made by set.
func (r *Resource) perVersion(set func() *fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	out := map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(r.GVR.GroupVersion().String()): set()}
	for _, gv := range r.AlsoServedAs {
		out[fieldpath.APIVersion(gv.String())] = set()
	}
	return out
}

// statusStrategy updates only status: everything else is taken from old.
type statusStrategy struct {
	*strategy
}

func (s *statusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	v, ov := structValue(obj), structValue(old)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "TypeMeta" || name == "ObjectMeta" || name == "Status" {
			continue
		}
		v.Field(i).Set(ov.Field(i))
	}
	m, err1 := meta.Accessor(obj)
	om, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		m.SetOwnerReferences(om.GetOwnerReferences())
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	}
	if s.r.PrepareForStatusUpdate != nil {
		s.r.PrepareForStatusUpdate(ctx, obj, old)
	}
}

func (s *statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if s.r.ValidateStatusUpdate == nil {
		return nil
	}
	return s.r.ValidateStatusUpdate(ctx, obj, old)
}

func (s *statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.r.perVersion(func() *fieldpath.Set {
		return fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "deletionTimestamp"),
			fieldpath.MakePathOrDie("metadata", "ownerReferences"),
		)
	})
}

func structValue(obj runtime.Object) reflect.Value {
	return reflect.ValueOf(obj).Elem()
}

func hasSpec(v reflect.Value) bool {
	return v.FieldByName("Spec").IsValid()
}

// specEqual compares everything but metadata and status.
func specEqual(v, ov reflect.Value) bool {
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "TypeMeta" || name == "ObjectMeta" || name == "Status" {
			continue
		}
		if !apiequality.Semantic.DeepEqual(v.Field(i).Interface(), ov.Field(i).Interface()) {
			return false
		}
	}
	return true
}
