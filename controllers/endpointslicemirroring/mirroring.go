// Package endpointslicemirroring mirrors Endpoints that users write by hand
// (for a Service without a selector) into EndpointSlices, as upstream's
// endpointslice-mirroring controller: the service proxy and DNS read only
// EndpointSlices, so without it a Service backed by custom Endpoints would
// carry no traffic.
//
// An Endpoints object is mirrored when its Service exists and has no
// selector, and the Endpoints carry neither the
// endpointslice.kubernetes.io/skip-mirror=true label nor a leader-election
// annotation. Each group of ports and address family becomes one slice,
// owned by the Endpoints, labelled kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io,
// with the Endpoints' other labels and annotations; addresses become ready
// (or not-ready) endpoints, with their hostname, node and target; at most
// 1000 addresses of each subset are mirrored, invalid IPs are skipped, and
// both are reported as events. Mirrored slices go when the Endpoints or the
// Service go, or the Service gains a selector.
package endpointslicemirroring

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/endpoints"
	"github.com/k1s/k1s/controllers/manager"
)

// ControllerName is the managed-by label value of mirrored slices.
const ControllerName = "endpointslicemirroring-controller.k8s.io"

// MaxEndpointsPerSubset is how many addresses of one subset are mirrored
// (upstream's --mirroring-max-endpoints-per-subset default).
const MaxEndpointsPerSubset = 1000

// leaderAnnotation marks Endpoints used as leader-election locks.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// Controller mirrors Endpoints into EndpointSlices. Run may be called once.
type Controller struct {
	client    kubernetes.Interface
	endpoints corelisters.EndpointsLister
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
}

// New watches Endpoints, Services and EndpointSlices through informers the
// caller starts.
func New(client kubernetes.Interface, eps coreinformers.EndpointsInformer, svcs coreinformers.ServiceInformer,
	slices discoveryinformers.EndpointSliceInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:    client,
		endpoints: eps.Lister(),
		services:  svcs.Lister(),
		slices:    slices.Lister(),
		recorder:  recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint_slice_mirroring", Clock: clk}),
	}
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *discoveryv1.EndpointSlice:
			if o.Labels[discoveryv1.LabelManagedBy] == ControllerName && o.Labels[discoveryv1.LabelServiceName] != "" {
				c.queue.Add(o.Namespace + "/" + o.Labels[discoveryv1.LabelServiceName])
			}
		case metav1.Object:
			c.queue.Add(o.GetNamespace() + "/" + o.GetName())
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
	for name, inf := range map[string]cache.SharedIndexInformer{"endpoints": eps.Informer(), "services": svcs.Informer(), "endpoint slices": slices.Informer()} {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return nil, fmt.Errorf("endpointslice mirroring: watch %s: %w", name, err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Descriptor is the controller as kube-controller-manager names it.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "endpointslice-mirroring-controller",
		Aliases:        []string{"endpointslicemirroring"},
		ServiceAccount: "endpointslicemirroring-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			f := cc.InformerFactory
			c, err := New(client, f.Core().V1().Endpoints(), f.Core().V1().Services(), f.Discovery().V1().EndpointSlices(),
				cc.EventRecorder("endpoint-slice-mirroring-controller"), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, 5) })
			return nil
		},
	}
}

// Run syncs with workers until ctx is cancelled.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return nil
	}
	for range workers {
		go func() {
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Mirroring Endpoints failed; retrying", "endpoints", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName}))
	if err != nil {
		return err
	}
	ep, err := c.endpoints.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteAll(ctx, existing)
	}
	if err != nil {
		return err
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteAll(ctx, existing)
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector != nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" || ep.Annotations[leaderAnnotation] != "" {
		return c.deleteAll(ctx, existing)
	}
	return c.reconcile(ctx, ep, existing)
}

func (c *Controller) deleteAll(ctx context.Context, existing []*discoveryv1.EndpointSlice) error {
	for _, s := range existing {
		if err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete mirrored slice %s: %w", s.Name, err)
		}
	}
	return nil
}

// group is one desired slice: an address type and a set of ports.
type group struct {
	addrType  discoveryv1.AddressType
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

func groupKey(t discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = ptr.Deref(p.Name, "") + "/" + string(ptr.Deref(p.Protocol, corev1.ProtocolTCP)) + "/" + strconv.Itoa(int(ptr.Deref(p.Port, 0))) +
			"/" + ptr.Deref(p.AppProtocol, "")
	}
	sort.Strings(parts)
	return string(t) + "|" + strings.Join(parts, ",")
}

