// Package pleg is the pod lifecycle event generator: it relists the
// runtime every second, compares what it sees with the previous relist and
// turns the differences into events the sync loop acts on.
package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/agent/kuberuntime"
)

// EventType is what happened to a container.
type EventType string

// Event types.
const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	ContainerChanged EventType = "ContainerChanged"
	SandboxChanged   EventType = "SandboxChanged"
	PodGone          EventType = "PodGone"
)

// Event is a change of one pod in the runtime.
type Event struct {
	UID  types.UID
	Type EventType
	// Data is the container or sandbox ID.
	Data string
}

// Lister lists the pods in the runtime.
type Lister interface {
	ListPods(ctx context.Context) (map[types.UID]*kuberuntime.RunningPod, error)
}

// PLEG relists and emits events. Safe for concurrent use.
type PLEG struct {
	lister Lister
	clock  clock.Clock
	period time.Duration
	events chan Event

	mu         sync.Mutex
	last       map[types.UID]*kuberuntime.RunningPod
	lastRelist time.Time
}

// New returns a PLEG relisting every period (1s upstream) with a bounded
// event channel.
func New(lister Lister, period time.Duration, clk clock.Clock) *PLEG {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if period == 0 {
		period = time.Second
	}
	return &PLEG{lister: lister, clock: clk, period: period, events: make(chan Event, 1000)}
}

// Events delivers the lifecycle events.
func (p *PLEG) Events() <-chan Event { return p.events }

// Healthy reports an error when relisting has stalled (3 minutes, as upstream).
func (p *PLEG) Healthy() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastRelist.IsZero() {
		return nil
	}
	if d := p.clock.Since(p.lastRelist); d > 3*time.Minute {
		return &stalled{d}
	}
	return nil
}

type stalled struct{ d time.Duration }

func (s *stalled) Error() string { return "PLEG is not healthy: last relist " + s.d.String() + " ago" }

// Pods returns the runtime's pods seen by the last relist.
func (p *PLEG) Pods() map[types.UID]*kuberuntime.RunningPod {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[types.UID]*kuberuntime.RunningPod, len(p.last))
	for k, v := range p.last {
		out[k] = v
	}
	return out
}

// Run relists until ctx is cancelled.
func (p *PLEG) Run(ctx context.Context) error {
	t := time.NewTicker(p.period)
	defer t.Stop()
	for {
		p.Relist(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Relist lists the runtime once and emits events for the differences.
func (p *PLEG) Relist(ctx context.Context) {
	now, err := p.lister.ListPods(ctx)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("PLEG relist failed", "err", err)
		return
	}
	p.mu.Lock()
	old := p.last
	p.last = now
	p.lastRelist = p.clock.Now()
	p.mu.Unlock()

	for uid, pod := range now {
		prev := old[uid]
		for id, st := range pod.Containers {
			var before kuberuntime.ContainerState
			if prev != nil {
				before = prev.Containers[id]
			}
			if ev, ok := containerEvent(before, st); ok {
				p.emit(ctx, Event{UID: uid, Type: ev, Data: id})
			}
		}
		if prev != nil {
			for id := range prev.Containers {
				if _, ok := pod.Containers[id]; !ok {
					p.emit(ctx, Event{UID: uid, Type: ContainerRemoved, Data: id})
				}
			}
		}
		for id, ready := range pod.Sandboxes {
			if prev == nil || prev.Sandboxes[id] != ready {
				if prev != nil || !ready {
					p.emit(ctx, Event{UID: uid, Type: SandboxChanged, Data: id})
				}
			}
		}
	}
	for uid := range old {
		if _, ok := now[uid]; !ok {
			p.emit(ctx, Event{UID: uid, Type: PodGone})
		}
	}
}

func containerEvent(before, after kuberuntime.ContainerState) (EventType, bool) {
	if before == after {
		return "", false
	}
	switch after {
	case kuberuntime.StateRunning:
		return ContainerStarted, true
	case kuberuntime.StateExited:
		return ContainerDied, true
	}
	return ContainerChanged, true
}

func (p *PLEG) emit(ctx context.Context, ev Event) {
	select {
	case p.events <- ev:
	default:
		klog.FromContext(ctx).V(2).Info("PLEG event channel full, dropping event", "event", ev.Type, "pod", ev.UID)
	}
}
