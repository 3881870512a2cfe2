package kuberuntime

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSandboxCgroupParent(t *testing.T) {
	te := newTestEnv(t)
	pod := testPod(corev1.Container{Name: "app"})
	cfg, err := te.m.sandboxConfig(context.Background(), pod, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Linux.CgroupParent; got != "" {
		t.Errorf("cgroup parent without a container manager %q, want the runtime's default", got)
	}
	te.m.UseCgroupParent(func(p *corev1.Pod) string { return "/kubepods/besteffort/pod" + string(p.UID) })
	if cfg, err = te.m.sandboxConfig(context.Background(), pod, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Linux.CgroupParent, "/kubepods/besteffort/pod"+string(pod.UID); got != want {
		t.Errorf("cgroup parent %q, want %q", got, want)
	}
}

func TestCgroupResourcesLimitWithoutRequest(t *testing.T) {
	// A cpu limit with no request (a pod from before the apiserver
	// defaulted requests) gets the limit's shares, as kubelet's.
	c := &corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}
	if got := CgroupResources(c); got.CpuShares != 512 || got.CpuQuota != 50000 {
		t.Errorf("shares %d quota %d, want 512 and 50000", got.CpuShares, got.CpuQuota)
	}
}
