package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestRestartKeepsObjects stops the control plane and starts it again on
// the same data directory: every object, its UID and the certificates
// survive.
func TestRestartKeepsObjects(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	cm, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "keep"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Stop(t)

	s2 := framework.StartWith(t, s.Config)
	c2 := s2.Client(t)
	got, err := c2.CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap after restart: %v", err)
	}
	if got.UID != cm.UID || got.Data["k"] != "v" {
		t.Fatalf("configmap changed across restart: %+v", got)
	}
	gotSvc, err := c2.CoreV1().Services("default").Get(ctx, "keep", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("service after restart: %v", err)
	}
	if gotSvc.Spec.ClusterIP != svc.Spec.ClusterIP || gotSvc.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort {
		t.Fatalf("service allocations changed across restart: %s/%d vs %s/%d",
			gotSvc.Spec.ClusterIP, gotSvc.Spec.Ports[0].NodePort, svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort)
	}
	// The allocation survived too: the same node port cannot be taken twice.
	_, err = c2.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "clash"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: svc.Spec.Ports[0].NodePort}}}}, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.ports[0].nodePort")
}
