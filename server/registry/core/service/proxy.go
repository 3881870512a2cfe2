package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// ProxyREST serves services/proxy: HTTP to one ready endpoint of the
// Service, chosen at random, as kube-apiserver's (not through the cluster
// IP). The name may carry a scheme and a port (name or number):
// "name", "name:port", "https:name:port". Only endpoints that are pods of
// the Service's namespace with that address are used.
type ProxyREST struct {
	Services  rest.Getter
	Pods      rest.Getter
	Slices    discoverylisters.EndpointSliceLister
	Transport http.RoundTripper
}

var _ rest.Connecter = &ProxyREST{}

// New returns empty proxy options, the kind upstream gives the subresource.
func (r *ProxyREST) New() runtime.Object { return &corev1.ServiceProxyOptions{} }

// Destroy does nothing.
func (r *ProxyREST) Destroy() {}

// ConnectMethods lists the proxied methods.
func (r *ProxyREST) ConnectMethods() []string {
	return []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
}

// NewConnectOptions takes the path after proxy/.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.ServiceProxyOptions{}, true, "path"
}

// Connect proxies to an endpoint.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	so, ok := opts.(*corev1.ServiceProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	loc, err := r.location(ctx, id)
	if err != nil {
		return nil, err
	}
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, so.Path)
	return proxy.NewUpgradeAwareHandler(loc, r.Transport, true, false, proxy.NewErrorResponder(responder)), nil
}

func (r *ProxyREST) location(ctx context.Context, id string) (*url.URL, error) {
	scheme, name, portStr, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if ns == "" {
		return nil, apierrors.NewBadRequest("missing required namespace")
	}
	obj, err := r.Services.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	svc := obj.(*corev1.Service)
	// A port number names the Service port with that number.
	if n, err := strconv.Atoi(portStr); err == nil {
		found := false
		for _, p := range svc.Spec.Ports {
			if int(p.Port) == n {
				portStr, found = p.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	slices, err := r.Slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var candidates []string
	for _, s := range slices {
		var port *int32
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == portStr || (p.Name == nil && portStr == "") {
				port = p.Port
				break
			}
		}
		if port == nil {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) || !r.isPodOf(ctx, ns, &ep) {
				continue
			}
			candidates = append(candidates, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*port))))
		}
	}
	if len(candidates) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	return &url.URL{Scheme: scheme, Host: candidates[rand.IntN(len(candidates))]}, nil
}

// isPodOf reports whether the endpoint is a pod of ns that has its address.
func (r *ProxyREST) isPodOf(ctx context.Context, ns string, ep *discoveryv1.Endpoint) bool {
	if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.Namespace != ns {
		return false
	}
	obj, err := r.Pods.Get(ctx, ep.TargetRef.Name, &metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, ip := range obj.(*corev1.Pod).Status.PodIPs {
		if ip.IP == ep.Addresses[0] {
			return true
		}
	}
	return false
}
