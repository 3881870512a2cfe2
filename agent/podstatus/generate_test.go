package podstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilptr "k8s.io/utils/ptr"

	"github.com/k1s/k1s/agent/kuberuntime"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ignoreResources leaves the containers' resources out of comparisons
// (TestGenerateContainerResources checks them).
var ignoreResources = cmpopts.IgnoreFields(corev1.ContainerStatus{}, "Resources", "AllocatedResources")

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func mt(s int) metav1.Time { return metav1.NewTime(at(s)) }

func pod(policy corev1.RestartPolicy, inits []string, apps ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy, Containers: apps}}
	p.Name, p.Namespace, p.UID = "web", "shop", "uid-1"
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func app(name string) corev1.Container { return corev1.Container{Name: name, Image: "busybox"} }

func readySandbox() []*kuberuntime.SandboxStatus {
	return []*kuberuntime.SandboxStatus{{ID: "sb", Ready: true}}
}

func running(id, name string, started, restarts int) *kuberuntime.ContainerStatus {
	return &kuberuntime.ContainerStatus{ID: id, Name: name, State: kuberuntime.StateRunning, StartedAt: at(started),
		RestartCount: restarts, Image: "busybox", ImageRef: "sha256:bb"}
}

func exited(id, name string, code, started, finished, restarts int) *kuberuntime.ContainerStatus {
	return &kuberuntime.ContainerStatus{ID: id, Name: name, State: kuberuntime.StateExited, ExitCode: code,
		StartedAt: at(started), FinishedAt: at(finished), RestartCount: restarts, Image: "busybox", ImageRef: "sha256:bb"}
}

func cond(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// conditions in Generate's order: ReadyToStart, Initialized, ContainersReady, Ready.
func conds(sandbox, initialized bool, initReason, initMsg string, ready bool, readyReason, readyMsg string) []corev1.PodCondition {
	return []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, sandbox, "", ""),
		cond(corev1.PodInitialized, initialized, initReason, initMsg),
		cond(corev1.ContainersReady, ready, readyReason, readyMsg),
		cond(corev1.PodReady, ready, readyReason, readyMsg),
	}
}

