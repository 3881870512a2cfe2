package quota

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

const ns = "ns"

func TestCalculateStatus(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "250m"), rl("cpu", "500m"))}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done", Namespace: ns},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c2", Namespace: ns}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns}},
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	registry := NewRegistry(ListerFuncForFactory(factory))
	for _, gvr := range []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithResource("configmaps"),
		{Group: "apps", Version: "v1", Resource: "deployments"},
	} {
		if _, err := factory.ForResource(gvr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	rq := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: rl(
			"pods", "10", "count/pods", "10", "requests.cpu", "4", "limits.cpu", "8",
			"configmaps", "5", "count/deployments.apps", "2", "example.com/unknown", "1",
		)},
	}
	status, err := CalculateStatus(rq, registry)
	if err != nil {
		t.Fatal(err)
	}
	if !quota.Equals(status.Hard, rq.Spec.Hard) {
		t.Errorf("status.hard = %s, want spec.hard", printList(status.Hard))
	}
	assertUsage(t, status.Used, rl(
		"pods", "1", "count/pods", "2", "requests.cpu", "250m", "limits.cpu", "500m",
		"configmaps", "2", "count/deployments.apps", "1",
	))
}

func TestStatusFromSpec(t *testing.T) {
	rq := &corev1.ResourceQuota{
		Spec:   corev1.ResourceQuotaSpec{Hard: rl("pods", "10", "secrets", "3", "requests.cpu", "2")},
		Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "5", "services", "1"), Used: rl("pods", "4", "services", "1", "secrets", "2")},
	}
	status := StatusFromSpec(rq, rl("requests.cpu", "500m", "secrets", "1"))
	if !quota.Equals(status.Hard, rq.Spec.Hard) {
		t.Errorf("hard = %s", printList(status.Hard))
	}
	// pods kept from the old status, secrets and cpu from the measured
	// usage, services dropped with its hard limit.
	assertUsage(t, status.Used, rl("pods", "4", "secrets", "1", "requests.cpu", "500m"))
	// The caller's quota is not changed.
	if q := rq.Status.Hard[corev1.ResourcePods]; q.String() != "5" {
		t.Errorf("input quota changed: %s", q.String())
	}
}
