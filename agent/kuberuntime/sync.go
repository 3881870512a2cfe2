package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Waiting reasons for containers that are not running.
const (
	ReasonContainerCreating = "ContainerCreating"
	ReasonPodInitializing   = "PodInitializing"
	ReasonCrashLoopBackOff  = "CrashLoopBackOff"
	ReasonCreateError       = "CreateContainerError"
	ReasonConfigError       = "CreateContainerConfigError"
	ReasonRunError          = "RunContainerError"
	ReasonPostStartError    = "PostStartHookError"
)

// Waiting explains why a container is not running.
type Waiting struct {
	Reason  string
	Message string
}

// SyncResult is what one SyncPod did and saw.
type SyncResult struct {
	// Waiting holds the waiting reason of containers that could not start.
	Waiting map[string]Waiting
	// Err is the first failure (also reflected in Waiting).
	Err error
	// Changed says SyncPod asked the runtime to create, start or stop
	// something: the pod's runtime status must be read again.
	Changed bool
}

func (r *SyncResult) wait(name, reason, msg string, err error) {
	if r.Waiting == nil {
		r.Waiting = map[string]Waiting{}
	}
	r.Waiting[name] = Waiting{Reason: reason, Message: msg}
	if r.Err == nil {
		r.Err = err
	}
}

// actions is what SyncPod must do to a pod.
type actions struct {
	killPod       bool
	createSandbox bool
	attempt       uint32
	// initsToStart are init containers to (re)start, in order: the next
	// regular one, and sidecars that are not running.
	initsToStart []*corev1.Container
	initFailed   bool
	startApps    []*corev1.Container
	// startEphemeral are ephemeral containers never started yet (they
	// run once and are never restarted).
	startEphemeral []*corev1.Container
	// resize are running containers whose resources changed, to update
	// in place (container ID → spec).
	resize map[string]*corev1.Container
	kill   map[string]string // container ID → why
}

// Probes is what the prober knows of a pod's running containers.
type Probes struct {
	// LivenessFailed names containers whose running instance failed its
	// liveness probe.
	LivenessFailed sets.Set[string]
	// Started reports whether a running container instance (name, ID)
	// passed its startup probe; known is false while no result exists.
	// nil: no results.
	Started func(name, id string) (started, known bool)
}

func (p Probes) started(name, id string) bool {
	if p.Started == nil {
		return false
	}
	s, known := p.Started(name, id)
	return known && s
}

