package kuberuntime

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// plan is actions with containers by name, for comparison.
type plan struct {
	KillPod, CreateSandbox bool
	Attempt                uint32
	Init                   string
	InitFailed             bool
	Apps                   []string
	Kill                   []string
}

func planOf(a actions) plan {
	p := plan{KillPod: a.killPod, CreateSandbox: a.createSandbox, Attempt: a.attempt, InitFailed: a.initFailed}
	var inits []string
	for _, c := range a.initsToStart {
		inits = append(inits, c.Name)
	}
	p.Init = strings.Join(inits, ",")
	for _, c := range a.startApps {
		p.Apps = append(p.Apps, c.Name)
	}
	for id := range a.kill {
		p.Kill = append(p.Kill, id)
	}
	sort.Strings(p.Kill)
	return p
}

func TestComputeActions(t *testing.T) {
	app := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "k1s.local/busybox:1.36", ImagePullPolicy: corev1.PullIfNotPresent}
	}
	podWith := func(policy corev1.RestartPolicy, inits []corev1.Container, apps ...corev1.Container) *corev1.Pod {
		p := testPod(apps...)
		p.Spec.RestartPolicy = policy
		p.Spec.InitContainers = inits
		return p
	}
	readySB := []*SandboxStatus{{ID: "sb1", Ready: true, Attempt: 0}}
	deadSB := []*SandboxStatus{{ID: "sb1", Ready: false, Attempt: 2}}
	hashOf := func(c corev1.Container) string { return fmt.Sprintf("%x", HashContainer(&c)) }
	running := func(id string, c corev1.Container) *ContainerStatus {
		return &ContainerStatus{ID: id, Name: c.Name, State: StateRunning, Hash: hashOf(c)}
	}
	exited := func(id, name string, code int) *ContainerStatus {
		return &ContainerStatus{ID: id, Name: name, State: StateExited, ExitCode: code}
	}
	a, b := app("a"), app("b")
	i1, i2 := app("i1"), app("i2")
	changed := a
	changed.Image = "k1s.local/busybox:1.37"
	sc := app("sc")
	sc.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	scProbe := sc
	scProbe.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	startedIf := func(ok bool) func(string, string) (bool, bool) {
		return func(string, string) (bool, bool) { return ok, true }
	}

	tests := []struct {
		name     string
		pod      *corev1.Pod
		st       *PodStatus
		liveness sets.Set[string]
		started  func(name, id string) (bool, bool)
		want     plan
	}{
		{
			name: "new pod starts a sandbox and every app container",
			pod:  podWith(corev1.RestartPolicyAlways, nil, a, b),
			st:   &PodStatus{},
			want: plan{CreateSandbox: true, Apps: []string{"a", "b"}},
		},
		{
			name: "new pod with init containers starts the first init container only",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1, i2}, a),
			st:   &PodStatus{},
			want: plan{CreateSandbox: true, Init: "i1"},
		},
		{
			name: "dead sandbox is killed and recreated with the next attempt",
			pod:  podWith(corev1.RestartPolicyAlways, nil, a),
			st:   &PodStatus{Sandboxes: deadSB, Containers: []*ContainerStatus{exited("c1", "a", 0)}},
			want: plan{KillPod: true, CreateSandbox: true, Attempt: 3, Apps: []string{"a"}},
		},
		{
			name: "dead sandbox with init containers restarts from the first one",
			pod:  podWith(corev1.RestartPolicyOnFailure, []corev1.Container{i1}, a),
			st:   &PodStatus{Sandboxes: deadSB, Containers: []*ContainerStatus{exited("c0", "i1", 0), exited("c1", "a", 1)}},
			want: plan{KillPod: true, CreateSandbox: true, Attempt: 3, Init: "i1"},
		},
		{
			name: "restartPolicy Never with a dead sandbox whose containers ran gets no new sandbox",
			pod:  podWith(corev1.RestartPolicyNever, nil, a),
			st:   &PodStatus{Sandboxes: deadSB, Containers: []*ContainerStatus{exited("c1", "a", 0)}},
			want: plan{KillPod: true, Attempt: 3},
		},
		{
			name: "restartPolicy Never with a dead sandbox and no containers yet gets a new sandbox",
			pod:  podWith(corev1.RestartPolicyNever, nil, a),
			st:   &PodStatus{Sandboxes: deadSB},
			want: plan{KillPod: true, CreateSandbox: true, Attempt: 3, Apps: []string{"a"}},
		},
		{
			name: "host network change recreates the sandbox",
			pod: func() *corev1.Pod {
				p := podWith(corev1.RestartPolicyAlways, nil, a)
				p.Spec.HostNetwork = true
				return p
			}(),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("c1", a)}},
			want: plan{KillPod: true, CreateSandbox: true, Attempt: 1, Apps: []string{"a"}},
		},
		{
			name: "running init container: wait",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1, i2}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("c1", i1)}},
			want: plan{Attempt: 1},
		},
		{
			name: "init container exited 0: the next one starts",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1, i2}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "i1", 0)}},
			want: plan{Attempt: 1, Init: "i2"},
		},
		{
			name: "init container failed under Never: the pod failed",
			pod:  podWith(corev1.RestartPolicyNever, []corev1.Container{i1, i2}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "i1", 0), exited("c2", "i2", 3)}},
			want: plan{Attempt: 1, InitFailed: true},
		},
		{
			name: "init container failed under OnFailure: it restarts",
			pod:  podWith(corev1.RestartPolicyOnFailure, []corev1.Container{i1, i2}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "i1", 0), exited("c2", "i2", 3)}},
			want: plan{Attempt: 1, Init: "i2"},
		},
		{
			name: "init container failed under Always: it restarts",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "i1", 1)}},
			want: plan{Attempt: 1, Init: "i1"},
		},
		{
			name: "init container created but never started is replaced",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{{ID: "c1", Name: "i1", State: StateCreated}}},
			want: plan{Attempt: 1, Init: "i1", Kill: []string{"c1"}},
		},
		{
			name: "init containers done: the app containers start",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1, i2}, a, b),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c2", "i2", 0), exited("c1", "i1", 0)}},
			want: plan{Attempt: 1, Apps: []string{"a", "b"}},
		},
		{
			name: "running app containers with their spec: nothing to do",
			pod:  podWith(corev1.RestartPolicyAlways, nil, a, b),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("c1", a), running("c2", b)}},
			want: plan{Attempt: 1},
		},
		{
			name: "spec change (hash) kills and restarts the container",
			pod:  podWith(corev1.RestartPolicyAlways, nil, changed, b),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("c1", a), running("c2", b)}},
			want: plan{Attempt: 1, Apps: []string{"a"}, Kill: []string{"c1"}},
		},
		{
			name: "container without a recorded hash is left alone",
			pod:  podWith(corev1.RestartPolicyAlways, nil, changed),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{{ID: "c1", Name: "a", State: StateRunning}}},
			want: plan{Attempt: 1},
		},
		{
			name:     "liveness failure under Always: kill and restart",
			pod:      podWith(corev1.RestartPolicyAlways, nil, a, b),
			st:       &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("c1", a), running("c2", b)}},
			liveness: sets.New("b"),
			want:     plan{Attempt: 1, Apps: []string{"b"}, Kill: []string{"c2"}},
		},
		{
			name:     "liveness failure under Never: kill only",
			pod:      podWith(corev1.RestartPolicyNever, nil, a),
			st:       &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("c1", a)}},
			liveness: sets.New("a"),
			want:     plan{Attempt: 1, Kill: []string{"c1"}},
		},
		{
			name: "exited 0 under Always restarts",
			pod:  podWith(corev1.RestartPolicyAlways, nil, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "a", 0)}},
			want: plan{Attempt: 1, Apps: []string{"a"}},
		},
		{
			name: "exited 0 under OnFailure stays",
			pod:  podWith(corev1.RestartPolicyOnFailure, nil, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "a", 0)}},
			want: plan{Attempt: 1},
		},
		{
			name: "exited 2 under OnFailure restarts",
			pod:  podWith(corev1.RestartPolicyOnFailure, nil, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "a", 2)}},
			want: plan{Attempt: 1, Apps: []string{"a"}},
		},
		{
			name: "exited 2 under Never stays",
			pod:  podWith(corev1.RestartPolicyNever, nil, a, b),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c1", "a", 2), running("c2", b)}},
			want: plan{Attempt: 1},
		},
		{
			name: "only the newest instance counts",
			pod:  podWith(corev1.RestartPolicyOnFailure, nil, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{exited("c2", "a", 0), exited("c1", "a", 1)}},
			want: plan{Attempt: 1},
		},
		{
			name: "app container in an unknown state is replaced",
			pod:  podWith(corev1.RestartPolicyAlways, nil, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{{ID: "c1", Name: "a", State: StateUnknown}}},
			want: plan{Attempt: 1, Apps: []string{"a"}, Kill: []string{"c1"}},
		},
		{
			name: "running containers not in the spec are killed, exited ones and init containers are not",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1}, a),
			st: &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{
				running("c1", a), exited("c0", "i1", 0),
				{ID: "x1", Name: "sidecar", State: StateRunning}, exited("x2", "old", 0),
			}},
			want: plan{Attempt: 1, Kill: []string{"x1"}},
		},
		{
			name: "a running sidecar without a startup probe lets the next init container start",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{sc, i1}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("s1", sc)}},
			want: plan{Attempt: 1, Init: "i1"},
		},
		{
			name: "a sidecar whose startup probe has no result holds the next init container",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{scProbe, i1}, a),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("s1", scProbe)}},
			want: plan{Attempt: 1},
		},
		{
			name:    "a sidecar whose startup probe failed so far holds the next init container",
			pod:     podWith(corev1.RestartPolicyAlways, []corev1.Container{scProbe, i1}, a),
			st:      &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("s1", scProbe)}},
			started: startedIf(false),
			want:    plan{Attempt: 1},
		},
		{
			name:     "a sidecar that failed its startup probe is restarted, the next init container still waits",
			pod:      podWith(corev1.RestartPolicyAlways, []corev1.Container{scProbe, i1}, a),
			st:       &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("s1", scProbe)}},
			started:  startedIf(false),
			liveness: sets.New("sc"),
			want:     plan{Attempt: 1, Init: "sc", Kill: []string{"s1"}},
		},
		{
			name:    "a started sidecar lets the next init container start",
			pod:     podWith(corev1.RestartPolicyAlways, []corev1.Container{scProbe, i1}, a),
			st:      &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("s1", scProbe)}},
			started: startedIf(true),
			want:    plan{Attempt: 1, Init: "i1"},
		},
		{
			name: "a started sidecar last in line lets the app containers start",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{i1, sc}, a, b),
			st:   &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{running("s1", sc), exited("c0", "i1", 0)}},
			want: plan{Attempt: 1, Apps: []string{"a", "b"}},
		},
		{
			name: "a sidecar that exited is restarted beside the running app, whatever the pod's restartPolicy",
			pod:  podWith(corev1.RestartPolicyNever, []corev1.Container{sc, i1}, a),
			st: &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{
				running("c2", a), exited("c1", "i1", 0), exited("s1", "sc", 1),
			}},
			want: plan{Attempt: 1, Init: "sc"},
		},
		{
			name: "a sidecar that exited while init containers run is restarted with the current one waiting",
			pod:  podWith(corev1.RestartPolicyAlways, []corev1.Container{sc, i1}, a),
			st: &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{
				running("c1", i1), exited("s1", "sc", 0),
			}},
			want: plan{Attempt: 1, Init: "sc"},
		},
		{
			name: "sidecars stop once the regular containers completed for good",
			pod:  podWith(corev1.RestartPolicyNever, []corev1.Container{sc}, a),
			st: &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{
				exited("c1", "a", 0), running("s1", sc),
			}},
			want: plan{Attempt: 1, Kill: []string{"s1"}},
		},
		{
			name: "a regular init container failed under Never fails the pod",
			pod:  podWith(corev1.RestartPolicyNever, []corev1.Container{sc, i1}, a),
			st: &PodStatus{Sandboxes: readySB, Containers: []*ContainerStatus{
				exited("c1", "i1", 1), running("s1", sc),
			}},
			want: plan{Attempt: 1, InitFailed: true},
		},
	}
	te := newTestEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planOf(te.m.computeActions(tt.pod, tt.st, Probes{LivenessFailed: tt.liveness, Started: tt.started}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShouldRestart(t *testing.T) {
	tests := []struct {
		policy corev1.RestartPolicy
		code   int
		want   bool
	}{
		{corev1.RestartPolicyAlways, 0, true},
		{corev1.RestartPolicyAlways, 1, true},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 137, true},
		{corev1.RestartPolicyNever, 0, false},
		{corev1.RestartPolicyNever, 1, false},
		{"", 0, true},
	}
	for _, tt := range tests {
		if got := ShouldRestart(tt.policy, tt.code); got != tt.want {
			t.Errorf("ShouldRestart(%q, %d) = %v, want %v", tt.policy, tt.code, got, tt.want)
		}
	}
}
