package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestEvictionMarksDisruptionTarget: an eviction gives the pod the
// DisruptionTarget condition (reason EvictionByEvictionAPI) before it is
// deleted, as kube-apiserver's; a dry run leaves the pod untouched; a
// stale resourceVersion precondition is a conflict.
func TestEvictionMarksDisruptionTarget(t *testing.T) {
	s := framework.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")

	newPod := func(name string) *corev1.Pod {
		p, err := pods.Create(ctx, &corev1.Pod{
			// The finalizer keeps the deleted pod readable. No scheduler
			// serves the pod (the server's would mark it unschedulable,
			// moving the resourceVersion the test's precondition names).
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"example.com/hold"}},
			Spec:       corev1.PodSpec{SchedulerName: "none", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = pods.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
		return p
	}
	disruption := func(p *corev1.Pod) *corev1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}

	dry := newPod("evict-dry")
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: dry.Name},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}); err != nil {
		t.Fatalf("dry-run eviction: %v", err)
	}
	got, err := pods.Get(ctx, dry.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp != nil || disruption(got) != nil {
		t.Errorf("a dry-run eviction changed the pod: deletion %v, conditions %+v", got.DeletionTimestamp, got.Status.Conditions)
	}

	stale := newPod("evict-stale")
	if _, err := pods.Patch(ctx, stale.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"moved":"on"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	err = pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: stale.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale.ResourceVersion}}})
	if err == nil {
		t.Errorf("an eviction with a stale resourceVersion precondition succeeded")
	}

	p := newPod("evict-me")
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}}}); err != nil {
		t.Fatalf("eviction: %v", err)
	}
	got, err = pods.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil {
		t.Errorf("the evicted pod is not being deleted")
	}
	cond := disruption(got)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "EvictionByEvictionAPI" || cond.Message != "Eviction API: evicting" || cond.LastTransitionTime.IsZero() {
		t.Errorf("DisruptionTarget condition after eviction: %+v", cond)
	}
}
