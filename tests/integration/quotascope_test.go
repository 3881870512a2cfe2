package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestQuotaScopeSelector checks that a ResourceQuota whose scope selector
// holds a value that is no label value is refused naming the field, and
// that one that got into etcd anyway refuses, with 403 naming it, the pods
// it could cover and only those, server-side dry-run included, instead of
// a 500 for every pod of the namespace.
func TestQuotaScopeSelector(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)

	quota := func(name string, op corev1.ScopeSelectorOperator, values ...string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ResourceQuotaSpec{
				Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
				ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
					{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values},
				}},
			},
		}
	}

	// Validation.
	_, err := c.CoreV1().ResourceQuotas("default").Create(ctx, quota("bad", corev1.ScopeSelectorOpIn, "high", "not a label value!"), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.scopeSelector.matchExpressions.values[1]")
	_, err = c.CoreV1().ResourceQuotas("default").Create(ctx, quota("long", corev1.ScopeSelectorOpNotIn, strings.Repeat("a", 64)), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.scopeSelector.matchExpressions.values[0]")
	_, err = c.CoreV1().ResourceQuotas("default").Create(ctx, quota("bad-op", corev1.ScopeSelectorOpExists, "x"), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.scopeSelector.matchExpressions.values")
	good, err := c.CoreV1().ResourceQuotas("default").Create(ctx, quota("good", corev1.ScopeSelectorOpIn, "high"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("valid scoped quota refused: %v", err)
	}
	good.Spec.ScopeSelector.MatchExpressions[0].Values = []string{"not a label value!"}
	_, err = c.CoreV1().ResourceQuotas("default").Update(ctx, good, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec.scopeSelector.matchExpressions.values[0]")

	// A bad quota written to etcd directly, in two namespaces: In cannot
	// cover a pod of no priority class, NotIn could. Written in this
	// order: once admission refuses the second's pod, its informer has
	// the first too.
	etcd := quotaEtcd(t, s)
	for _, tc := range []struct {
		ns    string
		quota *corev1.ResourceQuota
	}{
		{"quota-in", quota("unevaluable", corev1.ScopeSelectorOpIn, "not a label value!")},
		{"quota-notin", quota("unevaluable", corev1.ScopeSelectorOpNotIn, "not a label value!")},
	} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServiceAccount(t, c, tc.ns)
		putQuota(ctx, t, etcd, tc.ns, tc.quota)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: podSpec()}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Until admission's informer has the quota.
		_, err := c.CoreV1().Pods("quota-notin").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, dry := range [][]string{{metav1.DryRunAll}, nil} {
		_, err := c.CoreV1().Pods("quota-notin").Create(ctx, pod, metav1.CreateOptions{DryRun: dry})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `resource quota "unevaluable" cannot be evaluated`) ||
			!strings.Contains(err.Error(), "spec.scopeSelector.matchExpressions.values[0]") {
			t.Fatalf("pod the bad quota could cover (dryRun %v): got %v, want 403 naming the quota and its field", dry, err)
		}
	}
	if _, err := c.CoreV1().Pods("quota-in").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod the bad quota cannot cover: %v", err)
	}
	// Objects other quotas count are not held up: a ConfigMap in the
	// same namespace.
	if _, err := c.CoreV1().ConfigMaps("quota-notin").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("configmap beside the bad quota: %v", err)
	}
	// Deleting the bad quota admits the pod again.
	if err := c.CoreV1().ResourceQuotas("quota-notin").Delete(ctx, "unevaluable", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the bad quota: %v", err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, err := c.CoreV1().Pods("quota-notin").Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod after the bad quota was deleted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quotaEtcd is a client of the test server's embedded etcd.
func quotaEtcd(t *testing.T, s *framework.Server) *clientv3.Client {
	t.Helper()
	dir := filepath.Join(s.DataDir, "server", "tls", "etcd")
	tlsCfg, err := transport.TLSInfo{CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key"), TrustedCAFile: filepath.Join(dir, "server-ca.crt")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("https://127.0.0.1:%d", s.Config.EtcdClientPort)}, TLS: tlsCfg, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// putQuota stores q in etcd as the apiserver would (protobuf, upstream's
// key layout), bypassing validation.
func putQuota(ctx context.Context, t *testing.T, etcd *clientv3.Client, ns string, q *corev1.ResourceQuota) {
	t.Helper()
	q = q.DeepCopy()
	q.Namespace = ns
	q.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", time.Now().UnixNano()%1e12))
	q.CreationTimestamp = metav1.Now()
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	var b strings.Builder
	if err := enc.Encode(q, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Put(ctx, "/registry/resourcequotas/"+ns+"/"+q.Name, b.String()); err != nil {
		t.Fatalf("put the quota into etcd: %v", err)
	}
}

func waitServiceAccount(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{}); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no default service account in %s", ns)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
