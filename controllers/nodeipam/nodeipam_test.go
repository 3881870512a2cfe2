package nodeipam

import (
	"context"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func node(name, cidr string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if cidr != "" {
		n.Spec.PodCIDR = cidr
		n.Spec.PodCIDRs = []string{cidr}
	}
	return n
}

func TestAllocation(t *testing.T) {
	cases := []struct {
		name    string
		cluster string
		mask    int
		nodes   []*corev1.Node
		target  string
		want    string
		wantErr bool
	}{
		{"first range", "10.42.0.0/16", 24, []*corev1.Node{node("a", "")}, "a", "10.42.0.0/24", false},
		{"skips used ranges", "10.42.0.0/16", 24, []*corev1.Node{node("a", "10.42.0.0/24"), node("b", "10.42.1.0/24"), node("c", "")}, "c", "10.42.2.0/24", false},
		{"reuses a freed range", "10.42.0.0/16", 24, []*corev1.Node{node("a", "10.42.1.0/24"), node("c", "")}, "c", "10.42.0.0/24", false},
		{"full range", "10.42.0.0/23", 24, []*corev1.Node{node("a", "10.42.0.0/24"), node("b", "10.42.1.0/24"), node("c", "")}, "c", "", true},
		{"keeps an existing range", "10.42.0.0/16", 24, []*corev1.Node{node("a", "10.42.7.0/24")}, "a", "10.42.7.0/24", false},
		{"other mask", "10.42.0.0/16", 26, []*corev1.Node{node("a", "10.42.0.0/26"), node("b", "")}, "b", "10.42.0.64/26", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			inf := factory.Core().V1().Nodes()
			for _, n := range tc.nodes {
				if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				_ = inf.Informer().GetStore().Add(n)
			}
			_, cidr, _ := net.ParseCIDR(tc.cluster)
			c, err := New(Config{ClusterCIDR: cidr, NodeMaskSize: tc.mask}, client, inf, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.sync(ctx, tc.target)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error for a full range")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Nodes().Get(ctx, tc.target, metav1.GetOptions{})
			if got.Spec.PodCIDR != tc.want || len(got.Spec.PodCIDRs) != 1 || got.Spec.PodCIDRs[0] != tc.want {
				t.Fatalf("node %s got %q %v, want %q", tc.target, got.Spec.PodCIDR, got.Spec.PodCIDRs, tc.want)
			}
		})
	}
}

func TestPendingRangesAreNotHandedOutTwice(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Nodes()
	for _, n := range []*corev1.Node{node("a", ""), node("b", "")} {
		_ = inf.Informer().GetStore().Add(n)
	}
	_, cidr, _ := net.ParseCIDR("10.42.0.0/16")
	c, err := New(Config{ClusterCIDR: cidr}, client, inf, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.next("a")
	b, _ := c.next("b")
	again, _ := c.next("a")
	if a == b || again != a {
		t.Fatalf("ranges a=%s b=%s a-again=%s: the cache lagging must not give one range twice", a, b, again)
	}
}

func TestValidate(t *testing.T) {
	_, cidr, _ := net.ParseCIDR("10.42.0.0/16")
	for _, mask := range []int{8, 33} {
		c := Config{ClusterCIDR: cidr, NodeMaskSize: mask}
		if err := c.Validate(); err == nil {
			t.Errorf("mask %d: want an error naming --node-cidr-mask-size", mask)
		}
	}
}
