package server

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// kubeDNSService makes kube-system/kube-dns at the cluster DNS address,
// the Service users and tools look for (`kubectl get svc -n kube-system
// kube-dns`, `kubectl cluster-info`). Nothing backs it: every node's own
// DNS answers at that address, and the service proxy leaves it alone. It
// is created when missing at start and otherwise left as the user keeps
// it.
type kubeDNSService struct {
	client kubernetes.Interface
	ip     net.IP
	retry  time.Duration
}

func (k *kubeDNSService) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	for {
		err := k.ensure(ctx)
		if err == nil {
			break
		}
		logger.V(2).Info("Could not create the kube-dns Service yet", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(k.retry):
		}
	}
	<-ctx.Done()
	return nil
}

func (k *kubeDNSService) ensure(ctx context.Context) error {
	svcs := k.client.CoreV1().Services(metav1.NamespaceSystem)
	_, err := svcs.Get(ctx, "kube-dns", metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-dns",
			Labels: map[string]string{
				"k8s-app":                       "kube-dns",
				"kubernetes.io/cluster-service": "true",
				"kubernetes.io/name":            "KubeDNS",
				"app.kubernetes.io/managed-by":  "k1s",
			},
			Annotations: map[string]string{"k1s.io/served-by": "every node's built-in DNS"},
		},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: k.ip.String(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	}
	if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create kube-system/kube-dns at %s: %w", k.ip, err)
	}
	klog.FromContext(ctx).V(2).Info("Created the kube-dns Service", "clusterIP", k.ip)
	return nil
}
