// Package podstatus turns the runtime's view of a pod into the pod's API
// status: container states, restart counts, conditions, phase and IPs,
// following upstream's kubelet rules.
package podstatus

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubectl/pkg/util/qos"

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
		// The apiserver's class, or computed as upstream's (static pods).
		QOSClass:   qos.GetPodQOS(pod),
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

	hasInits := len(pod.Spec.InitContainers) > 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(pod, c, rs, in, hasInits)
		if !isSidecar(c) {
			// A regular init container is ready once it completed.
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	appCreated := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if len(rs.Instances(c.Name)) > 0 {
			appCreated = true
		}
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(pod, c, rs, in, hasInits))
	}
	for i := range pod.Spec.EphemeralContainers {
		// Ephemeral containers have no probes and are never ready.
		cs := containerStatus(pod, kuberuntime.EphemeralAsContainer(&pod.Spec.EphemeralContainers[i]), rs, in, false)
		cs.Ready, cs.Resources, cs.AllocatedResources = false, nil, nil
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
	}
	st.Phase = Phase(pod, st.InitContainerStatuses, st.ContainerStatuses, in.Terminal, appCreated)

	sandboxReady := rs.ActiveSandbox() != nil && rs.ActiveSandbox().Ready
	st.Conditions = append(st.Conditions,
		condition(corev1.PodReadyToStartContainers, sandboxReady, "", ""),
		initializedCondition(pod, st))
	var notReady []string
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) && !st.InitContainerStatuses[i].Ready {
			notReady = append(notReady, st.InitContainerStatuses[i].Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			notReady = append(notReady, cs.Name)
		}
	}
	ready := len(notReady) == 0 && len(st.ContainerStatuses) > 0 && st.Phase == corev1.PodRunning
	reason, msg := "", ""
	if !ready {
		reason = "ContainersNotReady"
		msg = "containers with unready status: [" + strings.Join(notReady, " ") + "]"
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
	if c, ok := resizeCondition(pod, rs); ok && st.Phase == corev1.PodRunning {
		st.Conditions = append(st.Conditions, c)
	}
	// The spec generation this status describes, on the status and on
	// the conditions the agent owns, as kubelet reports it.
	st.ObservedGeneration = pod.Generation
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = pod.Generation
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			st.Conditions = append(st.Conditions, c)
		}
	}
	return st
}

func isSidecar(c *corev1.Container) bool { return kuberuntime.IsSidecar(c) }

