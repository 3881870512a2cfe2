package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPrepareResizeUpdate: pods/resize takes only the containers'
// resources and resize policies, and moves the generation on.
func TestPrepareResizeUpdate(t *testing.T) {
	old := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3, Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	pod := old.DeepCopy()
	pod.Labels = map[string]string{"a": "2"}
	pod.Spec.Containers[0].Image = "app:2"
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	pod.Status.Phase = corev1.PodFailed

	PrepareResizeUpdate(context.Background(), pod, old)
	c := pod.Spec.Containers[0]
	if c.Image != "app:1" || pod.Labels["a"] != "1" || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("image %q labels %v phase %s: a resize changed more than resources", c.Image, pod.Labels, pod.Status.Phase)
	}
	if c.Resources.Requests.Cpu().MilliValue() != 200 || len(c.ResizePolicy) != 1 {
		t.Errorf("resources %v policy %v, want the new ones", c.Resources, c.ResizePolicy)
	}
	if pod.Generation != 4 {
		t.Errorf("generation %d, want 4", pod.Generation)
	}

	same := old.DeepCopy()
	PrepareResizeUpdate(context.Background(), same, old)
	if same.Generation != 3 {
		t.Errorf("an empty resize moved the generation to %d", same.Generation)
	}
}
