package apiserver

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// clusterIPResolver turns the Service a webhook, a CRD conversion or an
// aggregated API names into the address the apiserver dials, as
// kube-apiserver's default resolver does: the Service's cluster IP and
// port, which this node's service proxy forwards (the webhook client
// still checks the serving certificate against <name>.<namespace>.svc).
// Without it the client would look the .svc name up in the host's DNS.
type clusterIPResolver struct {
	services corelisters.ServiceLister
}

// ResolveEndpoint implements the webhook ServiceResolver interface.
func (r clusterIPResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, err := r.services.Services(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port)))}, nil
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, "":
		if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
			return nil, fmt.Errorf("cannot route to service %s/%s: it has no cluster IP", namespace, name)
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port)))}, nil
			}
		}
		return nil, fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
	return nil, fmt.Errorf("cannot route to service %s/%s of type %q", namespace, name, svc.Spec.Type)
}
