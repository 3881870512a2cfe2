package integration

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestDefaultServiceCIDR: ServiceCIDR "kubernetes" describes the service
// range and is Ready; a bad ServiceCIDR or IPAddress is refused.
func TestDefaultServiceCIDR(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	sc, err := c.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The framework's server runs with the default --service-cidr.
	if len(sc.Spec.CIDRs) != 1 || sc.Spec.CIDRs[0] != "10.43.0.0/16" {
		t.Errorf("cidrs %v, want [10.43.0.0/16]", sc.Spec.CIDRs)
	}
	if !apimeta.IsStatusConditionTrue(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
		t.Errorf("not Ready: %+v", sc.Status)
	}
	_, err = c.NetworkingV1().ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.0.0.0/24", "10.1.0.0/24"}}}, metav1.CreateOptions{})
	if err == nil {
		t.Error("two IPv4 CIDRs accepted")
	}
	_, err = c.NetworkingV1().IPAddresses().Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "not-an-ip"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Name: "x"}}}, metav1.CreateOptions{})
	if err == nil {
		t.Error("an IPAddress not named by an address accepted")
	}
}
