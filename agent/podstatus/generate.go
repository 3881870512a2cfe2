// Package podstatus turns the runtime's view of a pod into the pod's API
// status: container states, restart counts, conditions, phase and IPs,
// following upstream's kubelet rules.
package podstatus

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k1s/k1s/agent/kuberuntime"
)

// Inputs are what status generation needs beyond the runtime's view.
type Inputs struct {
	// Waiting are the last sync's reasons for containers not running.
	Waiting map[string]kuberuntime.Waiting
	// Ready reports a running container's readiness probe result; known is
	// false when no probe result exists yet.
	Ready func(containerID string) (ready, known bool)
	// Started reports a running container's startup probe result.
	Started func(containerID string) (started, known bool)
	// TerminationMessage reads an exited container's termination message.
	TerminationMessage func(cs *kuberuntime.ContainerStatus) string
	// HostIPs are the node's addresses.
	HostIPs []string
	// RuntimeName prefixes container IDs ("containerd").
	RuntimeName string
	// Terminal is true once the pod will not run containers again.
	Terminal bool
}

// Generate computes the pod's status. Condition transition times and the
// start time are the status manager's to keep.
func Generate(pod *corev1.Pod, rs *kuberuntime.PodStatus, in Inputs) corev1.PodStatus {
	st := corev1.PodStatus{
		QOSClass:   pod.Status.QOSClass,
		StartTime:  pod.Status.StartTime,
		Conditions: nil,
	}
	for _, ip := range in.HostIPs {
		st.HostIPs = append(st.HostIPs, corev1.HostIP{IP: ip})
	}
	if len(in.HostIPs) > 0 {
		st.HostIP = in.HostIPs[0]
	}
	ips := rs.IPs
	if pod.Spec.HostNetwork {
		ips = in.HostIPs
	}
	for _, ip := range ips {
		st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		st.PodIP = ips[0]
	}

	initDone := true
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(pod, c, rs, in, true, false)
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			initDone = false
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(pod, c, rs, in, false, !initDone))
	}
	st.Phase = Phase(pod, st.InitContainerStatuses, st.ContainerStatuses, in.Terminal)

	allReady := len(st.ContainerStatuses) > 0
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			allReady = false
		}
	}
	sandboxReady := rs.ActiveSandbox() != nil && rs.ActiveSandbox().Ready
	initialized := condition(corev1.PodInitialized, initDone, reasonIf(!initDone, "ContainersNotInitialized"), msgIf(!initDone, "containers with incomplete status: "+incomplete(st.InitContainerStatuses)))
	if st.Phase == corev1.PodSucceeded {
		initialized = condition(corev1.PodInitialized, true, "PodCompleted", "")
	}
	st.Conditions = append(st.Conditions, condition(corev1.PodReadyToStartContainers, sandboxReady, "", ""), initialized)
	notReady := ""
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			if notReady != "" {
				notReady += " "
			}
			notReady += cs.Name
		}
	}
	ready := allReady && st.Phase == corev1.PodRunning
	reason, msg := "", ""
	if !ready {
		reason = "ContainersNotReady"
		msg = "containers with unready status: [" + notReady + "]"
		switch st.Phase {
		case corev1.PodSucceeded:
			reason, msg = "PodCompleted", ""
		case corev1.PodFailed:
			reason, msg = "PodFailed", ""
		}
	}
	st.Conditions = append(st.Conditions,
		condition(corev1.ContainersReady, ready, reason, msg),
		condition(corev1.PodReady, ready && gatesPass(pod), reason, msg),
	)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			st.Conditions = append(st.Conditions, c)
		}
	}
	return st
}

func reasonIf(b bool, r string) string {
	if b {
		return r
	}
	return ""
}

func msgIf(b bool, m string) string {
	if b {
		return m
	}
	return ""
}

func incomplete(statuses []corev1.ContainerStatus) string {
	out := "["
	first := true
	for _, s := range statuses {
		if s.State.Terminated != nil && s.State.Terminated.ExitCode == 0 {
			continue
		}
		if !first {
			out += " "
		}
		out += s.Name
		first = false
	}
	return out + "]"
}

