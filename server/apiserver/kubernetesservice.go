package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// kubernetesService keeps default/kubernetes (service, endpoints and
// endpoint slice) pointing at the apiservers, as kube-apiserver's lease
// endpoint reconciler does: each apiserver keeps a lease for its address
// (leases) and writes the endpoints from every live lease, so with several
// servers each is listed, and one that stops drops out once its lease
// ends (at once when it stops cleanly). Agents read the endpoints to learn
// the servers they may fail over to.
type kubernetesService struct {
	client    kubernetes.Interface
	clusterIP net.IP
	address   net.IP
	port      int32
	interval  time.Duration
	// leases holds the apiservers' addresses; nil: this one alone.
	leases endpointLeases
}

// endpointLeases are the apiservers' leases on their addresses.
type endpointLeases interface {
	// Update renews this apiserver's lease on ip.
	Update(ctx context.Context, ip net.IP) error
	// List returns the addresses whose lease is live.
	List(ctx context.Context) ([]net.IP, error)
	// Remove ends the lease on ip.
	Remove(ctx context.Context, ip net.IP) error
}

const kubernetesName = "kubernetes"

func (k *kubernetesService) run(ctx context.Context) {
	if k.address.IsLoopback() {
		klog.FromContext(ctx).Info("Advertise address is loopback: the kubernetes service has no endpoints; set --advertise-address or --node-ip", "address", k.address)
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := k.reconcile(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to reconcile the kubernetes service")
		}
	}, k.interval)
	if k.leases == nil || k.address.IsLoopback() {
		return
	}
	// Stopping: the other apiservers list this one no more. The lease
	// goes first (they reconcile from the leases); the endpoints follow
	// at once if this apiserver still answers.
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := k.leases.Remove(stop, k.address); err != nil {
		klog.FromContext(ctx).V(2).Info("Could not end this apiserver's endpoint lease", "err", err)
		return
	}
	if ips, err := k.leases.List(stop); err == nil {
		if ips = k.usable(ips, false); len(ips) > 0 {
			_ = k.endpoints(stop, ips)
			_ = k.endpointSlice(stop, ips)
		}
	}
}

func (k *kubernetesService) reconcile(ctx context.Context) error {
	if err := k.service(ctx); err != nil {
		return err
	}
	if k.address.IsLoopback() {
		// Endpoints may not hold loopback addresses: pods cannot reach a
		// loopback apiserver through the service anyway.
		return nil
	}
	ips, err := k.addresses(ctx)
	if err != nil {
		return err
	}
	if err := k.endpoints(ctx, ips); err != nil {
		return err
	}
	return k.endpointSlice(ctx, ips)
}

// addresses renews this apiserver's lease and returns the addresses of
// the live ones, sorted, this one's always included.
func (k *kubernetesService) addresses(ctx context.Context) ([]net.IP, error) {
	if k.leases == nil {
		return []net.IP{k.address}, nil
	}
	if err := k.leases.Update(ctx, k.address); err != nil {
		return nil, fmt.Errorf("renew the apiserver's endpoint lease: %w", err)
	}
	ips, err := k.leases.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the apiservers' endpoint leases: %w", err)
	}
	return k.usable(ips, true), nil
}

// usable keeps the addresses of this apiserver's family that are not
// loopback, sorted, with this one's or without.
func (k *kubernetesService) usable(ips []net.IP, self bool) []net.IP {
	family := k.address.To4() != nil
	var out []net.IP
	if self {
		out = append(out, k.address)
	}
	for _, ip := range ips {
		// One address family per slice (and per upstream's endpoints).
		if !ip.Equal(k.address) && (ip.To4() != nil) == family && !ip.IsLoopback() {
			out = append(out, ip)
		}
	}
	slices.SortFunc(out, func(a, b net.IP) int { return bytes.Compare(a.To16(), b.To16()) })
	return out
}

