package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/apis/scheduling"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server/auth/rbac/bootstrappolicy"
)

// SystemNamespaces exist in every cluster and cannot be deleted.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// addHooks registers the post-start hooks: informers, then the bootstrap
// objects; ready is closed when the bootstrap is done. A failed bootstrap
// is sent to failed rather than returned, because the generic server exits
// the process when a hook fails.
func (d *dependencies) addHooks(server *genericapiserver.GenericAPIServer, ready chan struct{}, failed chan<- error) {
	server.AddPostStartHookOrDie("k1s-start-informers", func(hc genericapiserver.PostStartHookContext) error {
		d.informers.Start(hc.Done())
		return nil
	})
	server.AddPostStartHookOrDie("k1s-bootstrap", func(hc genericapiserver.PostStartHookContext) error {
		if err := d.bootstrap(hc); err != nil {
			failed <- fmt.Errorf("bootstrap: %w", err)
			return nil
		}
		close(ready)
		return nil
	})
}

// bootstrap creates the objects every cluster has.
func (d *dependencies) bootstrap(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// The namespaces first (default roles live in kube-system and
	// kube-public), then priority classes and default RBAC together.
	var nsGroup errgroup.Group
	for _, name := range SystemNamespaces {
		nsGroup.Go(func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			_, err := d.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create namespace %s: %w", name, err)
			}
			if err == nil {
				logger.V(2).Info("Created system namespace", "namespace", name)
			}
			return nil
		})
	}
	if err := nsGroup.Wait(); err != nil {
		return err
	}
	var group errgroup.Group
	for _, pc := range scheduling.SystemPriorityClasses() {
		group.Go(func() error {
			_, err := d.client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create priority class %s: %w", pc.Name, err)
			}
			return nil
		})
	}
	group.Go(func() error {
		if err := bootstrappolicy.Reconcile(ctx, d.client); err != nil {
			return fmt.Errorf("default RBAC policy: %w", err)
		}
		return nil
	})
	// API Priority and Fairness's FlowSchemas and priority levels
	// (kube-apiserver's priority-and-fairness-config-producer).
	group.Go(func() error { return d.ensureFlowControlConfiguration(ctx) })
	// How this apiserver authenticates, for aggregated API servers.
	group.Go(func() error {
		info, err := d.newAuthenticationInfo()
		if err == nil {
			err = info.reconcile(ctx)
		}
		if err != nil {
			return fmt.Errorf("publish the authentication configuration: %w", err)
		}
		go info.run(ctx, time.Minute)
		return nil
	})
	if err := group.Wait(); err != nil {
		return err
	}
	// The apiserver reaches node agents (logs, exec, port-forward, proxy)
	// as this user; the agents ask the apiserver whether it may.
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:k1s-apiserver-kubelet-api-admin", Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: pki.APIServerAgentUser}},
	}
	if _, err := d.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s: %w", crb.Name, err)
	}
	if err := d.defaultServiceCIDR(ctx); err != nil {
		return err
	}
	ks := &kubernetesService{
		client:    d.client,
		clusterIP: d.cfg.FirstServiceIP(),
		address:   d.cfg.AdvertiseAddress,
		port:      int32(d.cfg.SecurePort),
		interval:  10 * time.Second,
		leases:    d.endpointLeases,
	}
	if err := ks.reconcile(ctx); err != nil {
		return err
	}
	go ks.run(ctx)
	go d.repairServiceAllocations(ctx)
	// Authorizers and admission read informers: serve only once they synced.
	for typ, ok := range d.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	// Until its APIService is Available the aggregator would not list a
	// group in /apis. The local ones are marked Available at once: one
	// that is not within a minute is a fault.
	if d.apiServices != nil {
		t := time.NewTimer(apiServicesTimeout)
		defer t.Stop()
		select {
		case <-d.apiServices.Done():
		case <-t.C:
			return fmt.Errorf("built-in APIServices not Available after %v: %v", apiServicesTimeout, d.apiServices.Pending())
		case <-ctx.Done():
			return fmt.Errorf("built-in APIServices not Available: %w", ctx.Err())
		}
	}
	return nil
}

// defaultServiceCIDR keeps networking.k8s.io ServiceCIDR "kubernetes"
// describing --service-cidr, Ready, as kube-apiserver's default-servicecidr
// controller does. (k1s allocates cluster IPs from --service-cidr alone;
// other ServiceCIDRs are stored but do not widen the range.)
func (d *dependencies) defaultServiceCIDR(ctx context.Context) error {
	api := d.client.NetworkingV1().ServiceCIDRs()
	want := []string{d.cfg.ServiceCIDR.String()}
	cur, err := api.Get(ctx, DefaultServiceCIDRName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur, err = api.Create(ctx, &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDRName},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: want},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("default ServiceCIDR: %w", err)
	}
	if meta.IsStatusConditionTrue(cur.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
		return nil
	}
	cur = cur.DeepCopy()
	meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{
		Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
		Reason: "Ready", Message: "Kubernetes default Service CIDR is ready", ObservedGeneration: cur.Generation,
	})
	if _, err := api.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("default ServiceCIDR status: %w", err)
	}
	return nil
}

// apiServicesTimeout bounds the wait for the built-in APIServices.
const apiServicesTimeout = time.Minute

// DefaultServiceCIDRName is the ServiceCIDR describing --service-cidr.
const DefaultServiceCIDRName = "kubernetes"

// repairServiceAllocations frees cluster IPs and node ports that no service
// owns (left by a crash between allocation and storage), at start and every
// ten minutes.
func (d *dependencies) repairServiceAllocations(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		// A consistent read: the list must include every service stored so far.
		list, err := d.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to list services for allocation repair")
			return
		}
		rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
		if err := d.serviceAllocators.Repair(ctx, list.Items, rv); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to repair service allocations")
		}
	}, 10*time.Minute)
}