func gatesPass(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func condition(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// containerStatus builds one container's API status from its newest and
// previous runtime instances.
func containerStatus(pod *corev1.Pod, c *corev1.Container, rs *kuberuntime.PodStatus, in Inputs, init, initPending bool) corev1.ContainerStatus {
	out := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	instances := rs.Instances(c.Name)
	waiting, hasWaiting := in.Waiting[c.Name]
	if len(instances) == 0 {
		reason := kuberuntime.ReasonContainerCreating
		if initPending && !init {
			reason = kuberuntime.ReasonPodInitializing
		}
		msg := ""
		if hasWaiting {
			reason, msg = waiting.Reason, waiting.Message
		}
		out.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
		out.Started = ptr(false)
		return out
	}
	newest := instances[0]
	out.RestartCount = int32(newest.RestartCount)
	out.ImageID = newest.ImageRef
	if newest.Image != "" && newest.Image != c.Image {
		// A running instance of an older spec keeps its image until replaced.
		out.Image = newest.Image
	}
	out.ContainerID = containerID(in.RuntimeName, newest.ID)
	switch newest.State {
	case kuberuntime.StateRunning:
		out.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(newest.StartedAt)}
		started := true
		if c.StartupProbe != nil {
			started = false
			if in.Started != nil {
				if s, known := in.Started(newest.ID); known {
					started = s
				}
			}
		}
		out.Started = &started
		ready := started && c.ReadinessProbe == nil
		if c.ReadinessProbe != nil && started && in.Ready != nil {
			if r, known := in.Ready(newest.ID); known {
				ready = r
			}
		}
		out.Ready = ready
		if len(instances) > 1 {
			out.LastTerminationState.Terminated = terminated(instances[1], in)
		}
	case kuberuntime.StateExited:
		t := terminated(newest, in)
		out.Started = ptr(false)
		if hasWaiting {
			out.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting.Reason, Message: waiting.Message}
			out.LastTerminationState.Terminated = t
		} else {
			out.State.Terminated = t
			if len(instances) > 1 {
				out.LastTerminationState.Terminated = terminated(instances[1], in)
			}
		}
	default:
		reason := kuberuntime.ReasonContainerCreating
		if hasWaiting {
			reason = waiting.Reason
		}
		out.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		out.Started = ptr(false)
	}
	return out
}

func terminated(cs *kuberuntime.ContainerStatus, in Inputs) *corev1.ContainerStateTerminated {
	reason := cs.Reason
	if reason == "" {
		reason = "Completed"
		if cs.ExitCode != 0 {
			reason = "Error"
		}
	}
	t := &corev1.ContainerStateTerminated{
		ExitCode:    int32(cs.ExitCode),
		Reason:      reason,
		Message:     cs.Message,
		StartedAt:   metav1.NewTime(cs.StartedAt),
		FinishedAt:  metav1.NewTime(cs.FinishedAt),
		ContainerID: containerID(in.RuntimeName, cs.ID),
	}
	if in.TerminationMessage != nil {
		if msg := in.TerminationMessage(cs); msg != "" {
			t.Message = msg
		}
	}
	return t
}

func containerID(runtime, id string) string {
	if runtime == "" {
		runtime = "containerd"
	}
	return fmt.Sprintf("%s://%s", runtime, id)
}

func ptr[T any](v T) *T { return &v }

// Phase computes the pod phase from its container statuses, as upstream's
// kubelet does (without per-container restart rules).
func Phase(pod *corev1.Pod, inits, apps []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	pendingInit, failedInit := 0, 0
	for _, s := range inits {
		switch {
		case s.State.Running != nil:
			pendingInit++
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.State.Waiting != nil:
			if lt := s.LastTerminationState.Terminated; lt != nil {
				if lt.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	if len(inits) < len(pod.Spec.InitContainers) {
		pendingInit += len(pod.Spec.InitContainers) - len(inits)
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for _, s := range apps {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	switch {
	case pendingInit > 0, waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}
