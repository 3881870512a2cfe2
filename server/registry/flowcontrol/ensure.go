// Package flowcontrol keeps the configuration of API Priority and Fairness
// in the cluster as kube-apiserver's priority-and-fairness-config-producer
// does: the mandatory FlowSchemas and PriorityLevelConfigurations
// ("exempt", "catch-all") exist with their fixed specs, the suggested ones
// (k8s.io/apiserver's bootstrap configuration: "system", "node-high",
// "leader-election", "workload-high", "workload-low", "global-default" and
// their schemas) exist and follow this version's specs unless an operator
// took them over (annotation apf.kubernetes.io/autoupdate-spec=false, or a
// spec changed without it), and objects this version no longer suggests
// are deleted when they are still auto-updated.
package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/klog/v2"

	apisflowcontrol "github.com/k1s/k1s/internal/apis/flowcontrol"
)

// FieldManager is the field manager of the ensurer's writes (upstream's).
const FieldManager = "api-priority-and-fairness-config-producer-v1"

// Ensure brings the cluster's APF configuration objects in line with the
// bootstrap configuration once: the suggested objects first, then the
// mandatory ones, then the removal of those no longer wanted. Reads go to
// the listers (the apiserver's informers); a write that conflicts is left
// to the next call. Callers run it at start and every minute.
func Ensure(ctx context.Context, client flowcontrolclient.FlowcontrolV1Interface, schemas flowcontrollisters.FlowSchemaLister, levels flowcontrollisters.PriorityLevelConfigurationLister) error {
	pl := levelOps(client.PriorityLevelConfigurations(), levels)
	fs := schemaOps(client.FlowSchemas(), schemas)
	if err := ensureAll(ctx, pl, bootstrap.SuggestedPriorityLevelConfigurations, false); err != nil {
		return fmt.Errorf("suggested priority levels: %w", err)
	}
	if err := ensureAll(ctx, fs, bootstrap.SuggestedFlowSchemas, false); err != nil {
		return fmt.Errorf("suggested flow schemas: %w", err)
	}
	if err := ensureAll(ctx, pl, bootstrap.MandatoryPriorityLevelConfigurations, true); err != nil {
		return fmt.Errorf("mandatory priority levels: %w", err)
	}
	if err := ensureAll(ctx, fs, bootstrap.MandatoryFlowSchemas, true); err != nil {
		return fmt.Errorf("mandatory flow schemas: %w", err)
	}
	if err := removeUnwanted(ctx, fs, append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...)); err != nil {
		return fmt.Errorf("remove flow schemas: %w", err)
	}
	if err := removeUnwanted(ctx, pl, append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...)); err != nil {
		return fmt.Errorf("remove priority levels: %w", err)
	}
	return nil
}

// object is a FlowSchema or a PriorityLevelConfiguration.
type object interface {
	*flowcontrolv1.FlowSchema | *flowcontrolv1.PriorityLevelConfiguration
	metav1.Object
}

// ops are what the ensurer does with one kind.
type ops[T object] struct {
	get    func(name string) (T, error)
	list   func() ([]T, error)
	create func(ctx context.Context, obj T) error
	update func(ctx context.Context, obj T) error
	delete func(ctx context.Context, name string) error
	copy   func(T) T
	// withSpec returns a copy of into with from's spec.
	withSpec func(into, from T) T
	// specEqual says whether want's spec, defaulted, is have's.
	specEqual func(want, have T) bool
}

func schemaOps(c flowcontrolclient.FlowSchemaInterface, l flowcontrollisters.FlowSchemaLister) ops[*flowcontrolv1.FlowSchema] {
	return ops[*flowcontrolv1.FlowSchema]{
		get:  l.Get,
		list: func() ([]*flowcontrolv1.FlowSchema, error) { return l.List(labels.Everything()) },
		create: func(ctx context.Context, obj *flowcontrolv1.FlowSchema) error {
			_, err := c.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
			return err
		},
		update: func(ctx context.Context, obj *flowcontrolv1.FlowSchema) error {
			_, err := c.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
			return err
		},
		delete: func(ctx context.Context, name string) error { return c.Delete(ctx, name, metav1.DeleteOptions{}) },
		copy:   (*flowcontrolv1.FlowSchema).DeepCopy,
		withSpec: func(into, from *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
			out := into.DeepCopy()
			out.Spec = *from.Spec.DeepCopy()
			return out
		},
		specEqual: func(want, have *flowcontrolv1.FlowSchema) bool {
			spec := want.Spec.DeepCopy()
			apisflowcontrol.DefaultFlowSchemaSpec(spec)
			return apiequality.Semantic.DeepEqual(spec, &have.Spec)
		},
	}
}

