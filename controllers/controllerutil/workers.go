package controllerutil

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// RunWorkers runs workers goroutines that take keys from queue and pass
// them to syncKey, until ctx is cancelled; then it shuts the queue down and
// waits for them. A key that fails is logged at V(2) ("<what> failed, will
// retry", the key under keyName) and requeued rate-limited; one that syncs
// is forgotten.
func RunWorkers(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], workers int,
	syncKey func(context.Context, string) error, what, keyName string) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for processNext(ctx, queue, syncKey, what, keyName) {
			}
		})
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string],
	syncKey func(context.Context, string) error, what, keyName string) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	if err := syncKey(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info(what+" failed, will retry", keyName, key, "err", err)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}
