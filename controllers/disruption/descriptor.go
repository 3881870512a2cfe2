package disruption

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"

	"github.com/k1s/k1s/controllers/manager"
)

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/disruption-controller with DefaultWorkers workers. Scales
// of controllers other than the built-in ones are read through their scale
// subresource, resolved with discovery.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "disruption-controller",
		Aliases:        []string{"disruption"},
		ServiceAccount: "disruption-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			cfg, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			disc, err := cc.DiscoveryClient()
			if err != nil {
				return err
			}
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
			scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
			if err != nil {
				return fmt.Errorf("disruption controller: scale client: %w", err)
			}
			f := cc.InformerFactory
			c, err := New(client, Informers{
				Pods:                   f.Core().V1().Pods(),
				PodDisruptionBudgets:   f.Policy().V1().PodDisruptionBudgets(),
				ReplicationControllers: f.Core().V1().ReplicationControllers(),
				ReplicaSets:            f.Apps().V1().ReplicaSets(),
				Deployments:            f.Apps().V1().Deployments(),
				StatefulSets:           f.Apps().V1().StatefulSets(),
			}, NewScaleFunc(mapper, scales, disc), cc.EventRecorder("controllermanager"), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, DefaultWorkers) })
			return nil
		},
	}
}

// resettable is a RESTMapper whose cached discovery can be refreshed.
type resettable interface {
	meta.RESTMapper
	Reset()
}

// NewScaleFunc reads a controller's scale through its scale subresource:
// mapper resolves the owner reference's kind to a resource (and is reset
// when it does not know the kind, so that new custom resources are found),
// scales reads the scale, and disc tells whether a resource whose object
// was not found has a scale subresource at all.
func NewScaleFunc(mapper meta.RESTMapper, scales scale.ScalesGetter, disc discovery.ServerResourcesInterface) ScaleFunc {
	return func(ctx context.Context, namespace string, ref metav1.OwnerReference) (types.UID, int32, bool, error) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return "", 0, false, err
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
		mapping, err := mapper.RESTMapping(gk, gv.Version)
		if err != nil {
			if r, ok := mapper.(resettable); ok && meta.IsNoMatchError(err) {
				r.Reset()
			}
			return "", 0, false, fmt.Errorf("resolve %s: %w", gk, err)
		}
		gr := mapping.Resource.GroupResource()
		s, err := scales.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			list, derr := disc.ServerResourcesForGroupVersion(mapping.Resource.GroupVersion().String())
			if derr != nil {
				return "", 0, false, derr
			}
			if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == mapping.Resource.Resource+"/scale" }) {
				return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", gr)
			}
			return "", 0, false, nil
		}
		if err != nil {
			return "", 0, false, fmt.Errorf("get scale of %s %s/%s: %w", gr, namespace, ref.Name, err)
		}
		if s.UID != ref.UID {
			return "", 0, false, nil
		}
		return s.UID, s.Spec.Replicas, true, nil
	}
}
