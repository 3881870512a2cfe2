package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestRuntimeClassHandler: a pod naming a RuntimeClass gets its sandbox
// with the class's handler; one naming none the default handler; a class
// that cannot be looked up fails the sandbox as kubelet's does.
func TestRuntimeClassHandler(t *testing.T) {
	classes := map[string]string{"kata": "kata-qemu"}
	lookup := func(_ context.Context, name string) (string, error) {
		if h, ok := classes[name]; ok {
			return h, nil
		}
		return "", errors.New(`runtimeclasses.node.k8s.io "` + name + `" not found`)
	}
	tests := []struct {
		name        string
		class       *string
		useClasses  bool
		wantHandler string
		wantErr     string
	}{
		{name: "no class", wantHandler: "", useClasses: true},
		{name: "class", class: ptr.To("kata"), useClasses: true, wantHandler: "kata-qemu"},
		{name: "empty class name", class: ptr.To(""), useClasses: true, wantHandler: ""},
		{name: "missing class", class: ptr.To("gone"), useClasses: true, wantErr: `RuntimeClass "gone"`},
		{name: "no lookup configured", class: ptr.To("kata"), wantHandler: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t, busybox)
			if tc.useClasses {
				te.m.UseRuntimeClasses(lookup)
			}
			pod := testPod(corev1.Container{Name: "app"})
			pod.Spec.InitContainers = nil
			pod.Spec.RuntimeClassName = tc.class
			res := te.sync(t, pod)
			if tc.wantErr != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", res.Err, tc.wantErr)
				}
				if !te.events.has("FailedCreatePodSandBox") {
					t.Errorf("no FailedCreatePodSandBox event in %v", te.events.events)
				}
				if res.Waiting["app"].Reason != ReasonContainerCreating {
					t.Errorf("app waiting = %+v", res.Waiting["app"])
				}
				if n := te.rt.CallsOf("RunPodSandbox"); n != 0 {
					t.Errorf("RunPodSandbox called %d times", n)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if len(te.rt.Sandboxes) != 1 {
				t.Fatalf("sandboxes = %v", te.rt.Sandboxes)
			}
			for _, sb := range te.rt.Sandboxes {
				if sb.Handler != tc.wantHandler {
					t.Errorf("handler = %q, want %q", sb.Handler, tc.wantHandler)
				}
			}
		})
	}
}
