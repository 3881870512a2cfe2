package apiserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/k1s/k1s/internal/tunnel"
	"github.com/k1s/k1s/server/auth/rbac"
	sa "github.com/k1s/k1s/server/auth/serviceaccount"
	"github.com/k1s/k1s/server/registry"
	authnregistry "github.com/k1s/k1s/server/registry/authentication"
	authzregistry "github.com/k1s/k1s/server/registry/authorization"
	csrregistry "github.com/k1s/k1s/server/registry/certificates"
	"github.com/k1s/k1s/server/registry/core/namespace"
	"github.com/k1s/k1s/server/registry/core/node"
	"github.com/k1s/k1s/server/registry/core/pod"
	"github.com/k1s/k1s/server/registry/core/service"
	"github.com/k1s/k1s/server/registry/core/serviceaccounttoken"
	"github.com/k1s/k1s/server/registry/scale"
)

// addSubresources adds what is more than a stored object or its status:
// the review APIs, serviceaccounts/token, and (in their own files) pod
// binding, eviction, logs and streaming, scale, namespace finalize and CSR
// approval.
func (d *dependencies) addSubresources(set *storageSet) error {
	authn := authenticationv1.SchemeGroupVersion
	set.add(authn, "tokenreviews", authnregistry.NewTokenReviewREST(d.requestAuthenticator, d.cfg.APIAudiences))
	set.add(authn, "selfsubjectreviews", authnregistry.NewSelfSubjectReviewREST(nil))

	authz := authorizationv1.SchemeGroupVersion
	set.add(authz, "subjectaccessreviews", authzregistry.NewSubjectAccessReviewREST(d.authorizer))
	set.add(authz, "selfsubjectaccessreviews", authzregistry.NewSelfSubjectAccessReviewREST(d.authorizer))
	set.add(authz, "localsubjectaccessreviews", authzregistry.NewLocalSubjectAccessReviewREST(d.authorizer))
	set.add(authz, "selfsubjectrulesreviews", authzregistry.NewSelfSubjectRulesReviewREST(d.ruleResolver))

	gen, err := sa.NewTokenGenerator(d.cfg.ServiceAccountIssuer, d.saKey)
	if err != nil {
		return fmt.Errorf("service-account token generator: %w", err)
	}
	tokens, err := serviceaccounttoken.NewREST(gen, d.saGetter, serviceaccounttoken.Config{
		APIAudiences:  d.cfg.APIAudiences,
		MaxExpiration: d.cfg.ServiceAccountMaxTokenExpiration,
	}, nil)
	if err != nil {
		return fmt.Errorf("serviceaccounts/token: %w", err)
	}
	core := corev1.SchemeGroupVersion
	set.add(core, "serviceaccounts/token", tokens)

	nsStore := set.stores[corev1.Resource("namespaces")]
	set.add(core, "namespaces", &namespace.REST{Store: nsStore})
	set.add(core, "namespaces/finalize", namespace.NewFinalizeREST(nsStore.Store))

	for gr, acc := range scaleAccessors {
		st := set.stores[gr]
		set.add(st.Resource.GVR.GroupVersion(), gr.Resource+"/scale", scale.NewREST(st.Store, acc))
	}

	csrs := set.stores[certificatesv1.Resource("certificatesigningrequests")]
	set.add(certificatesv1.SchemeGroupVersion, "certificatesigningrequests/approval",
		registry.NewUpdateSubresource(csrs.Store, csrregistry.PrepareForApproval, csrregistry.ValidateApproval))

	esc := rbac.NewEscalationChecker(d.authorizer, d.rbac)
	for resource, check := range rbacChecks(esc) {
		set.add(rbacv1.SchemeGroupVersion, resource, &rbacREST{Store: set.stores[rbacv1.Resource(resource)], check: check})
	}

	pods := set.stores[corev1.Resource("pods")].Store
	set.add(core, "pods/binding", pod.NewBindingREST(pods))
	set.add(core, "pods/eviction", pod.NewEvictionREST(pods, set.stores[corev1.Resource("pods")].StatusStore, d.client.PolicyV1()))

	connCfg := node.ConnectionConfig{
		CAFile: d.cfg.ServerCAFile, CertFile: d.cfg.AgentClientCertFile, KeyFile: d.cfg.AgentClientKeyFile,
		Tunnels: &tunnel.Dialer{Registry: d.tunnels},
	}
	if d.cfg.NoAgentTunnels {
		connCfg.Tunnels = nil
	}
	conn, err := node.NewConnection(set.stores[corev1.Resource("nodes")], connCfg)
	if err != nil {
		return err
	}
	streams := &pod.Streams{Pods: pods, Conn: conn, Authz: d.authorizer}
	set.add(core, "pods/log", &pod.LogREST{Streams: streams})
	set.add(core, "pods/exec", &pod.ExecREST{Streams: streams})
	set.add(core, "pods/attach", &pod.AttachREST{Streams: streams})
	set.add(core, "pods/portforward", &pod.PortForwardREST{Streams: streams})
	set.add(core, "nodes/proxy", &node.ProxyREST{Conn: conn})
	// pods/proxy and services/proxy dial pod addresses, as kube-apiserver's
	// proxy transport does (HTTPS without verifying the pod's certificate).
	podTransport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream's proxy transport
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
	}
	podsGetter := set.stores[corev1.Resource("pods")].Store
	set.add(core, "pods/proxy", &pod.ProxyREST{Pods: podsGetter, Transport: podTransport})
	set.add(core, "services/proxy", &service.ProxyREST{
		Services:  set.stores[corev1.Resource("services")].Store,
		Pods:      podsGetter,
		Slices:    d.informers.Discovery().V1().EndpointSlices().Lister(),
		Transport: podTransport,
	})
	return nil
}
