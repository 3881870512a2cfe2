package node

import (
	"context"
	"fmt"
	"net/http"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ProxyREST serves nodes/proxy: any request proxied to the node's agent API.
type ProxyREST struct {
	Conn *Connection
}

var _ rest.Connecter = &ProxyREST{}

var proxyMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// New returns empty proxy options, the kind upstream gives the subresource.
func (r *ProxyREST) New() runtime.Object { return &corev1.NodeProxyOptions{} }

// Destroy does nothing.
func (r *ProxyREST) Destroy() {}

// ConnectMethods lists the proxied HTTP methods.
func (r *ProxyREST) ConnectMethods() []string { return proxyMethods }

// NewConnectOptions takes the path after proxy/.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.NodeProxyOptions{}, true, "path"
}

// Connect proxies to the agent.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	po, ok := opts.(*corev1.NodeProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	loc, err := r.Conn.Location(ctx, id)
	if err != nil {
		return nil, err
	}
	loc.Path = path.Join("/", po.Path)
	h := proxy.NewUpgradeAwareHandler(loc, r.Conn.Transport, true, false, proxy.NewErrorResponder(responder))
	h.UseLocationHost = true
	return h, nil
}
