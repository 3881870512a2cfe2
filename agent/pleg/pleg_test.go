package pleg

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/agent/kuberuntime"
)

// fakeLister returns whatever the test last set.
type fakeLister struct {
	mu   sync.Mutex
	pods map[types.UID]*kuberuntime.RunningPod
	err  error
}

func (f *fakeLister) set(pods map[types.UID]*kuberuntime.RunningPod, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods, f.err = pods, err
}

func (f *fakeLister) ListPods(context.Context) (map[types.UID]*kuberuntime.RunningPod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods, f.err
}

type c = map[string]kuberuntime.ContainerState
type s = map[string]bool

func rp(uid string, sandboxes s, containers c) *kuberuntime.RunningPod {
	return &kuberuntime.RunningPod{UID: types.UID(uid), Name: "p-" + uid, Namespace: "ns", Sandboxes: sandboxes, Containers: containers}
}

func pods(ps ...*kuberuntime.RunningPod) map[types.UID]*kuberuntime.RunningPod {
	out := map[types.UID]*kuberuntime.RunningPod{}
	for _, p := range ps {
		out[p.UID] = p
	}
	return out
}

func drain(p *PLEG) []Event {
	var out []Event
	for {
		select {
		case ev := <-p.Events():
			out = append(out, ev)
		default:
			sort.Slice(out, func(i, j int) bool {
				return fmt.Sprint(out[i]) < fmt.Sprint(out[j])
			})
			return out
		}
	}
}

const (
	running = kuberuntime.StateRunning
	exited  = kuberuntime.StateExited
	created = kuberuntime.StateCreated
	unknown = kuberuntime.StateUnknown
)

