package network

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Backends of the cross-node pod network (--flannel-backend, k3s's values).
const (
	BackendVXLAN  = "vxlan"
	BackendHostGW = "host-gw"
	BackendNone   = "none"
)

// Node annotations the overlay publishes and reads (flannel's layout under
// k1s's names).
const (
	AnnotationBackend  = "k1s.io/network-backend"
	AnnotationVTEPMAC  = "k1s.io/vxlan-mac"
	AnnotationPublicIP = "k1s.io/public-ip"
)

// routeProtocol marks the routes the overlay owns, so it finds and removes
// its own routes of nodes gone and no others.
const routeProtocol netlink.RouteProtocol = 0x4b

// OverlayConfig configures the route to other nodes' pods.
type OverlayConfig struct {
	// NodeName is this node. Required.
	NodeName string
	// NodeIP is the address other nodes reach this node at (--node-ip).
	// Required.
	NodeIP net.IP
	// Backend is vxlan (default: an overlay that crosses L3 networks),
	// host-gw (a route per node through its address; the nodes must share
	// an L2 segment) or none (--flannel-backend).
	Backend string
	// VNI and Port of the VXLAN device. Default 1 and 8472 (flannel's).
	VNI, Port int
	// Device is the VXLAN device's name. Default "k1s.1".
	Device string
	// Resync re-applies every route this often, repairing what someone
	// removed. Default 30s.
	Resync time.Duration
}

func (c *OverlayConfig) setDefaults() {
	if c.Backend == "" {
		c.Backend = BackendVXLAN
	}
	if c.VNI == 0 {
		c.VNI = 1
	}
	if c.Port == 0 {
		c.Port = 8472
	}
	if c.Device == "" {
		c.Device = "k1s.1"
	}
	if c.Resync == 0 {
		c.Resync = 30 * time.Second
	}
}

// Validate names the flag of each error.
func (c *OverlayConfig) Validate() error {
	c.setDefaults()
	var errs []error
	switch c.Backend {
	case BackendVXLAN, BackendHostGW, BackendNone:
	default:
		errs = append(errs, fmt.Errorf("--flannel-backend: %q is not vxlan, host-gw or none", c.Backend))
	}
	if c.NodeIP == nil || c.NodeIP.To4() == nil {
		errs = append(errs, fmt.Errorf("--node-ip: the pod network needs the node's IPv4 address, have %v", c.NodeIP))
	}
	return errors.Join(errs...)
}

// Overlay routes the pod CIDRs of the other nodes: through a VXLAN device
// (each node publishes its device's MAC on its Node) or, with host-gw,
// through each node's address. Safe for concurrent use; Run once.
type Overlay struct {
	cfg    OverlayConfig
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	synced cache.InformerSynced
	wake   chan struct{}
	mu     sync.Mutex
	link   netlink.Link
	mtu    int
}

// NewOverlay watches Nodes through factory (the caller starts it).
func NewOverlay(cfg OverlayConfig, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Overlay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Overlay{cfg: cfg, client: client, wake: make(chan struct{}, 1)}
	inf := factory.Core().V1().Nodes()
	o.nodes = inf.Lister()
	poke := func(any) {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	reg, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke})
	if err != nil {
		return nil, err
	}
	o.synced = reg.HasSynced
	return o, nil
}

// PodMTU is the MTU pods' interfaces should have: the node interface's
// less the VXLAN header with the vxlan backend. 0 when it cannot be told.
func PodMTU(backend string, nodeIP net.IP) int {
	link, err := linkOfAddress(nodeIP)
	if err != nil {
		return 0
	}
	mtu := link.Attrs().MTU
	if backend == BackendVXLAN || backend == "" {
		mtu -= 50
	}
	return mtu
}

