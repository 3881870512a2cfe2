package dns

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Indexes the server adds to the shared informers.
const (
	// indexClusterIP: Services by each cluster IP (canonical text).
	indexClusterIP = "k1s-dns/cluster-ip"
	// indexSliceService: EndpointSlices by "<namespace>/<service>".
	indexSliceService = "k1s-dns/service"
	// indexEndpointIP: EndpointSlices by each ready endpoint address.
	indexEndpointIP = "k1s-dns/endpoint-ip"
)

// addIndexers adds the server's indexes (and the namespace index, when
// the informer has none) to informers that have not started.
func addIndexers(services, slices cache.SharedIndexInformer) error {
	svcIdx := cache.Indexers{indexClusterIP: serviceClusterIPs}
	if _, ok := services.GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		svcIdx[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	}
	if err := services.AddIndexers(svcIdx); err != nil {
		return fmt.Errorf("add service indexes: %w", err)
	}
	if err := slices.AddIndexers(cache.Indexers{
		indexSliceService: sliceService,
		indexEndpointIP:   sliceReadyIPs,
	}); err != nil {
		return fmt.Errorf("add endpointslice indexes: %w", err)
	}
	return nil
}

func serviceClusterIPs(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil, nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			out = append(out, a.Unmap().String())
		}
	}
	return out, nil
}

func sliceService(obj any) ([]string, error) {
	sl, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	name := sl.Labels[discoveryv1.LabelServiceName]
	if name == "" || !usableSlice(sl) {
		return nil, nil
	}
	return []string{sl.Namespace + "/" + name}, nil
}

func sliceReadyIPs(obj any) ([]string, error) {
	sl, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || sl.Labels[discoveryv1.LabelServiceName] == "" || !usableSlice(sl) {
		return nil, nil
	}
	var out []string
	for i := range sl.Endpoints {
		ep := &sl.Endpoints[i]
		if !ready(ep) {
			continue
		}
		for _, ip := range ep.Addresses {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, a.Unmap().String())
			}
		}
	}
	return out, nil
}

// usableSlice: IP slices only (FQDN slices are for nothing DNS serves).
func usableSlice(sl *discoveryv1.EndpointSlice) bool {
	return sl.AddressType == discoveryv1.AddressTypeIPv4 || sl.AddressType == discoveryv1.AddressTypeIPv6
}

// ready is the endpoint's ready condition, nil meaning ready. (The slice
// controller sets it true for publishNotReadyAddresses Services.)
func ready(ep *discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

// getService returns the cached Service ns/name, or nil.
func (s *Server) getService(ns, name string) *corev1.Service {
	obj, ok, err := s.services.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*corev1.Service)
	return svc
}

// namespaceHasServices tells whether ns has any Service: without a
// namespace informer (a node may not list namespaces) that is how a
// namespace is known to exist.
func (s *Server) namespaceHasServices(ns string) bool {
	keys, err := s.services.GetIndexer().IndexKeys(cache.NamespaceIndex, ns)
	return err == nil && len(keys) > 0
}

// readyAddr is one ready endpoint address of a Service.
type readyAddr struct {
	slice *discoveryv1.EndpointSlice
	ep    *discoveryv1.Endpoint
	addr  netip.Addr
}

// readyAddrs appends the ready addresses of Service ns/name to dst, merged
// over its slices, each address once.
func (s *Server) readyAddrs(dst []readyAddr, ns, name string) []readyAddr {
	objs, err := s.slices.GetIndexer().ByIndex(indexSliceService, ns+"/"+name)
	if err != nil {
		return dst
	}
	start := len(dst)
	var seen map[netip.Addr]struct{} // only for large services
	for _, obj := range objs {
		sl, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		for i := range sl.Endpoints {
			ep := &sl.Endpoints[i]
			if !ready(ep) {
				continue
			}
			for _, ip := range ep.Addresses {
				a, err := netip.ParseAddr(ip)
				if err != nil {
					continue
				}
				a = a.Unmap()
				if seen != nil {
					if _, dup := seen[a]; dup {
						continue
					}
					seen[a] = struct{}{}
				} else if containsAddr(dst[start:], a) {
					continue
				} else if len(dst)-start >= 32 {
					seen = make(map[netip.Addr]struct{}, 2*len(dst))
					for _, r := range dst[start:] {
						seen[r.addr] = struct{}{}
					}
					seen[a] = struct{}{}
				}
				dst = append(dst, readyAddr{slice: sl, ep: ep, addr: a})
			}
		}
	}
	return dst
}

func containsAddr(rs []readyAddr, a netip.Addr) bool {
	for i := range rs {
		if rs[i].addr == a {
			return true
		}
	}
	return false
}
