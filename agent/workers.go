package agent

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// syncFunc syncs one pod; it returns when to sync again (0: only on the
// next event) and whether the pod is finished (its worker then exits).
type syncFunc func(ctx context.Context, pod *corev1.Pod) (requeue time.Duration, finished bool)

// podWorkers runs one goroutine per pod. A burst of updates for a pod
// collapses to the latest: a worker always syncs the newest pod it was given.
type podWorkers struct {
	sync syncFunc

	mu      sync.Mutex
	workers map[types.UID]*worker
	ctx     context.Context
	wg      sync.WaitGroup
}

type worker struct {
	mu      sync.Mutex
	pending *corev1.Pod
	wake    chan struct{}
}

func newPodWorkers(ctx context.Context, fn syncFunc) *podWorkers {
	return &podWorkers{sync: fn, workers: map[types.UID]*worker{}, ctx: ctx}
}

// Update hands a pod to its worker, starting one if needed. Never blocks.
func (p *podWorkers) Update(pod *corev1.Pod) {
	p.mu.Lock()
	w, ok := p.workers[pod.UID]
	if !ok {
		w = &worker{wake: make(chan struct{}, 1)}
		p.workers[pod.UID] = w
		p.wg.Add(1)
		go p.run(pod.UID, w)
	}
	// pending is set under p.mu: a worker that is deciding to exit (which
	// holds p.mu while it looks at pending) either sees this pod or has
	// already left the map, in which case a new worker was started above.
	w.mu.Lock()
	w.pending = pod
	w.mu.Unlock()
	p.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Has reports whether a pod has a worker.
func (p *podWorkers) Has(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.workers[uid]
	return ok
}

// Wait waits for every worker to stop (after ctx is cancelled).
func (p *podWorkers) Wait() { p.wg.Wait() }

func (p *podWorkers) run(uid types.UID, w *worker) {
	defer p.wg.Done()
	logger := klog.FromContext(p.ctx)
	var last *corev1.Pod
	var timer <-chan time.Time
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-w.wake:
		case <-timer:
		}
		w.mu.Lock()
		if w.pending != nil {
			last, w.pending = w.pending, nil
		}
		w.mu.Unlock()
		if last == nil {
			continue
		}
		requeue, finished := p.sync(p.ctx, last)
		if finished {
			p.mu.Lock()
			w.mu.Lock()
			pendingAgain := w.pending != nil
			w.mu.Unlock()
			if !pendingAgain {
				delete(p.workers, uid)
				p.mu.Unlock()
				logger.V(4).Info("Pod worker finished", "podUID", uid)
				return
			}
			p.mu.Unlock()
		}
		timer = nil
		if requeue > 0 {
			timer = time.After(requeue)
		}
	}
}
