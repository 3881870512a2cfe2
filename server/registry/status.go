package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusREST serves the status subresource: get, update and patch only.
type StatusREST struct {
	store *genericregistry.Store
}

// NewStatusREST wraps a store whose update strategy touches only status.
func NewStatusREST(store *genericregistry.Store) *StatusREST { return &StatusREST{store: store} }

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
	_ rest.TableConvertor      = &StatusREST{}
)

// New returns an empty object of the resource.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the storage.
func (r *StatusREST) Destroy() {}

// Get returns the object.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update changes only the status of the object.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Subresources never create.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields lists the fields a status update resets.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object as its main resource does.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// NewUpdateSubresource returns a StatusREST-shaped storage over a copy of
// store whose updates run prepare and validate instead of the main
// strategy's (e.g. certificatesigningrequests/approval).
func NewUpdateSubresource(store *genericregistry.Store, prepare func(ctx context.Context, obj, old runtime.Object), validate func(ctx context.Context, obj, old runtime.Object) field.ErrorList) *StatusREST {
	s := *store
	s.UpdateStrategy = &hookStrategy{RESTUpdateStrategy: store.UpdateStrategy, prepare: prepare, validate: validate}
	s.ResetFieldsStrategy = nil
	return &StatusREST{store: &s}
}

type hookStrategy struct {
	rest.RESTUpdateStrategy
	prepare  func(ctx context.Context, obj, old runtime.Object)
	validate func(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

func (h *hookStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	h.prepare(ctx, obj, old)
}

func (h *hookStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return h.validate(ctx, obj, old)
}
