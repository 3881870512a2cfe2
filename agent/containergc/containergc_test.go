package containergc

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/internal/fakecri"
)

type podState struct {
	removed, terminated map[types.UID]bool
	ready               bool
}

func (p podState) Removed(uid types.UID) bool    { return p.removed[uid] }
func (p podState) Terminated(uid types.UID) bool { return p.terminated[uid] }
func (p podState) SourcesReady() bool            { return p.ready }

const (
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
)

// world: pod "live" has container app with 3 dead instances and a
// running one, sidecar with 1 dead; pod "gone" (deleted) has 2 dead;
// pod "done" (terminated) has 1 dead; "foreign" is not k1s's.
func world(clk *clocktesting.FakeClock) *fakecri.Runtime {
	rt := fakecri.NewRuntime(clk)
	base := clk.Now().Add(-time.Hour).UnixNano()
	sb := func(id, uid string, state runtimeapi.PodSandboxState, age int64) {
		rt.Sandboxes[id] = &fakecri.Sandbox{State: state, CreatedAt: base + age, Cfg: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}, Labels: map[string]string{labelPodUID: uid, labelManagedBy: managedBy}}}
	}
	c := func(id, sandbox, uid, name string, state runtimeapi.ContainerState, age int64) {
		rt.Containers[id] = &fakecri.Container{SandboxID: sandbox, State: state, CreatedAt: base + age, Cfg: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Labels:   map[string]string{labelPodUID: uid, labelContainerName: name, labelManagedBy: managedBy}}}
	}
	sb("sb-live-old", "live", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, 0)
	sb("sb-live", "live", runtimeapi.PodSandboxState_SANDBOX_READY, 10)
	c("app-1", "sb-live", "live", "app", exited, 1)
	c("app-2", "sb-live", "live", "app", exited, 2)
	c("app-3", "sb-live", "live", "app", exited, 3)
	c("app-4", "sb-live", "live", "app", running, 4)
	c("side-1", "sb-live", "live", "side", exited, 5)
	sb("sb-gone", "gone", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, 0)
	c("gone-1", "sb-gone", "gone", "app", exited, 1)
	c("gone-2", "sb-gone", "gone", "app", exited, 2)
	sb("sb-done", "done", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, 0)
	c("done-1", "sb-done", "done", "app", exited, 1)
	rt.Containers["foreign"] = &fakecri.Container{State: exited, CreatedAt: base, Cfg: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}}}
	return rt
}

func keys[V any](m map[string]V) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestCollect(t *testing.T) {
	state := podState{removed: map[types.UID]bool{"gone": true}, terminated: map[types.UID]bool{"done": true}, ready: true}
	tests := []struct {
		name           string
		cfg            Config
		state          podState
		all            bool
		wantContainers string
		wantSandboxes  string
	}{
		{name: "defaults: one dead per container, deleted pods' all", cfg: Config{MaxPerPodContainer: 1, MaxContainers: -1}, state: state,
			wantContainers: "app-3,app-4,done-1,foreign,side-1", wantSandboxes: "sb-done,sb-live"},
		{name: "sources not ready: nothing is known deleted", cfg: Config{MaxPerPodContainer: 1, MaxContainers: -1}, state: podState{ready: false},
			wantContainers: "app-3,app-4,done-1,foreign,gone-2,side-1", wantSandboxes: "sb-done,sb-gone,sb-live"},
		{name: "no per-container limit, node limit 2", cfg: Config{MaxPerPodContainer: -1, MaxContainers: 2}, state: state,
			wantContainers: "app-3,app-4,foreign,side-1", wantSandboxes: "sb-done,sb-live"},
		{name: "min age keeps young ones", cfg: Config{MaxPerPodContainer: 0, MaxContainers: -1, MinAge: 2 * time.Hour}, state: state,
			wantContainers: "app-1,app-2,app-3,app-4,done-1,foreign,gone-1,gone-2,side-1", wantSandboxes: "sb-done,sb-gone,sb-live"},
		{name: "reclaim: terminated pods too", cfg: Config{MaxPerPodContainer: 1, MaxContainers: -1}, state: state, all: true,
			wantContainers: "app-3,app-4,foreign,side-1", wantSandboxes: "sb-live"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			rt := world(clk)
			g, err := New(tt.cfg, rt, tt.state, clk)
			if err != nil {
				t.Fatal(err)
			}
			if tt.all {
				err = g.DeleteAllUnusedContainers(context.Background())
			} else {
				err = g.GarbageCollect(context.Background())
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(rt.Containers); got != tt.wantContainers {
				t.Errorf("containers left %s, want %s", got, tt.wantContainers)
			}
			if got := keys(rt.Sandboxes); got != tt.wantSandboxes {
				t.Errorf("sandboxes left %s, want %s", got, tt.wantSandboxes)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	if _, err := New(Config{MinAge: -time.Second}, fakecri.NewRuntime(nil), podState{}, nil); err == nil || !strings.Contains(err.Error(), "--minimum-container-ttl-duration") {
		t.Errorf("err = %v, want one naming --minimum-container-ttl-duration", err)
	}
}
