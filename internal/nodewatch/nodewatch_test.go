package nodewatch

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestWatch(t *testing.T) {
	client := fake.NewClientset()
	w, err := New(client, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Node(); ok {
		t.Fatal("a node before the watch runs")
	}
	ctx := context.Background()
	stop := w.Start(ctx)

	next := func(what string, cond func(*corev1.Node) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case <-w.Changed():
				if n, ok := w.Node(); ok && cond(n) {
					return
				}
			case <-deadline:
				t.Fatalf("no change: %s", what)
			}
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("created", func(n *corev1.Node) bool { return n.Name == "n1" })
	node.Spec.PodCIDR = "10.42.3.0/24"
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("updated", func(n *corev1.Node) bool { return n.Spec.PodCIDR == "10.42.3.0/24" })
	stop()
}