// IsSidecar reports whether an init container is restartable (a sidecar:
// restartPolicy Always), which runs beside the pod's containers.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// ShouldRestart reports whether a container that exited with code must
// run again under restartPolicy.
func ShouldRestart(policy corev1.RestartPolicy, exitCode int) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// computeActions compares the pod's spec with what the runtime runs.
func (m *Manager) computeActions(pod *corev1.Pod, st *PodStatus, probes Probes) actions {
	a := actions{kill: map[string]string{}, resize: map[string]*corev1.Container{}}
	sb := st.ActiveSandbox()
	needSandbox := sb == nil || !sb.Ready || sb.HostNetwork != pod.Spec.HostNetwork
	if sb != nil {
		a.attempt = sb.Attempt + 1
	}
	if needSandbox {
		if sb != nil {
			a.killPod = true
		}
		// A pod that will never restart its containers gets no new sandbox
		// once its containers ran: it is finished.
		if sb != nil && pod.Spec.RestartPolicy == corev1.RestartPolicyNever && len(st.Containers) > 0 {
			return a
		}
		a.createSandbox = true
		if len(pod.Spec.InitContainers) > 0 {
			a.initsToStart = []*corev1.Container{&pod.Spec.InitContainers[0]}
			return a
		}
		for i := range pod.Spec.Containers {
			a.startApps = append(a.startApps, &pod.Spec.Containers[i])
		}
		return a
	}

	// Ephemeral containers start even while init containers run (or
	// fail), as kubelet's do; they never restart.
	for i := range pod.Spec.EphemeralContainers {
		if c := EphemeralAsContainer(&pod.Spec.EphemeralContainers[i]); st.FindContainer(c.Name) == nil {
			a.startEphemeral = append(a.startEphemeral, c)
		}
	}
	if !m.initActions(pod, st, probes, &a) {
		return a
	}

	known := sets.New[string]()
	appsLeft := false // a regular container runs or will run again
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		known.Insert(c.Name)
		cs := st.FindContainer(c.Name)
		switch {
		case cs == nil:
			a.startApps = append(a.startApps, c)
		case cs.State == StateRunning:
			appsLeft = true
			switch {
			case specChanged(c, cs.Hash):
				a.kill[cs.ID] = fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)
				a.startApps = append(a.startApps, c)
			case probes.LivenessFailed.Has(c.Name):
				a.kill[cs.ID] = fmt.Sprintf("Container %s failed liveness probe, will be restarted", c.Name)
				if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
					a.startApps = append(a.startApps, c)
				}
			default:
				if a.planResize(c, cs) {
					a.startApps = append(a.startApps, c)
				}
			}
		case cs.State == StateExited:
			if ShouldRestart(pod.Spec.RestartPolicy, cs.ExitCode) {
				a.startApps = append(a.startApps, c)
			}
		default:
			a.kill[cs.ID] = "container in an unknown state"
			a.startApps = append(a.startApps, c)
		}
	}
	if len(a.startApps) > 0 {
		appsLeft = true
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		known.Insert(c.Name)
		if appsLeft || !IsSidecar(c) {
			continue
		}
		// Every regular container is done for good: the sidecars stop
		// too, and the pod completes.
		if cs := st.FindContainer(c.Name); cs != nil && cs.State == StateRunning {
			a.kill[cs.ID] = fmt.Sprintf("Sidecar %s stopped: the pod's containers have completed", c.Name)
		}
	}
	if !appsLeft {
		a.initsToStart = nil
	}
	for i := range pod.Spec.EphemeralContainers {
		known.Insert(pod.Spec.EphemeralContainers[i].Name)
	}
	for _, cs := range st.Containers {
		if !known.Has(cs.Name) && cs.State == StateRunning {
			a.kill[cs.ID] = fmt.Sprintf("Container %s is not in the pod's spec", cs.Name)
		}
	}
	return a
}

// planResize plans the in-place resize of running container cs when its
// spec's resources changed: an update of its cgroups, or, when its resize
// policy says RestartContainer for a changed resource, a restart (true:
// the caller starts it again).
func (a *actions) planResize(c *corev1.Container, cs *ContainerStatus) (restart bool) {
	cpu, memory := resizeNeeds(c, cs.Resources)
	if !cpu && !memory {
		return false
	}
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy == corev1.RestartContainer &&
			((p.ResourceName == corev1.ResourceCPU && cpu) || (p.ResourceName == corev1.ResourceMemory && memory)) {
			a.kill[cs.ID] = fmt.Sprintf("Container %s resized, will be restarted", c.Name)
			return true
		}
	}
	a.resize[cs.ID] = c
	return false
}