func (k *kubernetesService) service(ctx context.Context) error {
	svcs := k.client.CoreV1().Services(metav1.NamespaceDefault)
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:   kubernetesName,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: k.clusterIP.String(),
			Ports: []corev1.ServicePort{{
				Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(k.port),
			}},
			SessionAffinity: corev1.ServiceAffinityNone,
			Type:            corev1.ServiceTypeClusterIP,
		},
	}
	cur, err := svcs.Get(ctx, kubernetesName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = svcs.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create service default/kubernetes: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get service default/kubernetes: %w", err)
	}
	if len(cur.Spec.Ports) == 1 && cur.Spec.Ports[0].Port == 443 && cur.Spec.Ports[0].TargetPort == want.Spec.Ports[0].TargetPort {
		return nil
	}
	cur.Spec.Ports = want.Spec.Ports
	_, err = svcs.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func (k *kubernetesService) endpoints(ctx context.Context, ips []net.IP) error {
	eps := k.client.CoreV1().Endpoints(metav1.NamespaceDefault)
	var addrs []corev1.EndpointAddress
	for _, ip := range ips {
		addrs = append(addrs, corev1.EndpointAddress{IP: ip.String()})
	}
	subsets := []corev1.EndpointSubset{{
		Addresses: addrs,
		Ports:     []corev1.EndpointPort{{Name: "https", Port: k.port, Protocol: corev1.ProtocolTCP}},
	}}
	cur, err := eps.Get(ctx, kubernetesName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = eps.Create(ctx, &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: kubernetesName, Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
			Subsets:    subsets,
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(cur.Subsets, subsets) {
		return nil
	}
	cur.Subsets = subsets
	_, err = eps.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func (k *kubernetesService) endpointSlice(ctx context.Context, ips []net.IP) error {
	api := k.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	addrType := discoveryv1.AddressTypeIPv4
	if k.address.To4() == nil {
		addrType = discoveryv1.AddressTypeIPv6
	}
	var endpoints []discoveryv1.Endpoint
	for _, ip := range ips {
		endpoints = append(endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	want := discoveryv1.EndpointSlice{
		AddressType: addrType,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(k.port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	cur, err := api.Get(ctx, kubernetesName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		want.ObjectMeta = metav1.ObjectMeta{Name: kubernetesName, Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesName}}
		_, err = api.Create(ctx, &want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if cur.AddressType == want.AddressType && apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) {
		return nil
	}
	if cur.AddressType != want.AddressType {
		// addressType is immutable: replace the slice.
		if err := api.Delete(ctx, kubernetesName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return k.endpointSlice(ctx, ips)
	}
	cur.Endpoints, cur.Ports = want.Endpoints, want.Ports
	_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// etcdLeases keeps the apiservers' endpoint leases in etcd, as
// kube-apiserver's lease reconciler does: a key per address under
// <prefix>/masterleases/ bound to an etcd lease of ttl.
type etcdLeases struct {
	client *clientv3.Client
	prefix string // ends in "/"
	ttl    time.Duration

	mu    sync.Mutex
	lease clientv3.LeaseID
}

func newEtcdLeases(client *clientv3.Client, etcdPrefix string) *etcdLeases {
	return &etcdLeases{client: client, prefix: strings.TrimSuffix(etcdPrefix, "/") + "/masterleases/", ttl: 15 * time.Second}
}

func (l *etcdLeases) Update(ctx context.Context, ip net.IP) error {
	// Renewing the lease the key is already on writes nothing to etcd's
	// disk (a keep-alive is no raft entry); granting a new lease, putting
	// the key on it and revoking the old one are three fsynced entries
	// every reconcile, which an idle edge server on an SD card pays for
	// all day. Only a lost lease or key costs those writes.
	key := l.prefix + ip.String()
	l.mu.Lock()
	cur := l.lease
	l.mu.Unlock()
	if cur != 0 {
		if _, err := l.client.KeepAliveOnce(ctx, cur); err == nil {
			resp, err := l.client.Get(ctx, key)
			if err == nil && len(resp.Kvs) == 1 && clientv3.LeaseID(resp.Kvs[0].Lease) == cur && string(resp.Kvs[0].Value) == ip.String() {
				return nil
			}
		}
	}
	lease, err := l.client.Grant(ctx, int64(l.ttl/time.Second))
	if err != nil {
		return err
	}
	if _, err := l.client.Put(ctx, key, ip.String(), clientv3.WithLease(lease.ID)); err != nil {
		return err
	}
	l.mu.Lock()
	old := l.lease
	l.lease = lease.ID
	l.mu.Unlock()
	if old != 0 {
		// Its key is on the new lease now.
		_, _ = l.client.Revoke(ctx, old)
	}
	return nil
}

func (l *etcdLeases) List(ctx context.Context) ([]net.IP, error) {
	resp, err := l.client.Get(ctx, l.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []net.IP
	for _, kv := range resp.Kvs {
		if ip := net.ParseIP(string(kv.Value)); ip != nil {
			out = append(out, ip)
		}
	}
	return out, nil
}

func (l *etcdLeases) Remove(ctx context.Context, ip net.IP) error {
	_, err := l.client.Delete(ctx, l.prefix+ip.String())
	return err
}
