package pod

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ProxyREST serves pods/proxy: HTTP to the pod's address, as
// kube-apiserver's. The name may carry a scheme and a port:
// "name", "name:port", "https:name:port"; without a port the first port a
// container declares is used.
type ProxyREST struct {
	Pods      rest.Getter
	Transport http.RoundTripper
}

var _ rest.Connecter = &ProxyREST{}

// ProxyMethods are the HTTP methods pods/proxy and services/proxy pass on.
var ProxyMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// New returns empty proxy options, the kind upstream gives the subresource.
func (r *ProxyREST) New() runtime.Object { return &corev1.PodProxyOptions{} }

// Destroy does nothing.
func (r *ProxyREST) Destroy() {}

// ConnectMethods lists the proxied methods.
func (r *ProxyREST) ConnectMethods() []string { return ProxyMethods }

// NewConnectOptions takes the path after proxy/.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodProxyOptions{}, true, "path"
}

// Connect proxies to the pod.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	po, ok := opts.(*corev1.PodProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	loc, err := r.location(ctx, id)
	if err != nil {
		return nil, err
	}
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, po.Path)
	return proxy.NewUpgradeAwareHandler(loc, r.Transport, true, false, proxy.NewErrorResponder(responder)), nil
}

func (r *ProxyREST) location(ctx context.Context, id string) (*url.URL, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	obj, err := r.Pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	loc := &url.URL{Scheme: scheme, Host: ip.String()}
	if ip.To4() == nil {
		loc.Host = "[" + ip.String() + "]"
	}
	if port != "" {
		loc.Host = net.JoinHostPort(ip.String(), port)
	}
	return loc, nil
}
