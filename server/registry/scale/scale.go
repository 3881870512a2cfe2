// Package scale serves the scale subresource (autoscaling/v1 Scale) of the
// workloads that have replicas: deployments, replicasets, statefulsets and
// replicationcontrollers.
package scale

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/k1s/k1s/internal/apis/autoscaling"
)

// Accessor reads and writes a workload's replicas.
type Accessor struct {
	// Get returns the desired and current replicas and the label selector
	// in its string form.
	Get func(obj runtime.Object) (spec, status int32, selector string)
	// Set changes the desired replicas.
	Set func(obj runtime.Object, replicas int32)
}

// REST is a scale subresource.
type REST struct {
	store *genericregistry.Store
	acc   Accessor
}

// NewREST serves the scale of the objects in store.
func NewREST(store *genericregistry.Store, acc Accessor) *REST { return &REST{store: store, acc: acc} }

var (
	_ rest.Patcher                  = &REST{}
	_ rest.GroupVersionKindProvider = &REST{}
)

// New returns an empty Scale.
func (r *REST) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy does nothing: the main store owns the storage.
func (r *REST) Destroy() {}

// GroupVersionKind is autoscaling/v1 Scale whatever the containing group.
func (r *REST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// Get returns the scale of the named object.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return r.toScale(obj)
}

func (r *REST) toScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	spec, status, selector := r.acc.Get(obj)
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.GetName(),
			Namespace:         m.GetNamespace(),
			UID:               m.GetUID(),
			ResourceVersion:   m.GetResourceVersion(),
			CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}, nil
}

// Update sets the object's replicas from the new Scale.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name, &scaleInfo{r: r, name: name, inner: objInfo}, nil,
		func(ctx context.Context, obj, old runtime.Object) error {
			if updateValidation == nil {
				return nil
			}
			newScale, err := r.toScale(obj)
			if err != nil {
				return err
			}
			oldScale, err := r.toScale(old)
			if err != nil {
				return err
			}
			return updateValidation(ctx, newScale, oldScale)
		}, false, options)
	if err != nil {
		return nil, false, err
	}
	s, err := r.toScale(obj)
	return s, false, err
}

// scaleInfo turns an update of the Scale into an update of the object.
type scaleInfo struct {
	r     *REST
	name  string
	inner rest.UpdatedObjectInfo
}

func (i *scaleInfo) Preconditions() *metav1.Preconditions { return i.inner.Preconditions() }

func (i *scaleInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	if oldObj == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, i.name)
	}
	oldScale, err := i.r.toScale(oldObj)
	if err != nil {
		return nil, err
	}
	obj, err := i.inner.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", obj))
	}
	if errs := autoscaling.ValidateScale(scale); len(errs) > 0 {
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), scale.Name, errs)
	}
	if scale.ResourceVersion != "" && scale.ResourceVersion != oldScale.ResourceVersion {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: "autoscaling", Resource: "scale"}, i.name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	out := oldObj.DeepCopyObject()
	i.r.acc.Set(out, scale.Spec.Replicas)
	return out, nil
}

// ConvertToTable prints the Scale with the default columns.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(schema.GroupResource{Group: "autoscaling", Resource: "scale"}).ConvertToTable(ctx, object, tableOptions)
}
