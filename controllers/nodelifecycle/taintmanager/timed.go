package taintmanager

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// scheduled is one pending deletion.
type scheduled struct {
	// created is when the deletion was first scheduled: the start of the
	// pod's toleration period.
	created time.Time
	// fire is when the deletion runs.
	fire time.Time
	// timer is nil for deletions that run at once.
	timer     clock.Timer
	cancelled atomic.Bool
}

// timedQueue runs one function per key at a given time, at most one
// pending run per key. Safe for concurrent use.
type timedQueue struct {
	clock clock.WithDelayedExecution
	// run is called in its own goroutine when a key's time comes.
	run func(key string, fire time.Time)

	mu      sync.Mutex
	pending map[string]*scheduled
	// wg counts runs that are scheduled or running.
	wg sync.WaitGroup
}

func newTimedQueue(clk clock.WithDelayedExecution, run func(key string, fire time.Time)) *timedQueue {
	return &timedQueue{clock: clk, run: run, pending: map[string]*scheduled{}}
}

// add schedules key to run at fire unless it is already scheduled; created
// is remembered as the start of the wait.
func (q *timedQueue) add(key string, created, fire time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.pending[key]; ok {
		return
	}
	s := &scheduled{created: created, fire: fire}
	q.pending[key] = s
	q.wg.Add(1)
	if d := fire.Sub(q.clock.Now()); d > 0 {
		// The callback only starts a goroutine: a fake clock calls it
		// while holding its own lock.
		s.timer = q.clock.AfterFunc(d, func() { go q.exec(key, s) })
		return
	}
	go q.exec(key, s)
}

func (q *timedQueue) exec(key string, s *scheduled) {
	defer q.wg.Done()
	if s.cancelled.Load() {
		return
	}
	q.run(key, s.fire)
	q.mu.Lock()
	if q.pending[key] == s {
		delete(q.pending, key)
	}
	q.mu.Unlock()
}

// stopLocked cancels s; q.mu is held.
func (q *timedQueue) stopLocked(s *scheduled) {
	s.cancelled.Store(true)
	if s.timer != nil && s.timer.Stop() {
		// The callback will never run.
		q.wg.Done()
	}
}

// get returns the pending run of key, or nil.
func (q *timedQueue) get(key string) *scheduled {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending[key]
}

// cancel drops key's pending run and reports whether there was one that
// had not started yet.
func (q *timedQueue) cancel(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.pending[key]
	if !ok {
		return false
	}
	delete(q.pending, key)
	// A run that fires at once cannot be stopped any more.
	if s.timer == nil {
		return false
	}
	q.stopLocked(s)
	return true
}

// stop cancels every pending run and waits for the running ones.
func (q *timedQueue) stop() {
	q.mu.Lock()
	for k, s := range q.pending {
		q.stopLocked(s)
		delete(q.pending, k)
	}
	q.mu.Unlock()
	q.wg.Wait()
}

// len is the number of pending runs.
func (q *timedQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
