package podautoscaler

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	resourcemetrics "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	custommetrics "k8s.io/metrics/pkg/client/custom_metrics"
	externalmetrics "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/k1s/k1s/controllers/manager"
)

// Descriptor registers the controller with the manager as
// kube-controller-manager names it, acting as
// kube-system/horizontal-pod-autoscaler, reading metrics from the metrics
// APIs (NewAPIMetricsSource).
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           "horizontal-pod-autoscaler-controller",
		Aliases:        []string{"horizontalpodautoscaling"},
		ServiceAccount: "horizontal-pod-autoscaler",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			restCfg, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			disc, err := cc.DiscoveryClient()
			if err != nil {
				return err
			}
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
			scales, err := scale.NewForConfig(restCfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
			if err != nil {
				return fmt.Errorf("horizontal pod autoscaler: scale client: %w", err)
			}
			resource, err := resourcemetrics.NewForConfig(restCfg)
			if err != nil {
				return fmt.Errorf("horizontal pod autoscaler: resource metrics client: %w", err)
			}
			external, err := externalmetrics.NewForConfig(restCfg)
			if err != nil {
				return fmt.Errorf("horizontal pod autoscaler: external metrics client: %w", err)
			}
			versions := custommetrics.NewAvailableAPIsGetter(disc)
			metrics := NewAPIMetricsSource(resource, custommetrics.NewForConfig(restCfg, mapper, versions), external)
			f := cc.InformerFactory
			c, err := New(cfg,
				Clients{HPAs: client.AutoscalingV2(), Scales: scales, Mapper: mapper},
				Informers{HPAs: f.Autoscaling().V2().HorizontalPodAutoscalers(), Pods: f.Core().V1().Pods()},
				metrics, cc.EventRecorder("horizontal-pod-autoscaler"), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error {
				// Forget which custom metrics API version is served once
				// per sync period, so one added later is used.
				custommetrics.PeriodicallyInvalidate(versions, c.cfg.SyncPeriod, ctx.Done())
				return nil
			})
			cc.Go(c.Run)
			return nil
		},
	}
}
