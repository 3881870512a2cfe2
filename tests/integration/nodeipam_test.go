package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestNodePodCIDRs checks that nodes get distinct /24s from --cluster-cidr.
func TestNodePodCIDRs(t *testing.T) {
	s := framework.Start(t)
	ctx := context.Background()
	c := s.Client(t)
	got := map[string]string{}
	for _, name := range []string{"n1", "n2"} {
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"n1", "n2"} {
			n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || n.Spec.PodCIDR == "" {
				return false, nil
			}
			got[name] = n.Spec.PodCIDR
		}
		return true, nil
	}); err != nil {
		t.Fatalf("nodes did not get pod CIDRs: %v", got)
	}
	if got["n1"] == got["n2"] {
		t.Fatalf("two nodes share pod CIDR %s", got["n1"])
	}
	for name, cidr := range got {
		if len(cidr) < 8 || cidr[:6] != "10.42." || cidr[len(cidr)-3:] != "/24" {
			t.Errorf("node %s got %s, want a /24 of 10.42.0.0/16", name, cidr)
		}
	}
}
