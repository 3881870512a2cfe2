package endpointslice

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/endpoints/endpointutil"
)

// reconciler turns a Service and its pods into slice writes.
type reconciler struct {
	client      kubernetes.Interface
	nodes       corelisters.NodeLister
	maxPerSlice int
	tracker     *tracker
}

// plan is the writes one reconciliation makes.
type plan struct {
	create, update, delete []*discoveryv1.EndpointSlice
}

// addressTypes returns the address types svc's slices have: its IP
// families, else its cluster IP's family, else (headless, families
// unknown) both.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return out
	}
	if endpointutil.IsServiceIPSet(svc) {
		if netutils.IsIPv6String(svc.Spec.ClusterIP) {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

func familyOf(t discoveryv1.AddressType) corev1.IPFamily {
	if t == discoveryv1.AddressTypeIPv6 {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// reconcile writes the slices of svc (existing: its current slices managed
// by this controller, none being deleted) for pods. It makes every write
// it can and returns the errors, including pods skipped because their node
// is not known yet (so that the Service is retried).
func (r *reconciler) reconcile(ctx context.Context, svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, triggerTime time.Time) error {
	types := addressTypes(svc)
	var p plan
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !slices.Contains(types, s.AddressType) {
			p.delete = append(p.delete, s)
			continue
		}
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}

	desired, skipped := r.desiredEndpoints(svc, pods, types)
	setHints(svc, desired)
	for _, t := range types {
		r.planAddressType(svc, t, byType[t], desired[t], &p)
	}

	// A Service without endpoints keeps one empty slice, so that clients
	// can tell "no endpoints" from "not processed yet".
	if len(existing) == len(p.delete) && len(p.create) == 0 {
		placeholder := newSlice(svc, types[0], []discoveryv1.EndpointPort{})
		if len(p.delete) == 1 && isPlaceholderFor(p.delete[0], placeholder) {
			p.delete = nil
		} else {
			p.create = append(p.create, placeholder)
		}
	}
	err := r.apply(ctx, svc, &p, triggerTime)
	return errors.Join(append([]error{err}, skipped...)...)
}

// portSet is the endpoints of one address type sharing one set of ports.
type portSet struct {
	ports     []discoveryv1.EndpointPort
	endpoints map[string]*discoveryv1.Endpoint // by endpointKey
}

// desiredEndpoints builds the endpoints of svc per address type and port
// set key. Pods whose node is not in the cache are skipped and reported.
func (r *reconciler) desiredEndpoints(svc *corev1.Service, pods []*corev1.Pod, types []discoveryv1.AddressType) (map[discoveryv1.AddressType]map[string]*portSet, []error) {
	out := map[discoveryv1.AddressType]map[string]*portSet{}
	for _, t := range types {
		out[t] = map[string]*portSet{}
	}
	var skipped []error
	for _, pod := range pods {
		if !endpointutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		var node *corev1.Node
		if pod.Spec.NodeName != "" {
			n, err := r.nodes.Get(pod.Spec.NodeName)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("skipping pod %s/%s for service %s/%s: node %s: %w", pod.Namespace, pod.Name, svc.Namespace, svc.Name, pod.Spec.NodeName, err))
				continue
			}
			node = n
		}
		ports := endpointPorts(svc, pod)
		key := portsKey(ports)
		for _, t := range types {
			ep := podToEndpoint(pod, node, svc, t)
			if len(ep.Addresses) == 0 {
				continue
			}
			set := out[t][key]
			if set == nil {
				set = &portSet{ports: ports, endpoints: map[string]*discoveryv1.Endpoint{}}
				out[t][key] = set
			}
			set.endpoints[endpointKey(ep)] = ep
		}
	}
	return out, skipped
}

// setHints gives every endpoint the hints of the Service's
// trafficDistribution, when every endpoint has a zone; otherwise none.
func setHints(svc *corev1.Service, desired map[discoveryv1.AddressType]map[string]*portSet) {
	td := ptr.Deref(svc.Spec.TrafficDistribution, "")
	if td != corev1.ServiceTrafficDistributionPreferClose && td != corev1.ServiceTrafficDistributionPreferSameZone &&
		td != corev1.ServiceTrafficDistributionPreferSameNode {
		return
	}
	for _, sets := range desired {
		for _, set := range sets {
			for _, ep := range set.endpoints {
				if ep.Zone == nil || *ep.Zone == "" {
					return
				}
			}
		}
	}
	for _, sets := range desired {
		for _, set := range sets {
			for _, ep := range set.endpoints {
				h := &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: *ep.Zone}}}
				if td == corev1.ServiceTrafficDistributionPreferSameNode && ep.NodeName != nil {
					h.ForNodes = []discoveryv1.ForNode{{Name: *ep.NodeName}}
				}
				ep.Hints = h
			}
		}
	}
}

