package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/replication"
	"github.com/k1s/k1s/tests/integration/framework"
)

// TestReplicationController runs the replicationcontroller controller (as
// its service account, so its RBAC role is exercised) with what a
// namespace and a quota need: an RC adopts a matching orphan and gets its
// pods, follows its scale subresource, and surfaces a pods quota as the
// ReplicaFailure condition, which goes once it fits.
func TestReplicationController(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller",
		"namespace-controller", "resourcequota-controller", replication.Name)
	s := framework.StartWith(t, cfg)
	c := s.Client(t)

	t.Run("pods, adoption and scale", func(t *testing.T) { rcTestScale(t, c) })
	t.Run("quota", func(t *testing.T) { rcTestQuota(t, c) })
}

func rcNew(name string, replicas int32) *corev1.ReplicationController {
	lbls := map[string]string{"name": name}
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To(replicas),
			Selector: lbls,
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// rcPods returns the active pods rc controls.
func rcPods(ctx context.Context, c kubernetes.Interface, rc *corev1.ReplicationController) ([]corev1.Pod, error) {
	list, err := c.CoreV1().Pods(rc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(rc.Spec.Selector).String()})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rc.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// rcWaitPods waits for rc to control n active pods and report them at its
// current generation.
func rcWaitPods(t *testing.T, c kubernetes.Interface, rc *corev1.ReplicationController, n int32) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	var last string
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		cur, err := c.CoreV1().ReplicationControllers(rc.Namespace).Get(ctx, rc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, err = rcPods(ctx, c, rc)
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("%d pods, status %+v at generation %d", len(pods), cur.Status, cur.Generation)
		return len(pods) == int(n) && cur.Status.Replicas == n && cur.Status.ObservedGeneration == cur.Generation, nil
	}); err != nil {
		t.Fatalf("waiting for %d pods of %s: %v (%s)", n, rc.Name, err, last)
	}
	return pods
}

func rcTestScale(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	ns := "rc-scale"
	wlNamespace(t, c, ns)
	// An orphan the RC will adopt.
	tmpl := rcNew("web", 3)
	orphan, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: tmpl.Spec.Template.Labels},
		Spec:       tmpl.Spec.Template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.CoreV1().ReplicationControllers(ns).Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := rcWaitPods(t, c, rc, 3)
	adopted := false
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.Name != "web" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s controller %+v", p.Name, ref)
		}
		adopted = adopted || p.UID == orphan.UID
	}
	if !adopted {
		t.Errorf("orphan %s not adopted: pods %v", orphan.Name, pods)
	}

	// The events name the RC, from upstream's component.
	wlPoll(t, "SuccessfulCreate event on the RC", func(ctx context.Context) (bool, error) {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "ReplicationController", "involvedObject.name": "web", "reason": "SuccessfulCreate",
		}.String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == rc.UID && e.Source.Component == replication.EventSource {
				return true, nil
			}
		}
		return false, nil
	})

	scale, err := c.CoreV1().ReplicationControllers(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 {
		t.Errorf("scale %+v", scale)
	}
	for _, n := range []int32{5, 1} {
		if _, err := c.CoreV1().ReplicationControllers(ns).UpdateScale(ctx, "web", &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec:       autoscalingv1.ScaleSpec{Replicas: n},
		}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rcWaitPods(t, c, rc, n)
	}
}

func rcTestQuota(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	ns := "rc-quota"
	wlNamespace(t, c, ns)
	if _, err := c.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wlPoll(t, "quota status", func(ctx context.Context) (bool, error) {
		q, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		hard := q.Status.Hard[corev1.ResourcePods]
		return hard.Cmp(resource.MustParse("2")) == 0, nil
	})
	rc, err := c.CoreV1().ReplicationControllers(ns).Create(ctx, rcNew("over", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failure := func(rc *corev1.ReplicationController) *corev1.ReplicationControllerCondition {
		for _, cond := range rc.Status.Conditions {
			if cond.Type == corev1.ReplicationControllerReplicaFailure {
				return &cond
			}
		}
		return nil
	}
	var last *corev1.ReplicationController
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		last, err = c.CoreV1().ReplicationControllers(ns).Get(ctx, "over", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := failure(last)
		return cond != nil && last.Status.ObservedGeneration >= rc.Generation, nil
	}); err != nil {
		t.Fatalf("no ReplicaFailure condition: %v (status %+v)", err, last.Status)
	}
	if cond := failure(last); cond.Status != corev1.ConditionTrue || cond.Reason != "FailedCreate" {
		t.Errorf("ReplicaFailure %+v", cond)
	}
	if pods, err := rcPods(ctx, c, rc); err != nil || len(pods) != 2 {
		t.Errorf("%d pods under a quota of 2 (%v)", len(pods), err)
	}

	// Scaled down to fit, the condition goes.
	if _, err := c.CoreV1().ReplicationControllers(ns).UpdateScale(ctx, "over", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "over", Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 2},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rcWaitPods(t, c, rc, 2)
	wlPoll(t, "ReplicaFailure removed", func(ctx context.Context) (bool, error) {
		cur, err := c.CoreV1().ReplicationControllers(ns).Get(ctx, "over", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return failure(cur) == nil && cur.Status.ObservedGeneration == cur.Generation, nil
	})
}