func levelOps(c flowcontrolclient.PriorityLevelConfigurationInterface, l flowcontrollisters.PriorityLevelConfigurationLister) ops[*flowcontrolv1.PriorityLevelConfiguration] {
	return ops[*flowcontrolv1.PriorityLevelConfiguration]{
		get:  l.Get,
		list: func() ([]*flowcontrolv1.PriorityLevelConfiguration, error) { return l.List(labels.Everything()) },
		create: func(ctx context.Context, obj *flowcontrolv1.PriorityLevelConfiguration) error {
			_, err := c.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
			return err
		},
		update: func(ctx context.Context, obj *flowcontrolv1.PriorityLevelConfiguration) error {
			_, err := c.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
			return err
		},
		delete: func(ctx context.Context, name string) error { return c.Delete(ctx, name, metav1.DeleteOptions{}) },
		copy:   (*flowcontrolv1.PriorityLevelConfiguration).DeepCopy,
		withSpec: func(into, from *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
			out := into.DeepCopy()
			out.Spec = *from.Spec.DeepCopy()
			return out
		},
		specEqual: func(want, have *flowcontrolv1.PriorityLevelConfiguration) bool {
			w := want.DeepCopy()
			apisflowcontrol.DefaultPriorityLevelConfiguration(w)
			if w.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
				// The exempt level's spec.exempt is the operator's.
				if have.Spec.Exempt == nil {
					return false
				}
				w.Spec.Exempt.NominalConcurrencyShares = have.Spec.Exempt.NominalConcurrencyShares
				w.Spec.Exempt.LendablePercent = have.Spec.Exempt.LendablePercent
			}
			return apiequality.Semantic.DeepEqual(w.Spec, have.Spec)
		},
	}
}

func ensureAll[T object](ctx context.Context, o ops[T], boots []T, mandatory bool) error {
	var errs []error
	for _, b := range boots {
		if err := ensureOne(ctx, o, b, mandatory); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ensureOne creates want when it is missing, and otherwise updates its
// spec when it is auto-updated (always for mandatory objects) and its
// auto-update annotation when that is not what it should say.
func ensureOne[T object](ctx context.Context, o ops[T], want T, mandatory bool) error {
	logger := klog.FromContext(ctx)
	name := want.GetName()
	cur, err := o.get(name)
	if apierrors.IsNotFound(err) {
		err = o.create(ctx, o.copy(want))
		switch {
		case err == nil:
			logger.V(2).Info("Created APF configuration object", "kind", fmt.Sprintf("%T", want), "name", name, "mandatory", mandatory)
			return nil
		case apierrors.IsAlreadyExists(err):
			// Created meanwhile; the next pass looks at it.
			return nil
		}
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", name, err)
	}
	revised, ok := revise(o, cur, want, mandatory)
	if !ok {
		return nil
	}
	switch err := o.update(ctx, revised); {
	case err == nil:
		logger.V(2).Info("Updated APF configuration object", "kind", fmt.Sprintf("%T", want), "name", name, "mandatory", mandatory)
		return nil
	case apierrors.IsConflict(err):
		return nil
	default:
		return fmt.Errorf("update %s: %w", name, err)
	}
}

// revise returns the object cur should become, and whether that differs.
func revise[T object](o ops[T], cur, want T, mandatory bool) (T, bool) {
	autoUpdate := mandatory || autoUpdateSpec(cur)
	fixAnnotation := !annotationSays(cur, autoUpdate)
	specChanged := autoUpdate && !o.specEqual(want, cur)
	if !fixAnnotation && !specChanged {
		return cur, false
	}
	out := o.copy(cur)
	if specChanged {
		out = o.withSpec(cur, want)
	}
	if fixAnnotation {
		a := out.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
		out.SetAnnotations(a)
	}
	return out, true
}

// autoUpdateSpec: a suggested object follows this version's spec when its
// annotation says so, or, without a readable annotation, while nobody
// changed its spec (generation 1).
func autoUpdateSpec(obj metav1.Object) bool {
	if v, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return obj.GetGeneration() == 1
}

func annotationSays(obj metav1.Object, want bool) bool {
	v, ok := obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b == want
}

// removeUnwanted deletes the objects not in wanted that carry
// apf.kubernetes.io/autoupdate-spec=true: bootstrap objects an earlier
// version made. Objects without the annotation are the operator's.
func removeUnwanted[T object](ctx context.Context, o ops[T], wanted []T) error {
	names := sets.New[string]()
	for _, w := range wanted {
		names.Insert(w.GetName())
	}
	cur, err := o.list()
	if err != nil {
		return err
	}
	for _, obj := range cur {
		if names.Has(obj.GetName()) {
			continue
		}
		if v, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !v {
			continue
		}
		if err := o.delete(ctx, obj.GetName()); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", obj.GetName(), err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted APF configuration object no longer suggested", "kind", fmt.Sprintf("%T", obj), "name", obj.GetName())
	}
	return nil
}