// Run sets the device up (vxlan), publishes this node's overlay address,
// and keeps the routes to every other node until ctx is cancelled. The
// device and routes stay when it returns: pods keep talking across a
// restart; `k1s killall` removes them.
func (o *Overlay) Run(ctx context.Context) error {
	if o.cfg.Backend == BackendNone {
		<-ctx.Done()
		return nil
	}
	logger := klog.FromContext(ctx).WithName("overlay")
	if o.cfg.Backend == BackendVXLAN {
		if err := o.ensureDevice(); err != nil {
			return fmt.Errorf("vxlan device: %w", err)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), o.synced) {
		return nil
	}
	t := time.NewTicker(o.cfg.Resync)
	defer t.Stop()
	for {
		if err := o.publish(ctx); err != nil {
			logger.V(2).Info("Could not publish this node's overlay address yet", "err", err)
		}
		if err := o.reconcile(); err != nil {
			logger.Error(err, "Pod routes to other nodes not all in place")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.wake:
		case <-t.C:
		}
	}
}

// ensureDevice makes the VXLAN device, reusing one that is there, and gives
// it this node's pod CIDR's network address once known (reconcile).
func (o *Overlay) ensureDevice() error {
	parent, err := linkOfAddress(o.cfg.NodeIP)
	if err != nil {
		return err
	}
	o.mtu = parent.Attrs().MTU - 50
	if l, err := netlink.LinkByName(o.cfg.Device); err == nil {
		if v, ok := l.(*netlink.Vxlan); ok && v.VxlanId == o.cfg.VNI && v.SrcAddr.Equal(o.cfg.NodeIP) && v.Port == o.cfg.Port {
			o.link = l
			return netlink.LinkSetUp(l)
		}
		if err := netlink.LinkDel(l); err != nil {
			return fmt.Errorf("replace %s: %w", o.cfg.Device, err)
		}
	}
	mac := make(net.HardwareAddr, 6)
	if _, err := rand.Read(mac); err != nil {
		return err
	}
	mac[0] = (mac[0] | 0x02) &^ 0x01 // locally administered, unicast
	v := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: o.cfg.Device, MTU: o.mtu, HardwareAddr: mac},
		VxlanId:      o.cfg.VNI,
		VtepDevIndex: parent.Attrs().Index,
		SrcAddr:      o.cfg.NodeIP,
		Port:         o.cfg.Port,
		Learning:     false,
	}
	if err := netlink.LinkAdd(v); err != nil {
		return fmt.Errorf("add %s: %w", o.cfg.Device, err)
	}
	l, err := netlink.LinkByName(o.cfg.Device)
	if err != nil {
		return err
	}
	o.link = l
	return netlink.LinkSetUp(l)
}

