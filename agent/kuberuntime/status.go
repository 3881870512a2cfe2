package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerState is a container's state as the runtime reports it.
type ContainerState string

// Container states.
const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

func stateOf(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return StateExited
	}
	return StateUnknown
}

// ContainerStatus is one container instance (one attempt) of a pod.
type ContainerStatus struct {
	ID           string // runtime ID, without the runtime prefix
	Name         string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Reason       string
	Message      string
	Image        string
	ImageRef     string
	Hash         string
	RestartCount int
	Init         bool
	LogPath      string
	// TerminationMessagePath is the container's termination message file.
	TerminationMessagePath   string
	TerminationMessagePolicy string
	// TerminationMessageFile is the host file mounted at TerminationMessagePath.
	TerminationMessageFile string
	PreStop                string
	GracePeriod            *int64
	// Resources are the cgroup settings the runtime reports for the
	// container (nil when it does not).
	Resources *runtimeapi.LinuxContainerResources
}

// SandboxStatus is one sandbox (one attempt) of a pod.
type SandboxStatus struct {
	ID        string
	Ready     bool
	Attempt   uint32
	CreatedAt time.Time
	IPs       []string
	// HostNetwork is true for a sandbox in the node's network namespace.
	HostNetwork bool
}

// PodStatus is the runtime's view of one pod.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes, newest first.
	Sandboxes []*SandboxStatus
	// Containers, newest first.
	Containers []*ContainerStatus
	// IPs are the newest sandbox's addresses.
	IPs []string
}

// FindContainer returns the newest instance of the named container.
func (s *PodStatus) FindContainer(name string) *ContainerStatus {
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Instances returns every instance of the named container, newest first.
func (s *PodStatus) Instances(name string) []*ContainerStatus {
	var out []*ContainerStatus
	for _, c := range s.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// ActiveSandbox returns the newest sandbox, or nil.
func (s *PodStatus) ActiveSandbox() *SandboxStatus {
	if len(s.Sandboxes) == 0 {
		return nil
	}
	return s.Sandboxes[0]
}

// GetPodStatus asks the runtime for every sandbox and container of a pod.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	out := &PodStatus{UID: uid, Name: name, Namespace: namespace}
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(uid)}})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s/%s: %w", namespace, name, err)
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	for i, sb := range sandboxes {
		st := &SandboxStatus{ID: sb.Id, Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
			Attempt: sb.GetMetadata().GetAttempt(), CreatedAt: time.Unix(0, sb.CreatedAt)}
		if i == 0 {
			resp, err := m.runtime.PodSandboxStatus(ctx, sb.Id, false)
			if err == nil && resp.Status != nil {
				st.HostNetwork = resp.Status.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
				if n := resp.Status.Network; n != nil && n.Ip != "" {
					st.IPs = append(st.IPs, n.Ip)
					for _, ip := range n.AdditionalIps {
						st.IPs = append(st.IPs, ip.Ip)
					}
				}
			}
			out.IPs = st.IPs
		}
		out.Sandboxes = append(out.Sandboxes, st)
	}
	containers, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelPodUID: string(uid)}})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", namespace, name, err)
	}
	for _, c := range containers {
		resp, err := m.runtime.ContainerStatus(ctx, c.Id, false)
		if err != nil || resp.Status == nil {
			// Removed between the list and the status call.
			continue
		}
		out.Containers = append(out.Containers, toContainerStatus(resp.Status))
	}
	sort.SliceStable(out.Containers, func(i, j int) bool {
		return out.Containers[i].CreatedAt.After(out.Containers[j].CreatedAt)
	})
	return out, nil
}

func toContainerStatus(s *runtimeapi.ContainerStatus) *ContainerStatus {
	a := s.Annotations
	restarts, _ := strconv.Atoi(a[annotationRestarts])
	cs := &ContainerStatus{
		ID:                       s.Id,
		Name:                     s.Labels[labelContainerName],
		State:                    stateOf(s.State),
		CreatedAt:                time.Unix(0, s.CreatedAt),
		ExitCode:                 int(s.ExitCode),
		Reason:                   s.Reason,
		Message:                  s.Message,
		Image:                    s.GetImage().GetImage(),
		ImageRef:                 s.ImageRef,
		Hash:                     a[annotationHash],
		RestartCount:             restarts,
		Init:                     a[annotationInit] == "true",
		LogPath:                  s.LogPath,
		TerminationMessagePath:   a[annotationTermPath],
		TerminationMessagePolicy: a[annotationTermPolicy],
		PreStop:                  a[annotationPreStop],
		Resources:                s.GetResources().GetLinux(),
	}
	if s.StartedAt > 0 {
		cs.StartedAt = time.Unix(0, s.StartedAt)
	}
	if s.FinishedAt > 0 {
		cs.FinishedAt = time.Unix(0, s.FinishedAt)
	}
	if v, err := strconv.ParseInt(a[annotationGracePeriod], 10, 64); err == nil {
		cs.GracePeriod = &v
	}
	for _, mt := range s.Mounts {
		if mt.ContainerPath == cs.TerminationMessagePath && cs.TerminationMessagePath != "" {
			cs.TerminationMessageFile = mt.HostPath
		}
	}
	return cs
}

// RunningPod is a pod as found in the runtime, for the PLEG and cleanup.
type RunningPod struct {
	UID       types.UID
	Name      string
	Namespace string
	// SandboxIDs and their readiness.
	Sandboxes map[string]bool
	// Containers by ID, with their state.
	Containers map[string]ContainerState
}

// ListPods lists every pod k1s runs in the runtime, from one sandbox and one
// container list call (cheap enough for a relist every second).
func (m *Manager) ListPods(ctx context.Context) (map[types.UID]*RunningPod, error) {
	sel := map[string]string{labelManagedBy: ManagedBy}
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	containers, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	pods := map[types.UID]*RunningPod{}
	get := func(labels map[string]string) *RunningPod {
		uid := podUIDOf(labels)
		p := pods[uid]
		if p == nil {
			p = &RunningPod{UID: uid, Name: labels[labelPodName], Namespace: labels[labelPodNamespace],
				Sandboxes: map[string]bool{}, Containers: map[string]ContainerState{}}
			pods[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		get(sb.Labels).Sandboxes[sb.Id] = sb.State == runtimeapi.PodSandboxState_SANDBOX_READY
	}
	for _, c := range containers {
		get(c.Labels).Containers[c.Id] = stateOf(c.State)
	}
	return pods, nil
}
