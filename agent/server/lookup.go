package server

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the agent puts on sandboxes and containers, by which the API
// finds them.
const (
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	// mirrorAnnotation marks an apiserver copy of a static pod, whose UID
	// is not the one its containers carry.
	mirrorAnnotation = "kubernetes.io/config.mirror"
)

// podLabels selects the runtime objects of pod.
func podLabels(pod *corev1.Pod) map[string]string {
	l := map[string]string{
		labelPodNamespace: pod.Namespace,
		labelPodName:      pod.Name,
	}
	if _, mirror := pod.Annotations[mirrorAnnotation]; pod.UID != "" && !mirror {
		l[labelPodUID] = string(pod.UID)
	}
	return l
}

// containerAttempts lists the pod's containers of the given name, newest
// first.
func (s *Server) containerAttempts(ctx context.Context, pod *corev1.Pod, name string, state *runtimeapi.ContainerStateValue) ([]*runtimeapi.Container, error) {
	labels := podLabels(pod)
	labels[labelContainerName] = name
	cs, err := s.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: labels, State: state})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %q: %w", pod.Name, err)
	}
	// A runtime may ignore parts of the filter.
	cs = slices.DeleteFunc(cs, func(c *runtimeapi.Container) bool {
		for k, v := range labels {
			if c.GetLabels()[k] != v {
				return true
			}
		}
		return state != nil && c.GetState() != state.GetState()
	})
	slices.SortFunc(cs, func(a, b *runtimeapi.Container) int {
		if c := cmp.Compare(b.GetMetadata().GetAttempt(), a.GetMetadata().GetAttempt()); c != 0 {
			return c
		}
		return cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt())
	})
	return cs, nil
}

// logContainer picks the container whose log to read: the newest attempt
// that has started, or with previous the attempt before the newest. Errors
// carry the kubelet's messages.
func (s *Server) logContainer(ctx context.Context, pod *corev1.Pod, name string, previous bool) (string, error) {
	cs, err := s.containerAttempts(ctx, pod, name, nil)
	if err != nil {
		return "", err
	}
	if previous {
		if len(cs) < 2 {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
		}
		return cs[1].GetId(), nil
	}
	for _, c := range cs {
		// A container created but never started has written nothing; the
		// one before it is what the pod last showed.
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
			return c.GetId(), nil
		}
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, pod.Name)
}

// runningContainer finds the running container of the given name.
func (s *Server) runningContainer(ctx context.Context, pod *corev1.Pod, name string) (string, error) {
	cs, err := s.containerAttempts(ctx, pod, name, &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	if err != nil {
		return "", err
	}
	if len(cs) == 0 {
		return "", fmt.Errorf("container not found (%q)", name)
	}
	return cs[0].GetId(), nil
}

// readySandbox finds the pod's ready sandbox, the newest if there are
// several.
func (s *Server) readySandbox(ctx context.Context, pod *corev1.Pod) (string, error) {
	labels := podLabels(pod)
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	sbs, err := s.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: labels, State: ready})
	if err != nil {
		return "", fmt.Errorf("list sandboxes of pod %q: %w", pod.Name, err)
	}
	sbs = slices.DeleteFunc(sbs, func(sb *runtimeapi.PodSandbox) bool {
		for k, v := range labels {
			if sb.GetLabels()[k] != v {
				return true
			}
		}
		return sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY
	})
	if len(sbs) == 0 {
		return "", fmt.Errorf("failed to find sandboxID for pod %s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	}
	slices.SortFunc(sbs, func(a, b *runtimeapi.PodSandbox) int { return cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt()) })
	return sbs[0].GetId(), nil
}
