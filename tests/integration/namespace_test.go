package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestNamespaceLifecycle checks what the controllers give every namespace
// (the default service account, kube-root-ca.crt) and that deleting a
// namespace empties it and then removes it.
func TestNamespaceLifecycle(t *testing.T) {
	s := framework.Start(t)
	ctx := context.Background()
	c := s.Client(t)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll := func(what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, cond); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("default service account", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts("doomed").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	poll("kube-root-ca.crt", func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps("doomed").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil && len(cm.Data["ca.crt"]) > 0, nil
	})

	if _, err := c.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("doomed").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: podSpec()}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Creating in a terminating namespace is refused.
	if _, err := c.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: want 403, got %v", err)
	}
	poll("namespace removed", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	pods, err := c.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods left in the deleted namespace: %v %v", pods, err)
	}
	cms, err := c.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{})
	if err != nil || len(cms.Items) != 0 {
		t.Fatalf("configmaps left in the deleted namespace: %d %v", len(cms.Items), err)
	}
	// System namespaces cannot be deleted.
	if err := c.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting kube-system: want 403, got %v", err)
	}
}
