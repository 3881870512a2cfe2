package apiserver

import (
	"context"
	"fmt"
	"net"
	"time"

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
// endpoint slice) pointing at this apiserver, as kube-apiserver's
// endpoint reconciler does.
type kubernetesService struct {
	client    kubernetes.Interface
	clusterIP net.IP
	address   net.IP
	port      int32
	interval  time.Duration
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
	if err := k.endpoints(ctx); err != nil {
		return err
	}
	return k.endpointSlice(ctx)
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

func (k *kubernetesService) endpoints(ctx context.Context) error {
	eps := k.client.CoreV1().Endpoints(metav1.NamespaceDefault)
	subsets := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: k.address.String()}},
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

func (k *kubernetesService) endpointSlice(ctx context.Context) error {
	slices := k.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	addrType := discoveryv1.AddressTypeIPv4
	if k.address.To4() == nil {
		addrType = discoveryv1.AddressTypeIPv6
	}
	want := discoveryv1.EndpointSlice{
		AddressType: addrType,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{k.address.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(k.port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	cur, err := slices.Get(ctx, kubernetesName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		want.ObjectMeta = metav1.ObjectMeta{Name: kubernetesName, Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesName}}
		_, err = slices.Create(ctx, &want, metav1.CreateOptions{})
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
		if err := slices.Delete(ctx, kubernetesName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return k.endpointSlice(ctx)
	}
	cur.Endpoints, cur.Ports = want.Endpoints, want.Ports
	_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}
