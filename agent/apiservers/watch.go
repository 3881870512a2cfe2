package apiservers

import (
	"context"
	"net"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// EndpointsName is the Service, and its EndpointSlice, in the default
// namespace that lists the running apiservers.
const EndpointsName = "kubernetes"

// Watch follows the `kubernetes` EndpointSlice of the default namespace
// and hands set the apiservers it lists (host:port, ready ones, in its
// order) each time they change, until ctx ends; it returns nil then. The
// EndpointSlice, not the Endpoints (deprecated since 1.33), which the
// apiservers write alike; a node lists and watches EndpointSlices for its
// service proxy already (k1s:node-proxier).
func Watch(ctx context.Context, client kubernetes.Interface, set func(context.Context, []string)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", EndpointsName).String()
		}))
	inf := factory.Discovery().V1().EndpointSlices().Informer()
	handle := func(obj any) {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok && s.Name == EndpointsName {
			set(ctx, Addresses(s))
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// Addresses are the host:port of the ready endpoints of an apiservers'
// EndpointSlice (its "https" port, or its only one).
func Addresses(s *discoveryv1.EndpointSlice) []string {
	var port int32
	for _, p := range s.Ports {
		if p.Port != nil && (port == 0 || (p.Name != nil && *p.Name == "https")) {
			port = *p.Port
		}
	}
	if port == 0 {
		return nil
	}
	var out []string
	for _, ep := range s.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for _, a := range ep.Addresses {
			if net.ParseIP(a) != nil {
				out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	return out
}
