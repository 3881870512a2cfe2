package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/apis/core"
)

// Allocators are a service CIDR's and a node-port range's allocators.
type Allocators struct {
	IPs   *IPAllocator
	Ports *PortAllocator

	repairMu sync.Mutex
	// suspects are allocations the last repair pass found unowned.
	suspects map[string]int64
}

var serviceKind = corev1.SchemeGroupVersion.WithKind("Service").GroupKind()

func owner(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

func needsHealthCheckPort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// transaction records allocations so a failed create or update can undo them.
type transaction struct {
	a     *Allocators
	ips   []net.IP
	ports []int
}

func (t *transaction) rollback(ctx context.Context) {
	for _, ip := range t.ips {
		_ = t.a.IPs.ReleaseIP(ctx, ip)
	}
	for _, p := range t.ports {
		_ = t.a.Ports.ReleasePort(ctx, p)
	}
}

func (t *transaction) allocateIP(ctx context.Context, svc *corev1.Service) error {
	path := field.NewPath("spec", "clusterIPs")
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	if svc.Spec.ClusterIP == "" {
		ip, err := t.a.IPs.AllocateNextIP(ctx, owner(svc))
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a service IP: %w", err))
		}
		t.ips = append(t.ips, ip)
		svc.Spec.ClusterIP = ip.String()
		svc.Spec.ClusterIPs = []string{ip.String()}
		return nil
	}
	ip := net.ParseIP(svc.Spec.ClusterIP)
	if ip == nil {
		return nil // validation reports it
	}
	if err := t.a.IPs.AllocateIP(ctx, ip, owner(svc)); err != nil {
		return invalid(svc, field.Invalid(path, svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", ip, ipMessage(err))))
	}
	t.ips = append(t.ips, ip)
	svc.Spec.ClusterIPs = []string{ip.String()}
	return nil
}

func ipMessage(err error) string {
	var nr *ErrNotInRange
	if errors.As(err, &nr) {
		return fmt.Sprintf("the provided IP is not in the valid range. The range of valid IPs is %s", nr.ValidRange)
	}
	if errors.Is(err, ErrAllocated) {
		return "provided IP is already allocated"
	}
	return err.Error()
}

func portMessage(err error) string {
	var nr *ErrNotInRange
	if errors.As(err, &nr) {
		return fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", nr.ValidRange)
	}
	if errors.Is(err, ErrAllocated) {
		return "provided port is already allocated"
	}
	return err.Error()
}

func invalid(svc *corev1.Service, errs ...*field.Error) error {
	return apierrors.NewInvalid(serviceKind, svc.Name, errs)
}

// allocatePorts gives every port a node port, keeping those in keep (ports the
// service already owns) and allocating the rest.
func (t *transaction) allocatePorts(ctx context.Context, svc *corev1.Service, keep map[int]bool) error {
	taken := map[int]bool{}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		port := int(p.NodePort)
		switch {
		case port == 0:
			n, err := t.a.Ports.AllocateNextPort(ctx, owner(svc))
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a node port: %w", err))
			}
			t.ports = append(t.ports, n)
			p.NodePort = int32(n)
		case keep[port] || taken[port]:
			// Already ours, or shared by two ports of one service (TCP and UDP).
		default:
			if err := t.a.Ports.AllocatePort(ctx, port, owner(svc)); err != nil {
				return invalid(svc, field.Invalid(path, port, portMessage(err)))
			}
			t.ports = append(t.ports, port)
		}
		taken[int(p.NodePort)] = true
	}
	if needsHealthCheckPort(svc) {
		path := field.NewPath("spec", "healthCheckNodePort")
		port := int(svc.Spec.HealthCheckNodePort)
		switch {
		case port == 0:
			n, err := t.a.Ports.AllocateNextPort(ctx, owner(svc))
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a health check node port: %w", err))
			}
			t.ports = append(t.ports, n)
			svc.Spec.HealthCheckNodePort = int32(n)
		case keep[port] || taken[port]:
		default:
			if err := t.a.Ports.AllocatePort(ctx, port, owner(svc)); err != nil {
				return invalid(svc, field.Invalid(path, port, portMessage(err)))
			}
			t.ports = append(t.ports, port)
		}
	}
	return nil
}

func nodePorts(svc *corev1.Service) map[int]bool {
	out := map[int]bool{}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			out[int(p.NodePort)] = true
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		out[int(svc.Spec.HealthCheckNodePort)] = true
	}
	return out
}

// Install sets the store's hooks: allocate on create and on type changes,
// release on delete and when a type no longer needs an allocation.
func (a *Allocators) Install(store *genericregistry.Store) {
	store.BeginCreate = a.beginCreate
	store.BeginUpdate = a.beginUpdate
	store.AfterDelete = a.afterDelete
}

func finish(t *transaction) genericregistry.FinishFunc {
	return func(ctx context.Context, success bool) {
		if !success {
			t.rollback(context.WithoutCancel(ctx))
		}
	}
}

func (a *Allocators) beginCreate(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
	svc := obj.(*corev1.Service)
	core.NormalizeServiceClusterIPs(svc, nil)
	core.DefaultServiceIPFamilies(svc)
	t := &transaction{a: a}
	if isDryRun(options.DryRun) {
		return func(context.Context, bool) {}, nil
	}
	if needsClusterIP(svc) {
		if err := t.allocateIP(ctx, svc); err != nil {
			t.rollback(ctx)
			return nil, err
		}
	}
	if needsNodePorts(svc) {
		if err := t.allocatePorts(ctx, svc, nil); err != nil {
			t.rollback(ctx)
			return nil, err
		}
	}
	return finish(t), nil
}