// planAddressType plans the slices of one address type: existing slices
// not owned by svc go, then each port set is planned against the slices
// with those ports, and slices of port sets no longer wanted go.
func (r *reconciler) planAddressType(svc *corev1.Service, t discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, desired map[string]*portSet, p *plan) {
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !ownedBy(s, svc) {
			p.delete = append(p.delete, s)
			continue
		}
		k := portsKey(s.Ports)
		byPorts[k] = append(byPorts[k], s)
	}
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		r.planPortSet(svc, t, byPorts[k], desired[k], p)
		delete(byPorts, k)
	}
	for _, k := range slices.Sorted(maps.Keys(byPorts)) {
		p.delete = append(p.delete, byPorts[k]...)
	}
}

// planPortSet distributes the endpoints of one port set over its slices
// with as few writes as it can.
func (r *reconciler) planPortSet(svc *corev1.Service, t discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, set *portSet, p *plan) {
	remaining := maps.Clone(set.endpoints)
	var updating, unchanged []*discoveryv1.EndpointSlice
	for _, s := range existing {
		var kept []discoveryv1.Endpoint
		changed := false
		for i := range s.Endpoints {
			k := endpointKey(&s.Endpoints[i])
			want, ok := remaining[k]
			if !ok {
				continue
			}
			kept = append(kept, *want)
			if !endpointsEqual(want, &s.Endpoints[i]) {
				changed = true
			}
			delete(remaining, k)
		}
		labels := sliceLabels(svc)
		switch {
		case changed || len(kept) != len(s.Endpoints):
			if len(kept) == 0 {
				p.delete = append(p.delete, s)
				continue
			}
			u := s.DeepCopy()
			u.Labels, u.Endpoints = labels, kept
			updating = append(updating, u)
		case !maps.Equal(s.Labels, labels):
			u := s.DeepCopy()
			u.Labels = labels
			updating = append(updating, u)
		default:
			unchanged = append(unchanged, s)
		}
	}

	keys := slices.Sorted(maps.Keys(remaining))
	pop := func() discoveryv1.Endpoint {
		k := keys[0]
		keys = keys[1:]
		return *remaining[k]
	}
	// Slices being rewritten anyway take new endpoints first, fullest
	// first.
	slices.SortStableFunc(updating, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(len(b.Endpoints), len(a.Endpoints)) })
	for _, u := range updating {
		for len(keys) > 0 && len(u.Endpoints) < r.maxPerSlice {
			u.Endpoints = append(u.Endpoints, pop())
		}
	}
	// What is left goes to an unchanged slice only if it all fits there
	// (one write either way), else to new slices.
	slices.SortStableFunc(unchanged, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(len(b.Endpoints), len(a.Endpoints)) })
	for len(keys) > 0 {
		var fill *discoveryv1.EndpointSlice
		if len(keys) < r.maxPerSlice {
			for i, s := range unchanged {
				if len(s.Endpoints)+len(keys) <= r.maxPerSlice {
					fill = s.DeepCopy()
					unchanged = slices.Delete(unchanged, i, i+1)
					break
				}
			}
		}
		if fill == nil {
			fill = newSlice(svc, t, set.ports)
		}
		for len(keys) > 0 && len(fill.Endpoints) < r.maxPerSlice {
			fill.Endpoints = append(fill.Endpoints, pop())
		}
		if fill.Name != "" {
			updating = append(updating, fill)
		} else {
			p.create = append(p.create, fill)
		}
	}
	p.update = append(p.update, updating...)
}

// apply makes the writes of p: slices to create take over the names of
// slices to delete of the same address type (an update instead of a
// create and a delete), no slice is created for a Service being deleted,
// and every write is tracked.
func (r *reconciler) apply(ctx context.Context, svc *corev1.Service, p *plan, triggerTime time.Time) error {
	logger := klog.FromContext(ctx)
	for i := 0; i < len(p.delete) && len(p.create) > 0; {
		old := p.delete[i]
		last := p.create[len(p.create)-1]
		if !ownedBy(old, svc) || old.AddressType != last.AddressType {
			i++
			continue
		}
		reuse := old.DeepCopy()
		reuse.Labels, reuse.Ports, reuse.Endpoints = last.Labels, last.Ports, last.Endpoints
		p.create = p.create[:len(p.create)-1]
		p.update = append(p.update, reuse)
		p.delete = slices.Delete(p.delete, i, i+1)
	}
	stamp := func(s *discoveryv1.EndpointSlice) {
		if triggerTime.IsZero() {
			return
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[corev1.EndpointsLastChangeTriggerTime] = triggerTime.UTC().Format(time.RFC3339Nano)
	}
	api := r.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	var errs []error
	if svc.DeletionTimestamp == nil {
		for _, s := range p.create {
			stamp(s)
			created, err := api.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				errs = append(errs, fmt.Errorf("create endpoint slice for service %s/%s: %w", svc.Namespace, svc.Name, err))
				continue
			}
			r.tracker.wrote(created)
			logger.V(4).Info("Created endpoint slice", "endpointSlice", klog.KObj(created), "endpoints", len(created.Endpoints))
		}
	}
	for _, s := range p.update {
		stamp(s)
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("update endpoint slice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		r.tracker.wrote(updated)
		logger.V(4).Info("Updated endpoint slice", "endpointSlice", klog.KObj(updated), "endpoints", len(updated.Endpoints))
	}
	for _, s := range p.delete {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete endpoint slice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		r.tracker.deleted(s)
		logger.V(4).Info("Deleted endpoint slice", "endpointSlice", klog.KObj(s))
	}
	return errors.Join(errs...)
}

// sliceLabels are the labels of svc's slices: the Service's own (without
// the reserved keys) plus the service name, the manager and, when
// headless, the headless label.
func sliceLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		if k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService {
			continue
		}
		out[k] = v
	}
	if !endpointutil.IsServiceIPSet(svc) {
		out[corev1.IsHeadlessService] = ""
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	return out
}

