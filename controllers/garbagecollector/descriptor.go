package garbagecollector

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"

	"github.com/k1s/k1s/controllers/manager"
)

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/generic-garbage-collector. Its metadata client gets twice
// the manager's QPS, as upstream's: each collected object takes two
// requests.
func Descriptor(cfg Config) manager.Controller {
	cfg.SetDefaults()
	return manager.Controller{
		Name:           "garbage-collector-controller",
		Aliases:        []string{"garbagecollector"},
		ServiceAccount: "generic-garbage-collector",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			restCfg, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			restCfg.QPS *= 2
			metadataClient, err := metadata.NewForConfig(restCfg)
			if err != nil {
				return fmt.Errorf("garbage collector: metadata client: %w", err)
			}
			// The mapper's discovery is reset on changes; discovery for
			// the resource list is a client of its own.
			mapperDiscovery, err := cc.DiscoveryClient()
			if err != nil {
				return err
			}
			listDiscovery, err := discovery.NewDiscoveryClientForConfig(restCfg)
			if err != nil {
				return fmt.Errorf("garbage collector: discovery client: %w", err)
			}
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(mapperDiscovery))
			gc, err := New(cfg, metadataClient, mapper, DiscoveryFunc(listDiscovery), cc.EventRecorder("garbage-collector-controller"), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error {
				gc.UseSharedInformers(cc.InformerFactory, ctx.Done())
				return gc.Run(ctx)
			})
			return nil
		},
	}
}