func (a *Allocators) beginUpdate(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	patchAllocatedValues(svc, oldSvc)
	core.NormalizeServiceClusterIPs(svc, oldSvc)
	core.DefaultServiceIPFamilies(svc)
	t := &transaction{a: a}
	var release transaction
	release.a = a
	if isDryRun(options.DryRun) {
		return func(context.Context, bool) {}, nil
	}

	// Cluster IP: kept when the service keeps one; allocated when it gains
	// one (ExternalName → ClusterIP); released when it loses it.
	switch {
	case needsClusterIP(svc) && needsClusterIP(oldSvc):
		// Kept (patchAllocatedValues); validation refuses a change.
	case needsClusterIP(svc):
		if err := t.allocateIP(ctx, svc); err != nil {
			t.rollback(ctx)
			return nil, err
		}
	case needsClusterIP(oldSvc):
		if ip := net.ParseIP(oldSvc.Spec.ClusterIP); ip != nil {
			release.ips = append(release.ips, ip)
		}
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
	}

	// Node ports: a port keeps its node port unless the user changed it.
	oldPorts := map[int]bool{}
	if needsNodePorts(oldSvc) {
		oldPorts = nodePorts(oldSvc)
	}
	if needsNodePorts(svc) {
		if err := t.allocatePorts(ctx, svc, oldPorts); err != nil {
			t.rollback(ctx)
			return nil, err
		}
	} else {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
		svc.Spec.HealthCheckNodePort = 0
	}
	kept := nodePorts(svc)
	for p := range oldPorts {
		if !kept[p] || !needsNodePorts(svc) {
			release.ports = append(release.ports, p)
		}
	}
	return func(ctx context.Context, success bool) {
		if success {
			release.rollback(context.WithoutCancel(ctx))
		} else {
			t.rollback(context.WithoutCancel(ctx))
		}
	}, nil
}

// patchAllocatedValues keeps what the old service was given when an update
// leaves it out, as upstream does: a replace without clusterIP or nodePort
// keeps them rather than reallocating.
func patchAllocatedValues(svc, oldSvc *corev1.Service) {
	if needsClusterIP(svc) && needsClusterIP(oldSvc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = oldSvc.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP == oldSvc.Spec.ClusterIP {
			svc.Spec.ClusterIPs = oldSvc.Spec.ClusterIPs
		}
	}
	if needsNodePorts(svc) && needsNodePorts(oldSvc) {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			for _, op := range oldSvc.Spec.Ports {
				if op.Port == p.Port && op.Protocol == p.Protocol && op.NodePort != 0 {
					p.NodePort = op.NodePort
					break
				}
			}
		}
	}
	if needsHealthCheckPort(svc) && needsHealthCheckPort(oldSvc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = oldSvc.Spec.HealthCheckNodePort
	}
}

func (a *Allocators) afterDelete(obj runtime.Object, _ *metav1.DeleteOptions) {
	svc := obj.(*corev1.Service)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t := &transaction{a: a}
	if needsClusterIP(svc) {
		if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil {
			t.ips = append(t.ips, ip)
		}
	}
	for p := range nodePorts(svc) {
		t.ports = append(t.ports, p)
	}
	t.rollback(ctx)
}

func isDryRun(dryRun []string) bool { return len(dryRun) > 0 }

// Repair frees allocations no Service owns. An allocation is freed only
// when two passes in a row found it unowned (same creation revision) and it
// was created before the services were listed, so a create in flight
// between allocation and storage is never robbed (passes run minutes apart).
func (a *Allocators) Repair(ctx context.Context, services []corev1.Service, listRevision int64) error {
	a.repairMu.Lock()
	defer a.repairMu.Unlock()
	suspects := map[string]int64{}
	defer func() { a.suspects = suspects }()
	logger := klog.FromContext(ctx)
	wantIPs, wantPorts := map[string]bool{}, map[string]bool{}
	for i := range services {
		svc := &services[i]
		if needsClusterIP(svc) && svc.Spec.ClusterIP != "" {
			wantIPs[net.ParseIP(svc.Spec.ClusterIP).String()] = true
		}
		for p := range nodePorts(svc) {
			wantPorts[fmt.Sprint(p)] = true
		}
	}
	for _, pass := range []struct {
		r    *Range
		want map[string]bool
	}{{a.IPs.Range, wantIPs}, {a.Ports.Range, wantPorts}} {
		used, err := pass.r.Used(ctx)
		if err != nil {
			return err
		}
		for name, al := range used {
			if pass.want[name] || al.CreateRevision >= listRevision {
				continue
			}
			key := pass.r.prefix + name
			if rev, seen := a.suspects[key]; !seen || rev != al.CreateRevision {
				suspects[key] = al.CreateRevision
				continue
			}
			if err := pass.r.ReleaseName(ctx, name, al.CreateRevision); err != nil {
				return err
			}
			logger.Info("Released leaked service allocation", "item", name, "owner", al.Owner)
		}
	}
	return nil
}