// initActions decides what the pod's init containers need, as kubelet
// does: regular init containers run one at a time, in order, each to
// success; a sidecar (restartable init container) is started in its turn,
// the next init container waits until it has started (its startup probe
// passed), and it is restarted whenever it exits. It reports whether the
// pod is initialized: its regular containers may run.
func (m *Manager) initActions(pod *corev1.Pod, st *PodStatus, probes Probes, a *actions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	initialized := false
	for i := range pod.Spec.Containers {
		if st.FindContainer(pod.Spec.Containers[i].Name) != nil {
			initialized = true // a regular container was created: init is over
		}
	}
	// Walk back from the last init container that has run: it is the one
	// in progress; before it, only sidecars need care.
	seenCurrent := initialized
	var start []int
	last := len(inits) - 1
	for i := last; i >= 0; i-- {
		c := &inits[i]
		sidecar := IsSidecar(c)
		cs := st.FindContainer(c.Name)
		if cs == nil {
			if seenCurrent && sidecar {
				start = append(start, i)
			}
			continue
		}
		if seenCurrent && !sidecar {
			continue
		}
		current := !seenCurrent
		seenCurrent = true
		switch cs.State {
		case StateRunning:
			if !sidecar {
				break // a regular init container runs: wait for it
			}
			if c.StartupProbe != nil && !probes.started(c.Name, cs.ID) {
				if probes.LivenessFailed.Has(c.Name) {
					a.kill[cs.ID] = fmt.Sprintf("Init container %s failed startup probe, will be restarted", c.Name)
					start = append(start, i)
				}
				break // the next one waits for this sidecar's startup
			}
			if i == last {
				initialized = true
			} else if current {
				start = append(start, i+1)
			}
			switch {
			case specChanged(c, cs.Hash):
				a.kill[cs.ID] = fmt.Sprintf("Init container %s definition changed, will be restarted", c.Name)
				start = append(start, i)
			case probes.LivenessFailed.Has(c.Name):
				a.kill[cs.ID] = fmt.Sprintf("Init container %s failed liveness probe, will be restarted", c.Name)
				start = append(start, i)
			default:
				if a.planResize(c, cs) {
					start = append(start, i)
				}
			}
		case StateExited:
			switch {
			case sidecar:
				start = append(start, i)
			case cs.ExitCode != 0:
				if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
					a.initFailed = true
					a.initsToStart = nil
					return false
				}
				start = append(start, i)
			case i == last:
				initialized = true
			default:
				start = append(start, i+1)
			}
		default: // created but never started, or unknown: replace it
			if !sidecar && pod.Spec.RestartPolicy == corev1.RestartPolicyNever && cs.State == StateUnknown {
				a.initFailed = true
				a.initsToStart = nil
				return false
			}
			a.kill[cs.ID] = "init container in an unknown state"
			start = append(start, i)
		}
	}
	if !seenCurrent {
		start = append(start, 0)
	}
	for j := len(start) - 1; j >= 0; j-- {
		a.initsToStart = append(a.initsToStart, &inits[start[j]])
	}
	return initialized
}