// desired computes the slices the Endpoints mirror to.
func (c *Controller) desired(ep *corev1.Endpoints) map[string]*group {
	out := map[string]*group{}
	invalid, skipped := 0, 0
	for _, subset := range endpoints.Repack(ep.Subsets) {
		ports := make([]discoveryv1.EndpointPort, len(subset.Ports))
		for i, p := range subset.Ports {
			ports[i] = discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: ptr.To(p.Protocol), AppProtocol: p.AppProtocol}
			if p.Protocol == "" {
				ports[i].Protocol = ptr.To(corev1.ProtocolTCP)
			}
		}
		added := 0
		add := func(a corev1.EndpointAddress, ready bool) {
			if added >= MaxEndpointsPerSubset {
				skipped++
				return
			}
			ip := net.ParseIP(a.IP)
			if ip == nil {
				invalid++
				return
			}
			t := discoveryv1.AddressTypeIPv4
			if ip.To4() == nil {
				t = discoveryv1.AddressTypeIPv6
			}
			k := groupKey(t, ports)
			g := out[k]
			if g == nil {
				g = &group{addrType: t, ports: ports}
				out[k] = g
			}
			e := discoveryv1.Endpoint{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
				NodeName: a.NodeName, TargetRef: a.TargetRef}
			if a.Hostname != "" {
				e.Hostname = ptr.To(a.Hostname)
			}
			g.endpoints = append(g.endpoints, e)
			added++
		}
		for _, a := range subset.Addresses {
			add(a, true)
		}
		for _, a := range subset.NotReadyAddresses {
			add(a, false)
		}
	}
	if invalid > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "InvalidIPAddress", "Skipped %d invalid IP addresses when mirroring to EndpointSlices", invalid)
	}
	if skipped > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "TooManyAddressesToMirror",
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", MaxEndpointsPerSubset, skipped)
	}
	return out
}

// meta is the labels and annotations a mirrored slice carries.
func meta(ep *corev1.Endpoints) (map[string]string, map[string]string) {
	l := map[string]string{}
	for k, v := range ep.Labels {
		l[k] = v
	}
	l[discoveryv1.LabelServiceName] = ep.Name
	l[discoveryv1.LabelManagedBy] = ControllerName
	a := map[string]string{}
	for k, v := range ep.Annotations {
		if k == corev1.EndpointsLastChangeTriggerTime || k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		a[k] = v
	}
	return l, a
}

func (c *Controller) reconcile(ctx context.Context, ep *corev1.Endpoints, existing []*discoveryv1.EndpointSlice) error {
	want := c.desired(ep)
	lbls, annos := meta(ep)
	owner := metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := groupKey(s.AddressType, s.Ports)
		byKey[k] = append(byKey[k], s)
	}
	slicesAPI := c.client.DiscoveryV1().EndpointSlices(ep.Namespace)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := want[k]
		have := byKey[k]
		delete(byKey, k)
		if len(have) == 0 {
			s := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{GenerateName: prefix(ep.Name), Namespace: ep.Namespace, Labels: lbls, Annotations: annos,
					OwnerReferences: []metav1.OwnerReference{*owner}},
				AddressType: g.addrType, Ports: g.ports, Endpoints: g.endpoints,
			}
			if _, err := slicesAPI.Create(ctx, s, metav1.CreateOptions{}); err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("create mirrored slice: %w", err)
			}
			continue
		}
		// Keep one slice per group; extras (a second create racing the
		// informer) go.
		keep := have[0]
		for _, extra := range have[1:] {
			if err := slicesAPI.Delete(ctx, extra.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete extra mirrored slice %s: %w", extra.Name, err)
			}
		}
		if apiequality.Semantic.DeepEqual(keep.Endpoints, g.endpoints) && apiequality.Semantic.DeepEqual(keep.Labels, lbls) &&
			annotationsEqual(keep.Annotations, annos) {
			continue
		}
		upd := keep.DeepCopy()
		upd.Endpoints, upd.Labels, upd.Annotations = g.endpoints, lbls, annos
		if _, err := slicesAPI.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update mirrored slice %s: %w", keep.Name, err)
		}
	}
	for _, stale := range byKey {
		if err := c.deleteAll(ctx, stale); err != nil {
			return err
		}
	}
	return nil
}

func annotationsEqual(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// prefix is the generateName of a mirrored slice: the Service's name, cut
// so the generated name stays valid.
func prefix(name string) string {
	if len(name) > 57 {
		name = name[:57]
	}
	return name + "-"
}