func TestRelistEvents(t *testing.T) {
	tests := []struct {
		name   string
		before map[types.UID]*kuberuntime.RunningPod
		after  map[types.UID]*kuberuntime.RunningPod
		want   []Event
	}{
		{
			name:  "first relist: running containers started, a ready sandbox says nothing",
			after: pods(rp("a", s{"sb1": true}, c{"c1": running, "c2": exited, "c3": created})),
			want: []Event{
				{UID: "a", Type: ContainerStarted, Data: "c1"},
				{UID: "a", Type: ContainerDied, Data: "c2"},
				{UID: "a", Type: ContainerChanged, Data: "c3"},
			},
		},
		{
			name:  "first relist: a sandbox that is not ready is reported",
			after: pods(rp("a", s{"sb1": false}, c{})),
			want:  []Event{{UID: "a", Type: SandboxChanged, Data: "sb1"}},
		},
		{
			name:   "nothing changed",
			before: pods(rp("a", s{"sb1": true}, c{"c1": running})),
			after:  pods(rp("a", s{"sb1": true}, c{"c1": running})),
		},
		{
			name:   "container started",
			before: pods(rp("a", s{"sb1": true}, c{"c1": created})),
			after:  pods(rp("a", s{"sb1": true}, c{"c1": running})),
			want:   []Event{{UID: "a", Type: ContainerStarted, Data: "c1"}},
		},
		{
			name:   "container died",
			before: pods(rp("a", s{"sb1": true}, c{"c1": running})),
			after:  pods(rp("a", s{"sb1": true}, c{"c1": exited})),
			want:   []Event{{UID: "a", Type: ContainerDied, Data: "c1"}},
		},
		{
			name:   "container went to an unknown state",
			before: pods(rp("a", s{"sb1": true}, c{"c1": running})),
			after:  pods(rp("a", s{"sb1": true}, c{"c1": unknown})),
			want:   []Event{{UID: "a", Type: ContainerChanged, Data: "c1"}},
		},
		{
			name:   "container removed, a new one started",
			before: pods(rp("a", s{"sb1": true}, c{"c1": exited})),
			after:  pods(rp("a", s{"sb1": true}, c{"c2": running})),
			want: []Event{
				{UID: "a", Type: ContainerRemoved, Data: "c1"},
				{UID: "a", Type: ContainerStarted, Data: "c2"},
			},
		},
		{
			name:   "sandbox died",
			before: pods(rp("a", s{"sb1": true}, c{"c1": running})),
			after:  pods(rp("a", s{"sb1": false}, c{"c1": running})),
			want:   []Event{{UID: "a", Type: SandboxChanged, Data: "sb1"}},
		},
		{
			name:   "new sandbox of a known pod",
			before: pods(rp("a", s{"sb1": false}, c{})),
			after:  pods(rp("a", s{"sb1": false, "sb2": true}, c{})),
			want:   []Event{{UID: "a", Type: SandboxChanged, Data: "sb2"}},
		},
		{
			name:   "pod gone, another unchanged",
			before: pods(rp("a", s{"sb1": false}, c{"c1": exited}), rp("b", s{"sb2": true}, c{"c2": running})),
			after:  pods(rp("b", s{"sb2": true}, c{"c2": running})),
			want:   []Event{{UID: "a", Type: PodGone}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLister{}
			p := New(l, time.Second, testingclock.NewFakeClock(time.Now()))
			ctx := context.Background()
			if tt.before != nil {
				l.set(tt.before, nil)
				p.Relist(ctx)
				drain(p)
			}
			l.set(tt.after, nil)
			p.Relist(ctx)
			want := tt.want
			sort.Slice(want, func(i, j int) bool { return fmt.Sprint(want[i]) < fmt.Sprint(want[j]) })
			if diff := cmp.Diff(want, drain(p)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := p.Pods(); len(got) != len(tt.after) {
				t.Errorf("Pods() = %d pods, want %d", len(got), len(tt.after))
			}
		})
	}
}

func TestRelistFailureKeepsTheLastView(t *testing.T) {
	l := &fakeLister{}
	p := New(l, time.Second, testingclock.NewFakeClock(time.Now()))
	ctx := context.Background()
	l.set(pods(rp("a", s{"sb1": true}, c{"c1": running})), nil)
	p.Relist(ctx)
	drain(p)

	l.set(nil, errors.New("runtime down"))
	p.Relist(ctx)
	if evs := drain(p); len(evs) != 0 {
		t.Errorf("a failed relist emitted %v", evs)
	}
	if _, ok := p.Pods()["a"]; !ok {
		t.Errorf("a failed relist forgot the pods")
	}
	// The runtime comes back with the same state: no PodGone, no restart events.
	l.set(pods(rp("a", s{"sb1": true}, c{"c1": running})), nil)
	p.Relist(ctx)
	if evs := drain(p); len(evs) != 0 {
		t.Errorf("events after recovery: %v", evs)
	}
}

func TestHealthy(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	l := &fakeLister{}
	p := New(l, time.Second, clk)
	if err := p.Healthy(); err != nil {
		t.Fatalf("healthy before the first relist: %v", err)
	}
	l.set(pods(), nil)
	p.Relist(context.Background())
	clk.Step(3 * time.Minute)
	if err := p.Healthy(); err != nil {
		t.Fatalf("healthy at exactly 3m: %v", err)
	}
	// Relists fail from now on: the last success ages.
	l.set(nil, errors.New("runtime down"))
	p.Relist(context.Background())
	clk.Step(time.Second)
	err := p.Healthy()
	if err == nil || err.Error() != "PLEG is not healthy: last relist 3m1s ago" {
		t.Fatalf("Healthy after a 3m1s stall = %v", err)
	}
	l.set(pods(), nil)
	p.Relist(context.Background())
	if err := p.Healthy(); err != nil {
		t.Errorf("healthy again after a relist: %v", err)
	}
}

func TestFullChannelDoesNotBlock(t *testing.T) {
	l := &fakeLister{}
	p := New(l, time.Second, testingclock.NewFakeClock(time.Now()))
	cs := c{}
	for i := 0; i < 1500; i++ {
		cs[fmt.Sprintf("c%04d", i)] = running
	}
	l.set(pods(rp("a", s{"sb": true}, cs)), nil)
	done := make(chan struct{})
	go func() {
		p.Relist(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Relist blocked on a full event channel")
	}
	if n := len(p.Events()); n != cap(p.events) || n != 1000 {
		t.Errorf("channel holds %d events, want it full at 1000", n)
	}
	if got := p.Pods()["a"]; got == nil || len(got.Containers) != 1500 {
		t.Errorf("the relist was not recorded in full")
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	l := &fakeLister{}
	l.set(pods(rp("a", s{"sb": true}, c{"c1": running})), nil)
	p := New(l, time.Hour, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	// Run relists at once, before its first tick.
	select {
	case ev := <-p.Events():
		if ev != (Event{UID: "a", Type: ContainerStarted, Data: "c1"}) {
			t.Errorf("event = %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the first relist")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