// SyncPod makes the runtime run what pod's spec asks: one pass, level based.
// volumePaths are the pod's prepared volumes (name → host path).
func (m *Manager) SyncPod(ctx context.Context, pod *corev1.Pod, st *PodStatus, volumePaths map[string]string, probes Probes) (res SyncResult) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	a := m.computeActions(pod, st, probes)

	if !a.killPod && !a.createSandbox && len(a.kill) == 0 && len(a.initsToStart) == 0 && len(a.startApps) == 0 && len(a.startEphemeral) == 0 && len(a.resize) == 0 {
		return res // the runtime already runs what the spec asks
	}
	res.Changed = true
	if a.killPod {
		if a.createSandbox {
			m.podEvent(pod, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		}
		if err := m.KillPod(ctx, pod, st, nil); err != nil {
			res.Err = err
			return res
		}
	}
	if a.initFailed {
		return res
	}

	sandboxID := ""
	if sb := st.ActiveSandbox(); sb != nil && !a.createSandbox {
		sandboxID = sb.ID
	}
	sandboxCfg, err := m.sandboxConfig(ctx, pod, a.attempt)
	if err != nil {
		res.Err = err
		return res
	}
	podIPs := st.IPs
	if a.createSandbox {
		if err := ensureDir(m.PodLogDir(pod)); err != nil {
			res.Err = err
			return res
		}
		logger.V(2).Info("Creating pod sandbox", "attempt", a.attempt)
		id, err := m.runPodSandbox(ctx, pod, sandboxCfg)
		if err != nil {
			msg := fmt.Sprintf("Failed to create pod sandbox: %v", err)
			m.podEvent(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", msg)
			for _, c := range pod.Spec.InitContainers {
				res.wait(c.Name, ReasonContainerCreating, "", errors.New(msg))
			}
			for _, c := range pod.Spec.Containers {
				res.wait(c.Name, ReasonContainerCreating, "", errors.New(msg))
			}
			return res
		}
		sandboxID = id
		if resp, err := m.runtime.PodSandboxStatus(ctx, id, false); err == nil && resp.Status != nil && resp.Status.Network != nil && resp.Status.Network.Ip != "" {
			podIPs = []string{resp.Status.Network.Ip}
			for _, ip := range resp.Status.Network.AdditionalIps {
				podIPs = append(podIPs, ip.Ip)
			}
		} else {
			podIPs = nil
		}
		// A new sandbox has no containers running, but the old sandboxes'
		// instances still count: restart counts (and log file numbers)
		// go on from them, as upstream.
		st = &PodStatus{UID: st.UID, Name: st.Name, Namespace: st.Namespace, IPs: podIPs, Containers: st.Containers}
	}

	for id, why := range a.kill {
		if cs := findByID(st, id); cs != nil {
			if err := m.killContainer(ctx, pod, cs, nil, why); err != nil && res.Err == nil {
				res.Err = err
			}
		}
	}

	for id, c := range a.resize {
		// In place: the container's cgroups take the new resources.
		linux := m.linuxContainerConfig(pod, c).Resources
		if err := m.runtime.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: linux}); err != nil {
			m.event(pod, corev1.EventTypeWarning, "ResizeError", c, fmt.Sprintf("Error resizing container %s: %v", c.Name, err))
			if res.Err == nil {
				res.Err = fmt.Errorf("resize container %s: %w", c.Name, err)
			}
			continue
		}
		logger.V(2).Info("Container resized", "container", c.Name)
	}
	for _, c := range a.startEphemeral {
		m.startContainer(ctx, pod, c, false, st, sandboxID, sandboxCfg, podIPs, volumePaths, &res)
	}
	for _, c := range a.initsToStart {
		m.startContainer(ctx, pod, c, true, st, sandboxID, sandboxCfg, podIPs, volumePaths, &res)
		if _, failed := res.Waiting[c.Name]; failed {
			return res // the init containers after it wait
		}
	}
	for _, c := range a.startApps {
		m.startContainer(ctx, pod, c, false, st, sandboxID, sandboxCfg, podIPs, volumePaths, &res)
	}
	return res
}

// EphemeralAsContainer is an ephemeral container as the container it
// runs as (the two share their fields).
func EphemeralAsContainer(ec *corev1.EphemeralContainer) *corev1.Container {
	c := corev1.Container(ec.EphemeralContainerCommon)
	return &c
}

// ephemeralTarget returns the ephemeral container of pod named name and
// the container whose process namespace it joins ("" for none).
func ephemeralTarget(pod *corev1.Pod, name string) (*corev1.EphemeralContainer, bool) {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return &pod.Spec.EphemeralContainers[i], true
		}
	}
	return nil, false
}