func TestGenerateContainerStatuses(t *testing.T) {
	withReadiness := app("app")
	withReadiness.ReadinessProbe = &corev1.Probe{}
	withStartup := app("app")
	withStartup.StartupProbe = &corev1.Probe{}

	tests := []struct {
		name  string
		pod   *corev1.Pod
		rs    *kuberuntime.PodStatus
		in    Inputs
		want  []corev1.ContainerStatus // app containers
		inits []corev1.ContainerStatus
	}{
		{
			name: "no instance yet: ContainerCreating",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs:   &kuberuntime.PodStatus{},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", Started: utilptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}},
		},
		{
			name: "no instance while init containers run: PodInitializing",
			pod:  pod(corev1.RestartPolicyAlways, []string{"init"}, app("app")),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("i1", "init", 1, 0)}},
			inits: []corev1.ContainerStatus{{Name: "init", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://i1", Started: utilptr.To(true), Ready: false,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(1)}}}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", Started: utilptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
		},
		{
			name: "no instance with a sync waiting reason",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox()},
			in:   Inputs{Waiting: map[string]kuberuntime.Waiting{"app": {Reason: "ErrImagePull", Message: "no registry"}}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", Started: utilptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no registry"}}}},
		},
		{
			name: "running without readiness probe is ready",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 5, 2)}},
			in:   Inputs{RuntimeName: "fake"},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "fake://c1", RestartCount: 2,
				Started: utilptr.To(true), Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(5)}}}},
		},
		{
			name: "running with a readiness probe and no result is not ready",
			pod:  pod(corev1.RestartPolicyAlways, nil, withReadiness),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 5, 0)}},
			in:   Inputs{Ready: func(string) (bool, bool) { return false, false }},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c1",
				Started: utilptr.To(true), Ready: false, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(5)}}}},
		},
		{
			name: "running with a passing readiness probe is ready",
			pod:  pod(corev1.RestartPolicyAlways, nil, withReadiness),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 5, 0)}},
			in:   Inputs{Ready: func(id string) (bool, bool) { return id == "c1", true }},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c1",
				Started: utilptr.To(true), Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(5)}}}},
		},
		{
			name: "startup probe without a result: not started, not ready",
			pod:  pod(corev1.RestartPolicyAlways, nil, withStartup),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 5, 0)}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c1",
				Started: utilptr.To(false), Ready: false, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(5)}}}},
		},
		{
			name: "startup probe passed: started and ready",
			pod:  pod(corev1.RestartPolicyAlways, nil, withStartup),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 5, 0)}},
			in:   Inputs{Started: func(string) (bool, bool) { return true, true }},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c1",
				Started: utilptr.To(true), Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(5)}}}},
		},
		{
			name: "exited while backing off: Waiting with the last termination",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{exited("c2", "app", 1, 10, 12, 3), exited("c1", "app", 1, 1, 2, 2)}},
			in:   Inputs{Waiting: map[string]kuberuntime.Waiting{"app": {Reason: "CrashLoopBackOff", Message: "back-off 40s"}}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c2", RestartCount: 3, Started: utilptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", StartedAt: mt(10), FinishedAt: mt(12), ContainerID: "containerd://c2"}}}},
		},
		{
			name: "exited with nothing to wait for: Terminated, previous instance as last state",
			pod:  pod(corev1.RestartPolicyOnFailure, nil, app("app")),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
				exited("c2", "app", 0, 10, 12, 1),
				{ID: "c1", Name: "app", State: kuberuntime.StateExited, ExitCode: 137, Reason: "OOMKilled", StartedAt: at(1), FinishedAt: at(2)},
			}},
			in: Inputs{TerminationMessage: func(cs *kuberuntime.ContainerStatus) string {
				if cs.ID == "c2" {
					return "all done"
				}
				return ""
			}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c2", RestartCount: 1, Started: utilptr.To(false),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", Message: "all done", StartedAt: mt(10), FinishedAt: mt(12), ContainerID: "containerd://c2"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: mt(1), FinishedAt: mt(2), ContainerID: "containerd://c1"}}}},
		},
		{
			name: "running after a restart: the previous instance is the last state",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
				running("c2", "app", 20, 1), exited("c1", "app", 2, 1, 15, 0)}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c2", RestartCount: 1,
				Started: utilptr.To(true), Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(20)}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 2, Reason: "Error", StartedAt: mt(1), FinishedAt: mt(15), ContainerID: "containerd://c1"}}}},
		},
		{
			name: "created but not started: Waiting",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
				{ID: "c1", Name: "app", State: kuberuntime.StateCreated, Image: "busybox"}}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ContainerID: "containerd://c1", Started: utilptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}},
		},
		{
			name: "an instance of an older spec shows its own image",
			pod: func() *corev1.Pod {
				p := pod(corev1.RestartPolicyAlways, nil, app("app"))
				p.Spec.Containers[0].Image = "busybox:new"
				return p
			}(),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 5, 0)}},
			want: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ImageID: "sha256:bb", ContainerID: "containerd://c1",
				Started: utilptr.To(true), Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(5)}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Generate(tt.pod, tt.rs, tt.in)
			if diff := cmp.Diff(tt.want, st.ContainerStatuses, ignoreResources); diff != "" {
				t.Errorf("container statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.inits, st.InitContainerStatuses, ignoreResources); diff != "" {
				t.Errorf("init container statuses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGeneratePhaseAndConditions(t *testing.T) {
	waitingCreate := "containers with unready status: [app]"
	withSidecar := func(startup, readiness bool) *corev1.Pod {
		p := pod(corev1.RestartPolicyAlways, []string{"sc"}, app("app"))
		sc := &p.Spec.InitContainers[0]
		sc.RestartPolicy = utilptr.To(corev1.ContainerRestartPolicyAlways)
		if startup {
			sc.StartupProbe = &corev1.Probe{}
		}
		if readiness {
			sc.ReadinessProbe = &corev1.Probe{}
		}
		return p
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		rs        *kuberuntime.PodStatus
		in        Inputs
		wantPhase corev1.PodPhase
		wantConds []corev1.PodCondition
	}{
		{
			name:      "new pod",
			pod:       pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs:        &kuberuntime.PodStatus{},
			wantPhase: corev1.PodPending,
			wantConds: conds(false, true, "", "", false, "ContainersNotReady", waitingCreate),
		},
		{
			name:      "init container running",
			pod:       pod(corev1.RestartPolicyAlways, []string{"i1", "i2"}, app("app")),
			rs:        &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("c1", "i1", 1, 0)}},
			wantPhase: corev1.PodPending,
			wantConds: conds(true, false, "ContainersNotInitialized", "containers with incomplete status: [i1 i2]", false, "ContainersNotReady", waitingCreate),
		},
		{
			name: "init container failed under Never",
			pod:  pod(corev1.RestartPolicyNever, []string{"i1"}, app("app")),
			rs:   &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{exited("c1", "i1", 1, 1, 2, 0)}},
			// Upstream: the pod failed; ContainersReady says why.
			wantPhase: corev1.PodFailed,
			wantConds: conds(true, false, "ContainersNotInitialized", "containers with incomplete status: [i1]", false, "PodFailed", ""),
		},
		{
			name:      "init container failed under OnFailure, backing off",
			pod:       pod(corev1.RestartPolicyOnFailure, []string{"i1"}, app("app")),
			rs:        &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{exited("c1", "i1", 1, 1, 2, 0)}},
			in:        Inputs{Waiting: map[string]kuberuntime.Waiting{"i1": {Reason: "CrashLoopBackOff"}}},
			wantPhase: corev1.PodPending,
			wantConds: conds(true, false, "ContainersNotInitialized", "containers with incomplete status: [i1]", false, "ContainersNotReady", waitingCreate),
		},
		{
			name: "initialized and running",
			pod:  pod(corev1.RestartPolicyAlways, []string{"i1"}, app("app")),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
				running("c2", "app", 3, 0), exited("c1", "i1", 0, 1, 2, 0)}},
			wantPhase: corev1.PodRunning,
			wantConds: conds(true, true, "", "", true, "", ""),
		},
		{
			name: "running but one container unready",
			pod: func() *corev1.Pod {
				p := pod(corev1.RestartPolicyAlways, nil, app("a"), app("b"), app("c"))
				p.Spec.Containers[1].ReadinessProbe = &corev1.Probe{}
				p.Spec.Containers[2].ReadinessProbe = &corev1.Probe{}
				return p
			}(),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
				running("c1", "a", 1, 0), running("c2", "b", 1, 0), running("c3", "c", 1, 0)}},
			wantPhase: corev1.PodRunning,
			wantConds: conds(true, true, "", "", false, "ContainersNotReady", "containers with unready status: [b c]"),
		},
		{
			name: "sandbox gone while containers are listed",
			pod:  pod(corev1.RestartPolicyAlways, nil, app("app")),
			rs: &kuberuntime.PodStatus{Sandboxes: []*kuberuntime.SandboxStatus{{ID: "sb", Ready: false}},
				Containers: []*kuberuntime.ContainerStatus{exited("c1", "app", 137, 1, 2, 0)}},
			wantPhase: corev1.PodRunning,
			wantConds: conds(false, true, "", "", false, "ContainersNotReady", waitingCreate),
		},
		{
			name:      "OnFailure, all succeeded",
			pod:       pod(corev1.RestartPolicyOnFailure, []string{"i1"}, app("app")),
			rs:        &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{exited("c2", "app", 0, 3, 4, 0), exited("c1", "i1", 0, 1, 2, 0)}},
			wantPhase: corev1.PodSucceeded,
			wantConds: conds(true, true, "PodCompleted", "", false, "PodCompleted", ""),
		},
		{
			name:      "Never, a container failed",
			pod:       pod(corev1.RestartPolicyNever, nil, app("app")),
			rs:        &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{exited("c1", "app", 1, 1, 2, 0)}},
			wantPhase: corev1.PodFailed,
			wantConds: conds(true, true, "", "", false, "PodFailed", ""),
		},
		{
			name:      "sidecar whose startup probe has not passed: not initialized",
			pod:       withSidecar(true, false),
			rs:        &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("s1", "sc", 1, 0)}},
			in:        Inputs{Started: func(string) (bool, bool) { return false, true }},
			wantPhase: corev1.PodPending,
			wantConds: conds(true, false, "ContainersNotInitialized", "containers with incomplete status: [sc]", false, "ContainersNotReady", "containers with unready status: [sc app]"),
		},
		{
			name:      "started sidecar: initialized before the app container runs",
			pod:       withSidecar(true, false),
			rs:        &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{running("s1", "sc", 1, 0)}},
			in:        Inputs{Started: func(string) (bool, bool) { return true, true }},
			wantPhase: corev1.PodPending,
			wantConds: conds(true, true, "", "", false, "ContainersNotReady", waitingCreate),
		},
		{
			name: "an unready sidecar keeps the pod unready",
			pod:  withSidecar(false, true),
			rs: &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
				running("c1", "app", 2, 0), running("s1", "sc", 1, 0)}},
			in:        Inputs{Ready: func(string) (bool, bool) { return false, true }},
			wantPhase: corev1.PodRunning,
			wantConds: conds(true, true, "", "", false, "ContainersNotReady", "containers with unready status: [sc]"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Generate(tt.pod, tt.rs, tt.in)
			if st.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.wantPhase)
			}
			if diff := cmp.Diff(tt.wantConds, st.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerateAddressesGatesAndCarriedFields(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, app("app"))
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	start := metav1.NewTime(t0)
	p.Status = corev1.PodStatus{
		QOSClass:  corev1.PodQOSBestEffort,
		StartTime: &start,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: "example.com/lb", Status: corev1.ConditionFalse},
		},
	}
	rs := &kuberuntime.PodStatus{Sandboxes: readySandbox(), IPs: []string{"10.42.0.5", "fd00:42::5"},
		Containers: []*kuberuntime.ContainerStatus{running("c1", "app", 1, 0)}}
	in := Inputs{HostIPs: []string{"192.168.5.10", "fd00::10"}}

	st := Generate(p, rs, in)
	if st.PodIP != "10.42.0.5" || !cmp.Equal(st.PodIPs, []corev1.PodIP{{IP: "10.42.0.5"}, {IP: "fd00:42::5"}}) {
		t.Errorf("pod IPs = %q %v", st.PodIP, st.PodIPs)
	}
	if st.HostIP != "192.168.5.10" || !cmp.Equal(st.HostIPs, []corev1.HostIP{{IP: "192.168.5.10"}, {IP: "fd00::10"}}) {
		t.Errorf("host IPs = %q %v", st.HostIP, st.HostIPs)
	}
	if st.QOSClass != corev1.PodQOSBestEffort || st.StartTime != &start {
		t.Errorf("QOS class %q / start time %v not carried", st.QOSClass, st.StartTime)
	}
	got := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range st.Conditions {
		got[c.Type] = c.Status
	}
	want := map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodReadyToStartContainers: corev1.ConditionTrue, corev1.PodInitialized: corev1.ConditionTrue,
		corev1.ContainersReady: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionFalse, // the gate is false
		corev1.PodScheduled: corev1.ConditionTrue,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}

	p.Status.Conditions[1].Status = corev1.ConditionTrue
	for _, c := range Generate(p, rs, in).Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			t.Errorf("Ready = %s with the gate true", c.Status)
		}
	}

	p.Spec.HostNetwork = true
	st = Generate(p, rs, in)
	if st.PodIP != "192.168.5.10" || len(st.PodIPs) != 2 || st.PodIPs[1].IP != "fd00::10" {
		t.Errorf("host network pod IPs = %q %v, want the node's", st.PodIP, st.PodIPs)
	}
}

