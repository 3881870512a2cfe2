package integration

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

// causeFields returns the field paths of an Invalid error's causes.
func causeFields(err error) []string {
	var out []string
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			out = append(out, c.Field)
		}
	}
	return out
}

func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want 422 Invalid on %s, got success", field)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid on %s, got %v", field, err)
	}
	for _, f := range causeFields(err) {
		if f == field {
			return
		}
	}
	t.Fatalf("422 lacks field %s: causes %v (%v)", field, causeFields(err), err)
}

func TestValidation(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)

	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: podSpec()}
		mutate(p)
		return p
	}
	cases := []struct {
		name   string
		create func(kubernetes.Interface) error
		field  string
	}{
		{"pod without containers", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) { p.Spec.Containers = nil }), metav1.CreateOptions{})
			return err
		}, "spec.containers"},
		{"pod container without image", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }), metav1.CreateOptions{})
			return err
		}, "spec.containers[0].image"},
		{"pod bad container name", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Bad_Name" }), metav1.CreateOptions{})
			return err
		}, "spec.containers[0].name"},
		{"pod port out of range", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
			}), metav1.CreateOptions{})
			return err
		}, "spec.containers[0].ports[0].containerPort"},
		{"pod requests above limits", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				}
			}), metav1.CreateOptions{})
			return err
		}, "spec.containers[0].resources.requests"},
		{"pod mount of a missing volume", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
			}), metav1.CreateOptions{})
			return err
		}, "spec.containers[0].volumeMounts[0].name"},
		{"pod bad name", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) { p.Name = "Not_A_Name" }), metav1.CreateOptions{})
			return err
		}, "metadata.name"},
		{"pod bad label", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b c"} }), metav1.CreateOptions{})
			return err
		}, "metadata.labels"},
		{"service port zero", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 0}}}}, metav1.CreateOptions{})
			return err
		}, "spec.ports[0].port"},
		{"service cluster IP outside the range", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s2"},
				Spec: corev1.ServiceSpec{ClusterIP: "192.168.99.1", Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
			return err
		}, "spec.clusterIPs"},
		{"deployment selector does not match labels", func(c kubernetes.Interface) error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
				Selector: selector("a"), Template: template("b")}}
			_, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
			return err
		}, "spec.template.metadata.labels"},
		{"configmap bad key", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
				Data: map[string]string{"bad key": "x"}}, metav1.CreateOptions{})
			return err
		}, "data[bad key]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireInvalid(t, tc.create(c), tc.field)
		})
	}
}

func TestImmutableFields(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)

	t.Run("deployment selector", func(t *testing.T) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), Selector: selector("a"), Template: template("a")}}
		d, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Selector = selector("b")
		d.Spec.Template.Labels = map[string]string{"app": "b"}
		_, err = c.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
		requireInvalid(t, err, "spec.selector")
	})
	t.Run("service clusterIP", func(t *testing.T) {
		svc, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.ClusterIP == "" || !strings.HasPrefix(svc.Spec.ClusterIP, "10.43.") {
			t.Fatalf("service got cluster IP %q, want one from 10.43.0.0/16", svc.Spec.ClusterIP)
		}
		svc.Spec.ClusterIP = "10.43.200.200"
		svc.Spec.ClusterIPs = []string{"10.43.200.200"}
		_, err = c.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{})
		requireInvalid(t, err, "spec.clusterIPs[0]")
	})
	t.Run("immutable configmap", func(t *testing.T) {
		cm, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
			Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["a"] = "2"
		_, err = c.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
		requireInvalid(t, err, "data")
	})
	t.Run("pod spec", func(t *testing.T) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: podSpec()}
		// Pods need the default service account, which the controllers create;
		// opt out of it so this test depends only on the apiserver.
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		p, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		_, err = c.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
			t.Fatalf("pod spec update: want Invalid naming the mutable fields, got %v", err)
		}
		p.Spec.RestartPolicy = corev1.RestartPolicyAlways
		p.Spec.Containers[0].Image = "busybox:1.37"
		if _, err := c.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("image update must be allowed: %v", err)
		}
	})
}
