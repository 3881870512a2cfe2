package kuberuntime

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeHandlerFunc returns the CRI runtime handler of the RuntimeClass
// named className, or an error when there is none.
type RuntimeHandlerFunc func(ctx context.Context, className string) (string, error)

// UseRuntimeClasses makes the sandboxes of pods naming a RuntimeClass run
// with that class's handler, looked up with fn (as kubelet's RuntimeClass
// manager does). Call it before the manager syncs pods. Without it, or for
// a pod naming no class, sandboxes run with Config.RuntimeHandler.
func (m *Manager) UseRuntimeClasses(fn RuntimeHandlerFunc) { m.handlers = fn }

// runtimeHandler is the handler pod's sandbox runs with.
func (m *Manager) runtimeHandler(ctx context.Context, pod *corev1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" || m.handlers == nil {
		return m.cfg.RuntimeHandler, nil
	}
	h, err := m.handlers(ctx, *name)
	if err != nil {
		return "", fmt.Errorf("look up the runtime handler of RuntimeClass %q: %w", *name, err)
	}
	return h, nil
}

// runPodSandbox starts pod's sandbox with its runtime handler.
func (m *Manager) runPodSandbox(ctx context.Context, pod *corev1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	handler, err := m.runtimeHandler(ctx, pod)
	if err != nil {
		return "", err
	}
	return m.runtime.RunPodSandbox(ctx, cfg, handler)
}
