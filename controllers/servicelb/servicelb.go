// Package servicelb is k1s's ServiceLB, after k3s's: a Service of type
// LoadBalancer gets the addresses of the cluster's nodes as its
// load-balancer ingress, and every node's service proxy answers on them at
// the Service's port. No pod backs it (k3s runs a klipper-lb DaemonSet;
// k1s's proxy already forwards load-balancer addresses).
//
// Which nodes: Ready, schedulable nodes; when any node carries the label
// svccontroller.k3s.cattle.io/enablelb=true, only those (k3s's label).
// Their ExternalIP addresses when they have some, else their InternalIP.
// A Service that names a spec.loadBalancerClass belongs to another
// controller and is left alone. Two Services cannot both take one port and
// protocol on the nodes: the one created later stays pending, with an
// event, until the port is free (k3s's behaviour, where its pod cannot
// schedule).
package servicelb

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
)

// LabelEnableLB limits ServiceLB to the nodes that carry it with "true".
const LabelEnableLB = "svccontroller.k3s.cattle.io/enablelb"

// Controller writes the load-balancer status of LoadBalancer Services.
// Create it with New; Run may be called once.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
}

// New watches services and nodes (informers the caller starts).
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, nodes coreinformers.NodeInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		client:   client,
		services: services.Lister(),
		nodes:    nodes.Lister(),
		recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "servicelb", Clock: clk}),
	}
	sreg, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			c.enqueue(cur)
			// A Service leaving a port may let a pending one have it.
			if o, ok := old.(*corev1.Service); ok && o.Spec.Type == corev1.ServiceTypeLoadBalancer {
				c.enqueueAll()
			}
		},
		DeleteFunc: func(any) { c.enqueueAll() },
	})
	if err != nil {
		return nil, fmt.Errorf("servicelb: watch services: %w", err)
	}
	nreg, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueueAll() },
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.Node), cur.(*corev1.Node)
			if !slices.Equal(nodeAddresses([]*corev1.Node{o}), nodeAddresses([]*corev1.Node{n})) || eligible(o) != eligible(n) ||
				o.Labels[LabelEnableLB] != n.Labels[LabelEnableLB] {
				c.enqueueAll()
			}
		},
		DeleteFunc: func(any) { c.enqueueAll() },
	})
	if err != nil {
		return nil, fmt.Errorf("servicelb: watch nodes: %w", err)
	}
	c.synced = []cache.InformerSynced{sreg.HasSynced, nreg.HasSynced}
	return c, nil
}

// Descriptor is the controller as `--controllers` names it, acting as
// kube-system/service-lb-controller. --disable=servicelb leaves it out.
func Descriptor() manager.Controller {
	return manager.Controller{
		Name:           "service-lb-controller",
		Aliases:        []string{"servicelb"},
		ServiceAccount: "service-lb-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(client, cc.InformerFactory.Core().V1().Services(), cc.InformerFactory.Core().V1().Nodes(),
				cc.EventRecorder("service-lb-controller"), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, 2) })
			return nil
		},
	}
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueAll() {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) > 0 {
			c.enqueue(s)
		}
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
		klog.FromContext(ctx).V(2).Info("ServiceLB sync failed; retrying", "service", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// managed: a LoadBalancer Service without a class of its own.
func managed(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && (s.Spec.LoadBalancerClass == nil || *s.Spec.LoadBalancerClass == "")
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var want []corev1.LoadBalancerIngress
	switch {
	case managed(svc):
		if holder := c.portHolder(svc); holder != nil {
			c.recorder.Eventf(svc, corev1.EventTypeWarning, "PortInUse",
				"Load-balancer port already taken on the nodes by Service %s/%s; waiting for it", holder.Namespace, holder.Name)
			want = nil
		} else {
			want = c.ingress()
		}
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer:
		return nil // another controller's class
	default:
		want = nil // no longer a LoadBalancer: clear what ServiceLB wrote
	}
	if apiequality.Semantic.DeepEqual(svc.Status.LoadBalancer.Ingress, want) ||
		(len(want) == 0 && len(svc.Status.LoadBalancer.Ingress) == 0) {
		return nil
	}
	upd := svc.DeepCopy()
	upd.Status.LoadBalancer.Ingress = want
	if _, err := c.client.CoreV1().Services(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update load-balancer status: %w", err)
	}
	if len(want) > 0 {
		ips := make([]string, len(want))
		for i, w := range want {
			ips[i] = w.IP
		}
		c.recorder.Eventf(svc, corev1.EventTypeNormal, "UpdatedLoadBalancer", "Load-balancer addresses: %s", strings.Join(ips, ", "))
	}
	return nil
}

// portHolder returns the older LoadBalancer Service that already takes one
// of svc's ports and protocols on the nodes, if any.
func (c *Controller) portHolder(svc *corev1.Service) *corev1.Service {
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return nil
	}
	slices.SortFunc(all, func(a, b *corev1.Service) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, other := range all {
		if other.UID == svc.UID && other.Namespace == svc.Namespace && other.Name == svc.Name {
			return nil // every older one was checked
		}
		if !managed(other) {
			continue
		}
		for _, p := range svc.Spec.Ports {
			for _, q := range other.Spec.Ports {
				if p.Port == q.Port && protocol(p.Protocol) == protocol(q.Protocol) {
					return other
				}
			}
		}
	}
	return nil
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// ingress is the eligible nodes' addresses, sorted.
func (c *Controller) ingress() []corev1.LoadBalancerIngress {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var pool []*corev1.Node
	labelled := false
	for _, n := range nodes {
		if n.Labels[LabelEnableLB] == "true" {
			labelled = true
		}
	}
	for _, n := range nodes {
		if eligible(n) && (!labelled || n.Labels[LabelEnableLB] == "true") {
			pool = append(pool, n)
		}
	}
	var out []corev1.LoadBalancerIngress
	for _, ip := range nodeAddresses(pool) {
		out = append(out, corev1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)})
	}
	return out
}

func eligible(n *corev1.Node) bool {
	if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeAddresses are the nodes' external addresses when any node has one,
// else their internal ones; sorted, without duplicates.
func nodeAddresses(nodes []*corev1.Node) []string {
	pick := func(t corev1.NodeAddressType) []string {
		var out []string
		for _, n := range nodes {
			for _, a := range n.Status.Addresses {
				if a.Type == t && net.ParseIP(a.Address) != nil && !slices.Contains(out, a.Address) {
					out = append(out, a.Address)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	if ext := pick(corev1.NodeExternalIP); len(ext) > 0 {
		return ext
	}
	return pick(corev1.NodeInternalIP)
}
