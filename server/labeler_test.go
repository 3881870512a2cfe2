package server

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The server's node gets the control-plane label when it registers, again
// when it registers anew without it, and after a failed patch; a labelled
// node is left alone: no polling.
func TestControlPlaneLabeler(t *testing.T) {
	client := fake.NewClientset()
	failures := 1
	client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, errors.New("apiserver busy")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &controlPlaneLabeler{client: client, nodeName: "n1"}
	done := make(chan struct{})
	go func() { _ = l.run(ctx, 50*time.Millisecond); close(done) }()

	labelled := func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && n.Labels["node-role.kubernetes.io/control-plane"] == "true"
	}
	waitLabelled := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !labelled() {
			if time.Now().After(deadline) {
				t.Fatalf("node not labelled %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLabelled("after registering (the first patch failed)")

	// Registered anew, without the label.
	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLabelled("after registering again")

	// A labelled node: nothing more is sent.
	time.Sleep(100 * time.Millisecond)
	client.ClearActions()
	time.Sleep(300 * time.Millisecond)
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "nodes" && a.GetVerb() != "watch" && a.GetVerb() != "list" {
			t.Errorf("request for a labelled node: %s", a.GetVerb())
		}
	}
	cancel()
	<-done
}