func findByID(st *PodStatus, id string) *ContainerStatus {
	for _, c := range st.Containers {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// startContainer creates and starts one container, honouring the restart
// back-off and the image pull policy; problems become waiting reasons.
func (m *Manager) startContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool, st *PodStatus, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, podIPs []string, volumePaths map[string]string, res *SyncResult) {
	prev := st.FindContainer(c.Name)
	restartCount := 0
	if prev != nil {
		restartCount = prev.RestartCount + 1
		if prev.State == StateExited {
			key := string(pod.UID) + "/" + c.Name
			if m.backOff.IsInBackOffSince(key, prev.FinishedAt) {
				msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
					m.backOff.Get(key), c.Name, pod.Name, pod.Namespace, pod.UID)
				m.event(pod, corev1.EventTypeWarning, "BackOff", c, "Back-off restarting failed container "+c.Name+" in pod "+pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")")
				res.wait(c.Name, ReasonCrashLoopBackOff, msg, nil)
				return
			}
			m.backOff.Next(key, prev.FinishedAt)
		}
	}
	imageRef, err := m.ensureImage(ctx, pod, c, sandboxCfg)
	if err != nil {
		ie, _ := IsImageError(err)
		res.wait(c.Name, ie.Reason, ie.Message, err)
		return
	}
	cfg, err := m.containerConfig(ctx, pod, c, podIPs, restartCount, init, volumePaths, imageRef)
	if err == nil {
		err = targetNamespace(pod, c.Name, st, cfg)
	}
	if err != nil {
		m.event(pod, corev1.EventTypeWarning, "Failed", c, fmt.Sprintf("Error: %v", err))
		res.wait(c.Name, ReasonConfigError, err.Error(), err)
		return
	}
	id, err := m.runtime.CreateContainer(ctx, sandboxID, cfg, sandboxCfg)
	if err != nil {
		m.event(pod, corev1.EventTypeWarning, "Failed", c, fmt.Sprintf("Error: %v", err))
		res.wait(c.Name, ReasonCreateError, err.Error(), err)
		return
	}
	m.event(pod, corev1.EventTypeNormal, "Created", c, "Created container: "+c.Name)
	if err := m.runtime.StartContainer(ctx, id); err != nil {
		m.event(pod, corev1.EventTypeWarning, "Failed", c, fmt.Sprintf("Error: %v", err))
		res.wait(c.Name, ReasonRunError, err.Error(), err)
		return
	}
	m.event(pod, corev1.EventTypeNormal, "Started", c, "Started container "+c.Name)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if msg, err := m.runHook(ctx, pod, c, id, podIPs, c.Lifecycle.PostStart, hookTimeout(pod)); err != nil {
			m.event(pod, corev1.EventTypeWarning, "FailedPostStartHook", c, msg)
			cs := &ContainerStatus{ID: id, Name: c.Name}
			_ = m.killContainer(ctx, pod, cs, nil, "FailedPostStartHook")
			res.wait(c.Name, ReasonPostStartError, msg, err)
			return
		}
	}
	// Keep one dead instance (for logs --previous); remove older ones,
	// unless container GC enforces another limit.
	instances := st.Instances(c.Name)
	if m.cfg.KeepAllDeadInstances {
		instances = nil
	}
	for i, old := range instances {
		if i == 0 || old.State == StateRunning {
			continue
		}
		_ = m.runtime.RemoveContainer(ctx, old.ID)
	}
}

// targetNamespace puts an ephemeral container that names a target
// container into that container's process namespace, as kubelet does.
func targetNamespace(pod *corev1.Pod, name string, st *PodStatus, cfg *runtimeapi.ContainerConfig) error {
	ec, ok := ephemeralTarget(pod, name)
	if !ok || ec.TargetContainerName == "" {
		return nil
	}
	target := st.FindContainer(ec.TargetContainerName)
	if target == nil || target.State != StateRunning {
		return fmt.Errorf("target container %q of ephemeral container %q is not running", ec.TargetContainerName, name)
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil {
		return fmt.Errorf("ephemeral container %q has no namespace options", name)
	}
	if ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid = runtimeapi.NamespaceMode_TARGET
		ns.TargetId = target.ID
	}
	return nil
}