func TestPhase(t *testing.T) {
	runningS := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	term := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	waitingAfter := func(code int32) corev1.ContainerStatus {
		s := waiting
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code}
		return s
	}
	unknown := corev1.ContainerStatus{}
	named := func(s corev1.ContainerStatus, n string) corev1.ContainerStatus { s.Name = n; return s }

	type tc struct {
		name     string
		policy   corev1.RestartPolicy
		nInits   int
		inits    []corev1.ContainerStatus
		apps     []corev1.ContainerStatus
		terminal bool
		want     corev1.PodPhase
	}
	tests := []tc{
		{"all running", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{runningS, runningS}, false, corev1.PodRunning},
		{"one running one waiting", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{runningS, waiting}, false, corev1.PodPending},
		{"one running one restarting", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{runningS, waitingAfter(1)}, false, corev1.PodRunning},
		{"unknown container state", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{runningS, unknown}, false, corev1.PodPending},
		{"Always, all exited", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{term(0), term(1)}, false, corev1.PodRunning},
		{"Always, all succeeded", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{term(0)}, false, corev1.PodRunning},
		{"Always, restarting after failure", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{waitingAfter(2)}, false, corev1.PodRunning},
		{"OnFailure, all succeeded", corev1.RestartPolicyOnFailure, 0, nil, []corev1.ContainerStatus{term(0), term(0)}, false, corev1.PodSucceeded},
		{"OnFailure, one failed", corev1.RestartPolicyOnFailure, 0, nil, []corev1.ContainerStatus{term(0), term(1)}, false, corev1.PodRunning},
		{"OnFailure, one running one succeeded", corev1.RestartPolicyOnFailure, 0, nil, []corev1.ContainerStatus{runningS, term(0)}, false, corev1.PodRunning},
		{"Never, all succeeded", corev1.RestartPolicyNever, 0, nil, []corev1.ContainerStatus{term(0), term(0)}, false, corev1.PodSucceeded},
		{"Never, one failed", corev1.RestartPolicyNever, 0, nil, []corev1.ContainerStatus{term(0), term(1)}, false, corev1.PodFailed},
		{"Never, one failed one running", corev1.RestartPolicyNever, 0, nil, []corev1.ContainerStatus{term(1), runningS}, false, corev1.PodRunning},
		{"terminal, all succeeded under Always", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{term(0), term(0)}, true, corev1.PodSucceeded},
		{"terminal, one failed under Always", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{term(0), term(137)}, true, corev1.PodFailed},
		{"terminal with waiting containers stays Pending", corev1.RestartPolicyAlways, 0, nil, []corev1.ContainerStatus{waiting}, true, corev1.PodPending},
		{"init running", corev1.RestartPolicyAlways, 1, []corev1.ContainerStatus{runningS}, []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
		{"init waiting first time", corev1.RestartPolicyAlways, 1, []corev1.ContainerStatus{waiting}, []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
		{"init status missing", corev1.RestartPolicyAlways, 2, []corev1.ContainerStatus{term(0)}, []corev1.ContainerStatus{runningS}, false, corev1.PodPending},
		{"init failed under Never", corev1.RestartPolicyNever, 1, []corev1.ContainerStatus{term(1)}, []corev1.ContainerStatus{waiting}, false, corev1.PodFailed},
		{"init failed and backing off under Never", corev1.RestartPolicyNever, 1, []corev1.ContainerStatus{waitingAfter(1)}, []corev1.ContainerStatus{waiting}, false, corev1.PodFailed},
		{"init failed under OnFailure", corev1.RestartPolicyOnFailure, 1, []corev1.ContainerStatus{waitingAfter(1)}, []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
		{"init failed under Always", corev1.RestartPolicyAlways, 1, []corev1.ContainerStatus{term(1)}, []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
		{"init done, apps running", corev1.RestartPolicyAlways, 2, []corev1.ContainerStatus{term(0), term(0)}, []corev1.ContainerStatus{runningS}, false, corev1.PodRunning},
		{"init done, apps succeeded under Never", corev1.RestartPolicyNever, 1, []corev1.ContainerStatus{term(0)}, []corev1.ContainerStatus{term(0)}, false, corev1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inits []string
			for i := 0; i < tt.nInits; i++ {
				inits = append(inits, string(rune('a'+i)))
			}
			var apps []corev1.Container
			for i := range tt.apps {
				apps = append(apps, app(string(rune('m'+i))))
				tt.apps[i] = named(tt.apps[i], apps[i].Name)
			}
			for i := range tt.inits {
				tt.inits[i] = named(tt.inits[i], inits[i])
			}
			p := pod(tt.policy, inits, apps...)
			if got := Phase(p, tt.inits, tt.apps, tt.terminal, false); got != tt.want {
				t.Errorf("Phase = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPhaseSidecars(t *testing.T) {
	st := func(name string, state corev1.ContainerState, started bool) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: state, Started: &started}
	}
	run := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	done := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	wait := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	tests := []struct {
		name       string
		policy     corev1.RestartPolicy
		sidecar    corev1.ContainerStatus
		app        corev1.ContainerStatus
		appCreated bool
		want       corev1.PodPhase
	}{
		{"sidecar not started yet", corev1.RestartPolicyAlways, st("sc", run, false), st("m", wait, false), false, corev1.PodPending},
		{"sidecar started, app not created", corev1.RestartPolicyAlways, st("sc", run, true), st("m", wait, false), false, corev1.PodPending},
		{"sidecar and app running", corev1.RestartPolicyAlways, st("sc", run, true), st("m", run, true), true, corev1.PodRunning},
		{"app done under Never, sidecar still running", corev1.RestartPolicyNever, st("sc", run, true), st("m", done(0), false), true, corev1.PodRunning},
		{"app done under Never, sidecar stopped", corev1.RestartPolicyNever, st("sc", done(137), false), st("m", done(0), false), true, corev1.PodSucceeded},
		{"app failed under Never, sidecar stopped", corev1.RestartPolicyNever, st("sc", done(0), false), st("m", done(1), false), true, corev1.PodFailed},
		{"sidecar restarting does not make the pod pending", corev1.RestartPolicyAlways, st("sc", done(1), false), st("m", run, true), true, corev1.PodRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod(tt.policy, []string{"sc"}, app("m"))
			p.Spec.InitContainers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			got := Phase(p, []corev1.ContainerStatus{tt.sidecar}, []corev1.ContainerStatus{tt.app}, false, tt.appCreated)
			if got != tt.want {
				t.Errorf("Phase = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestGenerateInitContainerStatuses: a completed init container is ready,
// one not run yet waits with PodInitializing (kubelet's default reason
// in a pod with init containers), as the InitContainer conformance specs
// expect.
func TestGenerateInitContainerStatuses(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, []string{"i1", "i2"}, app("app"))
	rs := &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
		exited("c2", "i1", 1, 3, 4, 1), exited("c1", "i1", 1, 1, 2, 0)}}
	st := Generate(p, rs, Inputs{Waiting: map[string]kuberuntime.Waiting{"i1": {Reason: "CrashLoopBackOff"}}})
	i1, i2, a := st.InitContainerStatuses[0], st.InitContainerStatuses[1], st.ContainerStatuses[0]
	if i1.Ready || i1.State.Waiting == nil || i1.State.Waiting.Reason != "CrashLoopBackOff" || i1.LastTerminationState.Terminated == nil {
		t.Errorf("failed init container status = %+v", i1)
	}
	for _, cs := range []corev1.ContainerStatus{i2, a} {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "PodInitializing" {
			t.Errorf("%s state = %+v, want waiting PodInitializing", cs.Name, cs.State)
		}
	}

	rs = &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
		running("c3", "app", 5, 0), exited("c2", "i2", 0, 3, 4, 0), exited("c1", "i1", 0, 1, 2, 0)}}
	st = Generate(p, rs, Inputs{})
	for _, cs := range st.InitContainerStatuses {
		if !cs.Ready || cs.State.Terminated == nil || cs.Started == nil || *cs.Started {
			t.Errorf("completed init container %s: ready=%v state=%+v started=%v, want ready, terminated, not started", cs.Name, cs.Ready, cs.State, cs.Started)
		}
	}
}

// TestGenerateContainerResources: a created container reports the
// resources it runs with and its requests as allocatedResources (the In
// Place Resize conformance specs read them); one not created yet reports
// none.
func TestGenerateContainerResources(t *testing.T) {
	withRes := app("app")
	withRes.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("20Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}
	p := pod(corev1.RestartPolicyAlways, nil, withRes, app("besteffort"), app("pending"))
	rs := &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{
		running("c1", "app", 1, 0), running("c2", "besteffort", 1, 0)}}
	st := Generate(p, rs, Inputs{})
	a, be, pending := st.ContainerStatuses[0], st.ContainerStatuses[1], st.ContainerStatuses[2]
	if a.Resources == nil || !cmp.Equal(*a.Resources, withRes.Resources) || !cmp.Equal(a.AllocatedResources, withRes.Resources.Requests) {
		t.Errorf("app resources %v allocated %v, want %v and its requests", a.Resources, a.AllocatedResources, withRes.Resources)
	}
	if be.Resources == nil || be.Resources.Requests != nil || be.Resources.Limits != nil || be.AllocatedResources != nil {
		t.Errorf("best-effort resources %v allocated %v, want empty", be.Resources, be.AllocatedResources)
	}
	if pending.Resources != nil {
		t.Errorf("a container not created reports resources %v", pending.Resources)
	}
}

// TestGenerateResize: a running container's resources are read back from
// its cgroups; while they differ from the spec's (a resize admitted, not
// yet applied) the pod says PodResizeInProgress.
func TestGenerateResize(t *testing.T) {
	c := app("app")
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("20Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("60Mi")},
	}
	p := pod(corev1.RestartPolicyAlways, nil, c)
	inst := running("c1", "app", 1, 0)
	rs := &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{inst}}
	resizing := func(st corev1.PodStatus) bool {
		for _, c := range st.Conditions {
			if c.Type == corev1.PodResizeInProgress && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}

	// Still the old settings: 100m/200m, 40Mi.
	inst.Resources = &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuQuota: 20000, CpuPeriod: 100000, MemoryLimitInBytes: 40 << 20}
	st := Generate(p, rs, Inputs{})
	if !resizing(st) {
		t.Errorf("no PodResizeInProgress while the cgroups lag the spec: %+v", st.Conditions)
	}
	r := st.ContainerStatuses[0].Resources
	if r.Requests.Cpu().MilliValue() != 100 || r.Limits.Cpu().MilliValue() != 200 || r.Limits.Memory().Value() != 40<<20 || r.Requests.Memory().Value() != 20<<20 {
		t.Errorf("resources %v, want what the cgroups say (100m, 200m, 40Mi) and the memory request", r)
	}

	// Applied.
	inst.Resources = kuberuntime.CgroupResources(&c)
	st = Generate(p, rs, Inputs{})
	if resizing(st) {
		t.Errorf("PodResizeInProgress once the cgroups match: %+v", st.Conditions)
	}
	if diff := cmp.Diff(c.Resources, *st.ContainerStatuses[0].Resources); diff != "" {
		t.Errorf("resources once applied (-want +got):\n%s", diff)
	}
}

// TestGenerateResizeEquivalents: requests and limits below the cgroups'
// floors (2 shares, a 1 ms quota) read back as the spec says, as kubelet
// reports them ("resize with equivalents").
func TestGenerateResizeEquivalents(t *testing.T) {
	c := app("app")
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m")},
	}
	inst := running("c1", "app", 1, 0)
	inst.Resources = kuberuntime.CgroupResources(&c) // 2 shares, quota 1000/100000: also what 2m/10m gives
	st := Generate(pod(corev1.RestartPolicyAlways, nil, c), &kuberuntime.PodStatus{Sandboxes: readySandbox(), Containers: []*kuberuntime.ContainerStatus{inst}}, Inputs{})
	if diff := cmp.Diff(c.Resources, *st.ContainerStatuses[0].Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
}