// publish writes this node's backend, address and VTEP MAC on its Node.
func (o *Overlay) publish(ctx context.Context) error {
	node, err := o.nodes.Get(o.cfg.NodeName)
	if err != nil {
		return err
	}
	want := map[string]string{AnnotationBackend: o.cfg.Backend, AnnotationPublicIP: o.cfg.NodeIP.String()}
	if o.link != nil {
		want[AnnotationVTEPMAC] = o.link.Attrs().HardwareAddr.String()
	}
	changed := false
	for k, v := range want {
		if node.Annotations[k] != v {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	_, err = o.client.CoreV1().Nodes().Patch(ctx, o.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// nodeRoute is one remote node's pod CIDR and how to reach it.
type nodeRoute struct {
	cidr   *net.IPNet
	nodeIP net.IP
	mac    net.HardwareAddr // vxlan
}

func (o *Overlay) desired() (own *net.IPNet, routes []nodeRoute, err error) {
	nodes, err := o.nodes.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	for _, n := range nodes {
		if n.Spec.PodCIDR == "" {
			continue
		}
		_, cidr, err := net.ParseCIDR(n.Spec.PodCIDR)
		if err != nil || cidr.IP.To4() == nil {
			continue
		}
		if n.Name == o.cfg.NodeName {
			own = cidr
			continue
		}
		ip := net.ParseIP(n.Annotations[AnnotationPublicIP])
		if ip == nil {
			ip = internalIP(n)
		}
		if ip == nil {
			continue
		}
		r := nodeRoute{cidr: cidr, nodeIP: ip}
		if o.cfg.Backend == BackendVXLAN {
			if n.Annotations[AnnotationBackend] != BackendVXLAN {
				continue
			}
			if r.mac, err = net.ParseMAC(n.Annotations[AnnotationVTEPMAC]); err != nil {
				continue
			}
		}
		routes = append(routes, r)
	}
	return own, routes, nil
}

func internalIP(n *corev1.Node) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip := net.ParseIP(a.Address); ip != nil && ip.To4() != nil {
				return ip
			}
		}
	}
	return nil
}

// reconcile makes the kernel's routes, neighbours and forwarding entries
// match the nodes, and removes the overlay's routes of nodes gone.
func (o *Overlay) reconcile() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	own, routes, err := o.desired()
	if err != nil {
		return err
	}
	var errs []error
	if o.cfg.Backend == BackendVXLAN && own != nil {
		// The device holds this node's pod network address, as flannel.1.
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: own.IP, Mask: net.CIDRMask(32, 32)}}
		if err := netlink.AddrReplace(o.link, addr); err != nil {
			errs = append(errs, fmt.Errorf("address %s on %s: %w", addr.IPNet, o.cfg.Device, err))
		}
	}
	keep := map[string]bool{}
	for _, r := range routes {
		keep[r.cidr.String()] = true
		var nr netlink.Route
		switch o.cfg.Backend {
		case BackendHostGW:
			nr = netlink.Route{Dst: r.cidr, Gw: r.nodeIP, Protocol: routeProtocol}
		case BackendVXLAN:
			gw := r.cidr.IP // the remote device's address
			if err := netlink.NeighSet(&netlink.Neigh{LinkIndex: o.link.Attrs().Index, State: netlink.NUD_PERMANENT,
				Type: unix.RTN_UNICAST, IP: gw, HardwareAddr: r.mac}); err != nil {
				errs = append(errs, fmt.Errorf("neighbour %s: %w", gw, err))
			}
			if err := netlink.NeighSet(&netlink.Neigh{LinkIndex: o.link.Attrs().Index, Family: unix.AF_BRIDGE,
				State: netlink.NUD_PERMANENT, Flags: netlink.NTF_SELF, IP: r.nodeIP, HardwareAddr: r.mac}); err != nil {
				errs = append(errs, fmt.Errorf("forwarding entry of %s: %w", r.nodeIP, err))
			}
			nr = netlink.Route{LinkIndex: o.link.Attrs().Index, Dst: r.cidr, Gw: gw, Flags: int(netlink.FLAG_ONLINK), Protocol: routeProtocol}
		}
		if err := netlink.RouteReplace(&nr); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r.cidr, err))
		}
	}
	// Routes of nodes gone.
	have, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, r := range have {
		if r.Dst != nil && !keep[r.Dst.String()] {
			if err := netlink.RouteDel(&r); err != nil {
				errs = append(errs, fmt.Errorf("remove route %s: %w", r.Dst, err))
			}
		}
	}
	return errors.Join(errs...)
}

// linkOfAddress is the interface holding ip.
func linkOfAddress(ip net.IP) (netlink.Link, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if a.IP.Equal(ip) {
			return netlink.LinkByIndex(a.LinkIndex)
		}
	}
	return nil, fmt.Errorf("no interface holds %s (--node-ip)", ip)
}

// RemoveOverlay deletes the VXLAN device and the overlay's routes (k1s
// killall). Missing ones are fine.
func RemoveOverlay(device string) error {
	var errs []error
	if l, err := netlink.LinkByName(device); err == nil {
		if _, ok := l.(*netlink.Vxlan); ok {
			errs = append(errs, netlink.LinkDel(l))
		}
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err == nil {
		for _, r := range routes {
			errs = append(errs, netlink.RouteDel(&r))
		}
	}
	return errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })...)
}