func newSlice(svc *corev1.Service, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: svc.Name + "-",
			Namespace:    svc.Namespace,
			Labels:       sliceLabels(svc),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		AddressType: t,
		Ports:       slices.Clone(ports),
		Endpoints:   []discoveryv1.Endpoint{},
	}
}

// isPlaceholderFor reports whether s already is the placeholder want.
func isPlaceholderFor(s, want *discoveryv1.EndpointSlice) bool {
	return len(s.Endpoints) == 0 && len(s.Ports) == 0 && s.AddressType == want.AddressType &&
		maps.Equal(s.Labels, want.Labels) && equality.Semantic.DeepEqual(s.OwnerReferences, want.OwnerReferences)
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, ref := range s.OwnerReferences {
		if ref.UID == svc.UID && ref.Kind == "Service" && ref.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// endpointPorts resolves svc's ports on pod, in the Service's order,
// leaving out ports the pod does not have.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := endpointutil.FindPort(pod, sp)
		if err != nil {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{
			Name:        ptr.To(sp.Name),
			Port:        ptr.To(int32(n)),
			Protocol:    ptr.To(sp.Protocol),
			AppProtocol: sp.AppProtocol,
		})
	}
	return out
}

// portsKey identifies a set of ports whatever their order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	keys := make([]string, 0, len(ports))
	for _, p := range ports {
		keys = append(keys, fmt.Sprintf("%s/%d/%s/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0), ptr.Deref(p.Protocol, ""), ptr.Deref(p.AppProtocol, "")))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// endpointKey identifies an endpoint: its addresses, hostname and target.
func endpointKey(ep *discoveryv1.Endpoint) string {
	addrs := slices.Clone(ep.Addresses)
	slices.Sort(addrs)
	var target string
	if ep.TargetRef != nil {
		target = ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	return strings.Join(addrs, ",") + "|" + ptr.Deref(ep.Hostname, "") + "|" + target
}

// endpointsEqual compares endpoints beyond their key, ignoring the
// resource version of the target.
func endpointsEqual(a, b *discoveryv1.Endpoint) bool {
	ac, bc := a.DeepCopy(), b.DeepCopy()
	if ac.TargetRef != nil {
		ac.TargetRef.ResourceVersion = ""
	}
	if bc.TargetRef != nil {
		bc.TargetRef.ResourceVersion = ""
	}
	return equality.Semantic.DeepEqual(ac, bc)
}

// podToEndpoint describes pod as an endpoint of svc of address type t (no
// addresses when the pod has no IP of that family).
func podToEndpoint(pod *corev1.Pod, node *corev1.Node, svc *corev1.Service, t discoveryv1.AddressType) *discoveryv1.Endpoint {
	serving := endpointutil.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := &discoveryv1.Endpoint{
		Addresses: []string{},
		Conditions: discoveryv1.EndpointConditions{
			Ready:       ptr.To(ready),
			Serving:     ptr.To(serving),
			Terminating: ptr.To(terminating),
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if ip := endpointutil.PodIP(pod, familyOf(t)); ip != "" {
		ep.Addresses = append(ep.Addresses, ip)
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptr.To(pod.Spec.NodeName)
	}
	if node != nil {
		if zone, ok := node.Labels[corev1.LabelTopologyZone]; ok {
			ep.Zone = ptr.To(zone)
		}
	}
	if endpointutil.ShouldSetHostname(pod, svc) {
		ep.Hostname = ptr.To(pod.Spec.Hostname)
	}
	return ep
}

// serviceKey is the tracker's name of svc.
func serviceKey(svc *corev1.Service) types.NamespacedName {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
}

func serviceKeyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
