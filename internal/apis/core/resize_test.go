package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestValidatePodResize(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	burstable := func() *corev1.Pod {
		p := validPod()
		p.ResourceVersion = "1"
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: rl("cpu", "100m", "memory", "20Mi", "ephemeral-storage", "1Gi"),
			Limits:   rl("cpu", "200m"),
		}
		return p
	}
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []e
	}{
		{"cpu and memory up", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = rl("cpu", "150m", "memory", "30Mi", "ephemeral-storage", "1Gi")
		}, nil},
		{"a limit added, the QoS class kept", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = rl("cpu", "200m", "memory", "50Mi")
		}, nil},
		{"a request removed", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = rl("cpu", "100m", "ephemeral-storage", "1Gi")
		}, []e{forbidden("spec.containers[0].resources.requests[memory]")}},
		{"ephemeral-storage changed", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = rl("cpu", "100m", "memory", "20Mi", "ephemeral-storage", "2Gi")
		}, []e{forbidden("spec.containers[0].resources.requests[ephemeral-storage]")}},
		{"burstable to best-effort (limits and requests out)", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}, []e{invalid("spec"), forbidden("spec.containers[0].resources.requests[cpu]"), forbidden("spec.containers[0].resources.requests[memory]"),
			forbidden("spec.containers[0].resources.requests[ephemeral-storage]"), forbidden("spec.containers[0].resources.limits[cpu]")}},
		{"a regular init container's resources", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests = rl("cpu", "10m")
		}, []e{forbidden("spec.initContainers[0].resources")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := burstable()
			p := old.DeepCopy()
			tt.mutate(p)
			expectErrs(t, ValidatePodResize(p, old), tt.want...)
		})
	}
}