func hookTimeout(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g > 0 {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// minGrace is the least time a container gets after its preStop hook.
const minGrace = 2 * time.Second

// killContainer runs the preStop hook, then stops the container within
// what remains of the grace period (the runtime sends SIGTERM, then SIGKILL).
func (m *Manager) killContainer(ctx context.Context, pod *corev1.Pod, cs *ContainerStatus, graceOverride *int64, why string) error {
	grace := 30 * time.Second
	switch {
	case graceOverride != nil:
		grace = time.Duration(*graceOverride) * time.Second
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	case cs.GracePeriod != nil:
		grace = time.Duration(*cs.GracePeriod) * time.Second
	}
	var spec *corev1.Container
	if pod != nil {
		spec = specOf(pod, cs.Name)
		m.event(pod, corev1.EventTypeNormal, "Killing", spec, "Stopping container "+cs.Name)
	}
	start := m.clock.Now()
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && grace > 0 && cs.State != StateExited {
		if msg, err := m.runHook(ctx, pod, spec, cs.ID, nil, spec.Lifecycle.PreStop, grace); err != nil {
			m.event(pod, corev1.EventTypeWarning, "FailedPreStopHook", spec, msg)
		}
		grace -= m.clock.Since(start)
		if grace < minGrace {
			grace = minGrace
		}
	}
	if grace < 0 {
		grace = 0
	}
	if err := m.runtime.StopContainer(ctx, cs.ID, int64(grace.Seconds())); err != nil {
		return fmt.Errorf("stop container %s (%s): %w", cs.Name, why, err)
	}
	return nil
}

func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	if ec, ok := ephemeralTarget(pod, name); ok {
		return EphemeralAsContainer(ec)
	}
	return nil
}

// KillPod stops every container of the pod (each with its preStop hook
// and grace period): the regular ones in parallel, then the sidecars one
// by one in reverse order, as kubelet does, so that what the containers'
// preStop hooks need from a sidecar is still there; then its sandboxes,
// which tears down the pod's network. pod may be nil for a pod the agent
// no longer knows.
func (m *Manager) KillPod(ctx context.Context, pod *corev1.Pod, st *PodStatus, graceOverride *int64) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(st.Containers))
	sidecars := map[string]*ContainerStatus{}
	for _, cs := range st.Containers {
		if cs.State != StateRunning && cs.State != StateCreated && cs.State != StateUnknown {
			continue
		}
		if pod != nil {
			if c := specOf(pod, cs.Name); c != nil && cs.Init && IsSidecar(c) {
				if _, seen := sidecars[cs.Name]; !seen {
					sidecars[cs.Name] = cs
					continue
				}
			}
		}
		wg.Add(1)
		go func(cs *ContainerStatus) {
			defer wg.Done()
			if err := m.killContainer(ctx, pod, cs, graceOverride, "killing pod"); err != nil {
				errs <- err
			}
		}(cs)
	}
	wg.Wait()
	if pod != nil {
		for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
			if cs := sidecars[pod.Spec.InitContainers[i].Name]; cs != nil {
				if err := m.killContainer(ctx, pod, cs, graceOverride, "killing pod"); err != nil {
					errs <- err
				}
			}
		}
	}
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	for _, sb := range st.Sandboxes {
		if err := m.runtime.StopPodSandbox(ctx, sb.ID); err != nil {
			all = append(all, fmt.Errorf("stop sandbox %s: %w", sb.ID, err))
		}
	}
	return errors.Join(all...)
}

// RemovePod deletes a stopped pod's containers and sandboxes from the
// runtime (after KillPod), freeing their resources.
func (m *Manager) RemovePod(ctx context.Context, st *PodStatus) error {
	var all []error
	for _, cs := range st.Containers {
		if err := m.runtime.RemoveContainer(ctx, cs.ID); err != nil {
			all = append(all, fmt.Errorf("remove container %s: %w", cs.ID, err))
		}
	}
	for _, sb := range st.Sandboxes {
		if err := m.runtime.RemovePodSandbox(ctx, sb.ID); err != nil {
			all = append(all, fmt.Errorf("remove sandbox %s: %w", sb.ID, err))
		}
	}
	return errors.Join(all...)
}
