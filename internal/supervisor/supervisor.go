// Package supervisor runs long-lived components in tiers: each tier starts
// once every component of the previous tier is ready, the first failure
// stops everything, and tiers stop in reverse order, each within a deadline.
package supervisor

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// Component is a long-running part of the process.
type Component interface {
	// Run blocks until ctx is cancelled (returning nil) or the component fails.
	Run(ctx context.Context) error
}

// Readier is a component that signals when it serves.
type Readier interface {
	Ready() <-chan struct{}
}

// Named gives a component a name for logs and errors.
type Named struct {
	Name string
	Component
}

// Tier is a set of components started together.
type Tier []Named

// Supervisor runs tiers of components.
type Supervisor struct {
	tiers []Tier
	// StopTimeout bounds how long one tier may take to stop. Default 15s.
	StopTimeout time.Duration
	// StartTimeout bounds how long a tier may take to become ready. Default 2m.
	StartTimeout time.Duration
}

// New returns a supervisor for the given tiers, started in order.
func New(tiers ...Tier) *Supervisor {
	return &Supervisor{tiers: tiers, StopTimeout: 15 * time.Second, StartTimeout: 2 * time.Minute}
}

type running struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

type result struct {
	name string
	err  error
}

// Run starts the tiers and blocks until ctx is cancelled or a component
// fails; it then stops the tiers in reverse order and returns the first
// failure (nil on a clean stop).
func (s *Supervisor) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	results := make(chan result, 64)
	var started [][]running
	var firstErr error

	stopAll := func() {
		for i := len(started) - 1; i >= 0; i-- {
			for _, r := range started[i] {
				r.cancel()
			}
			deadline := time.After(s.StopTimeout)
			for _, r := range started[i] {
				select {
				case <-r.done:
				case <-deadline:
					logger.Info("Component did not stop in time", "component", r.name, "timeout", s.StopTimeout)
				}
			}
		}
	}

	for _, tier := range s.tiers {
		var tierRunning []running
		for _, c := range tier {
			cctx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
			r := running{name: c.Name, cancel: cancel, done: make(chan struct{})}
			go func(c Named, r running) {
				defer close(r.done)
				err := c.Run(cctx)
				results <- result{name: c.Name, err: err}
			}(c, r)
			tierRunning = append(tierRunning, r)
		}
		started = append(started, tierRunning)

		// Wait for every ready signal of this tier before starting the next.
		timeout := time.After(s.StartTimeout)
		for _, c := range tier {
			rd, ok := c.Component.(Readier)
			if !ok {
				continue
			}
			select {
			case <-rd.Ready():
				logger.V(2).Info("Component ready", "component", c.Name)
			case res := <-results:
				firstErr = componentErr(res)
			case <-timeout:
				firstErr = fmt.Errorf("%s did not become ready within %s", c.Name, s.StartTimeout)
			case <-ctx.Done():
			}
			if firstErr != nil || ctx.Err() != nil {
				stopAll()
				return firstErr
			}
		}
	}

	select {
	case <-ctx.Done():
	case res := <-results:
		firstErr = componentErr(res)
	}
	stopAll()
	return firstErr
}

func componentErr(r result) error {
	if r.err == nil {
		return fmt.Errorf("%s stopped unexpectedly", r.name)
	}
	return fmt.Errorf("%s: %w", r.name, r.err)
}