// initializedCondition is the pod's Initialized condition, as kubelet
// sets it: true once every regular init container completed and every
// sidecar started, or once a regular container ran.
func initializedCondition(pod *corev1.Pod, st corev1.PodStatus) corev1.PodCondition {
	if st.Phase == corev1.PodSucceeded {
		return condition(corev1.PodInitialized, true, "PodCompleted", "")
	}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return condition(corev1.PodInitialized, true, "", "")
		}
	}
	var incomplete []string
	for i := range pod.Spec.InitContainers {
		c, cs := &pod.Spec.InitContainers[i], st.InitContainerStatuses[i]
		done := cs.Ready
		if isSidecar(c) {
			done = cs.Started != nil && *cs.Started
		}
		if !done {
			incomplete = append(incomplete, c.Name)
		}
	}
	if len(incomplete) > 0 {
		return condition(corev1.PodInitialized, false, "ContainersNotInitialized",
			"containers with incomplete status: ["+strings.Join(incomplete, " ")+"]")
	}
	return condition(corev1.PodInitialized, true, "", "")
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
func containerStatus(pod *corev1.Pod, c *corev1.Container, rs *kuberuntime.PodStatus, in Inputs, hasInits bool) corev1.ContainerStatus {
	out := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	instances := rs.Instances(c.Name)
	waiting, hasWaiting := in.Waiting[c.Name]
	if len(instances) == 0 {
		// Never created yet: kubelet's default waiting reason.
		reason := kuberuntime.ReasonContainerCreating
		if hasInits {
			reason = kuberuntime.ReasonPodInitializing
		}
		msg := ""
		if hasWaiting && waiting.Reason != kuberuntime.ReasonContainerCreating {
			reason, msg = waiting.Reason, waiting.Message
		}
		out.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
		out.Started = ptr(false)
		return out
	}
	newest := instances[0]
	var actual *runtimeapi.LinuxContainerResources
	if newest.State == kuberuntime.StateRunning {
		actual = newest.Resources
	}
	out.AllocatedResources, out.Resources = containerResources(c, actual)
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

// containerResources are a created container's allocatedResources (its
// requests: the agent admits every resize) and resources (what it runs
// with), as kubelet reports them: the spec's, with the cpu request, cpu
// limit and memory limit of a running container read back from its
// cgroup settings (actual; nil: as the spec says).
func containerResources(c *corev1.Container, actual *runtimeapi.LinuxContainerResources) (corev1.ResourceList, *corev1.ResourceRequirements) {
	var allocated corev1.ResourceList
	if len(c.Resources.Requests) > 0 {
		allocated = c.Resources.Requests.DeepCopy()
	}
	res := c.Resources.DeepCopy()
	if actual == nil {
		return allocated, res
	}
	if res.Limits != nil {
		// A quota at its floor (10m) stands for any limit up to it.
		if actual.CpuQuota > 0 && actual.CpuPeriod > 0 {
			milli := actual.CpuQuota * 1000 / actual.CpuPeriod
			if milli > minMilliCPULimit || res.Limits.Cpu().MilliValue() > minMilliCPULimit {
				res.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
			}
		}
		if actual.MemoryLimitInBytes > 0 {
			res.Limits[corev1.ResourceMemory] = *resource.NewQuantity(actual.MemoryLimitInBytes, resource.BinarySI)
		}
	}
	if res.Requests != nil {
		// cpu shares back to millicores, rounded up; the least shares
		// stand for "no request" unless one was asked, as kubelet reads them.
		milli := (actual.CpuShares*1000 + 1023) / 1024
		if milli > minShares || res.Requests.Cpu().MilliValue() > minShares {
			res.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	return allocated, res
}

// minShares is the least cpu shares a container gets (no cpu request),
// compared as millicores; minMilliCPULimit is the least CFS quota (1 ms
// per 100 ms period) as millicores.
const (
	minShares        = 2
	minMilliCPULimit = 10
)

// resizeCondition is PodResizeInProgress while a running container's
// cgroups do not yet say what its spec asks, as kubelet reports a resize
// it has admitted but not actuated; ok false: no resize in progress.
func resizeCondition(pod *corev1.Pod, rs *kuberuntime.PodStatus) (corev1.PodCondition, bool) {
	check := func(c *corev1.Container) bool {
		inst := rs.FindContainer(c.Name)
		return inst == nil || inst.State != kuberuntime.StateRunning || kuberuntime.ResourcesActuated(c, inst.Resources)
	}
	for i := range pod.Spec.Containers {
		if !check(&pod.Spec.Containers[i]) {
			return corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}, true
		}
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) && !check(&pod.Spec.InitContainers[i]) {
			return corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}, true
		}
	}
	return corev1.PodCondition{}, false
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
// kubelet does (without per-container restart rules). appCreated says a
// regular container of the pod was created: the pod got past its init
// containers.
func Phase(pod *corev1.Pod, inits, apps []corev1.ContainerStatus, terminal, appCreated bool) corev1.PodPhase {
	byName := func(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
		for _, s := range list {
			if s.Name == name {
				return s, true
			}
		}
		return corev1.ContainerStatus{}, false
	}
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s, ok := byName(inits, c.Name)
		if isSidecar(c) {
			// A sidecar counts while it runs or waits for its first
			// start; once it stopped it no longer decides the phase.
			switch {
			case !ok:
				unknown++
			case s.State.Running != nil:
				if s.Started == nil || !*s.Started {
					pendingSidecars++
				}
				running++
			case s.State.Terminated != nil:
			case s.State.Waiting != nil:
				if s.LastTerminationState.Terminated == nil {
					pendingSidecars++
					waiting++
				}
			default:
				pendingSidecars++
				unknown++
			}
			continue
		}
		switch {
		case !ok:
			pendingInit++
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
	if failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	for i := range pod.Spec.Containers {
		s, ok := byName(apps, pod.Spec.Containers[i].Name)
		switch {
		case !ok:
			unknown++
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
	case pendingInit > 0, pendingSidecars > 0 && !appCreated, waiting > 0:
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
