package apiserver

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/dynamic"
)

// admissionPlugin is a k1s admission plugin with its position in the chain.
type admissionPlugin struct {
	name    string
	factory admission.Factory
}

// applyAdmission builds the admission chain in upstream's order:
// NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction,
// Priority, DefaultTolerationSeconds, the mutating policies and webhooks,
// the validating policies and webhooks, ResourceQuota.
func (d *dependencies) applyAdmission(gc *genericapiserver.RecommendedConfig) error {
	opts := genericoptions.NewAdmissionOptions()
	before, after := d.admissionPlugins(gc.DrainedNotify())
	var order []string
	for _, p := range before {
		opts.Plugins.Register(p.name, p.factory)
	}
	for _, p := range after {
		opts.Plugins.Register(p.name, p.factory)
	}
	// opts.RecommendedPluginOrder starts with NamespaceLifecycle.
	order = append(order, opts.RecommendedPluginOrder[0])
	for _, p := range before {
		order = append(order, p.name)
	}
	order = append(order, opts.RecommendedPluginOrder[1:]...)
	for _, p := range after {
		order = append(order, p.name)
	}
	opts.RecommendedPluginOrder = order
	dyn, err := dynamic.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return fmt.Errorf("admission client: %w", err)
	}
	if err := opts.ApplyTo(&gc.Config, d.informers, d.client, dyn, gc.FeatureGate, gc.EffectiveVersion); err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	return nil
}
