package integration

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

func TestAnonymous(t *testing.T) {
	s := framework.StartAPI(t)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for path, want := range map[string]int{
		"/healthz": 200, "/livez": 200, "/readyz": 200, "/version": 200,
		"/api": 401, "/api/v1/pods": 401, "/apis": 401, "/metrics": 401, "/openapi/v2": 401,
	} {
		resp, err := client.Get(s.URL() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: status %d, want %d (%s)", path, resp.StatusCode, want, body)
		}
	}
}

func TestRBAC(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	admin := s.Client(t)
	alice := kubernetes.NewForConfigOrDie(s.UserConfig(t, "alice"))

	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice without rights: want 403, got %v", err)
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer reads RBAC through informers: allow it to catch up.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("alice with the view role still cannot list configmaps")
	}
	if _, err := alice.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a RoleBinding must not grant other namespaces: got %v", err)
	}
	if _, err := alice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("view must not read secrets: got %v", err)
	}
	if _, err := alice.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("view must not create: got %v", err)
	}

	// Escalation: alice may not grant herself edit.
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-rbac"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "alice-rbac-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-rbac-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := alice.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}, metav1.CreateOptions{})
		if err == nil {
			return false, errEscalated
		}
		// Forbidden by RBAC first (binding not seen yet), then by the escalation check.
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "attempting to grant RBAC permissions not currently held"), nil
	})
	if err != nil {
		t.Fatalf("escalation: %v", err)
	}
}

var errEscalated = apierrors.NewBadRequest("alice escalated her own rights")

func TestNodeIdentity(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	admin := s.Client(t)
	nodeA := kubernetes.NewForConfigOrDie(s.UserConfig(t, "system:node:node-a", "system:nodes"))

	// A node registers itself and may update its own status.
	a, err := nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node-a registering itself: %v", err)
	}
	a.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Ready", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := nodeA.CoreV1().Nodes().UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node-a updating its own status: %v", err)
	}
	if _, err := nodeA.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node-a creating its own lease: %v", err)
	}

	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodeA.CoreV1().Nodes().Patch(ctx, "node-b", types.MergePatchType, []byte(`{"metadata":{"labels":{"owned":"by-a"}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node-a modifying node-b: want 403, got %v", err)
	}
	if _, err := nodeA.CoreV1().Nodes().Patch(ctx, "node-b", types.MergePatchType, []byte(`{"status":{"conditions":[]}}`), metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Fatalf("node-a modifying node-b's status: want 403, got %v", err)
	}
	if err := nodeA.CoreV1().Nodes().Delete(ctx, "node-b", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node-a deleting node-b: want 403, got %v", err)
	}
	if _, err := nodeA.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-b"},
	}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node-a creating node-b's lease: want 403, got %v", err)
	}
	if _, err := nodeA.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node-a listing secrets: want 403, got %v", err)
	}
}
