package controllerutil

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestRunWorkers(t *testing.T) {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	syncKey := func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		if key == "flaky" && calls[key] < 3 {
			return errors.New("not yet")
		}
		if calls["flaky"] == 3 && calls["ok"] == 1 {
			close(done)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { RunWorkers(ctx, queue, 2, syncKey, "Test", "key"); close(returned) }()
	queue.Add("ok")
	queue.Add("flaky")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("keys not synced: %v", calls)
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("RunWorkers did not return after cancel")
	}
	if !queue.ShuttingDown() {
		t.Error("the queue was not shut down")
	}
	if n := queue.NumRequeues("flaky"); n != 0 {
		t.Errorf("flaky still has %d requeues after it synced: not forgotten", n)
	}
}
