package cachesync

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForCacheSync(t *testing.T) {
	var a, b atomic.Bool
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.Store(true)
		time.Sleep(20 * time.Millisecond)
		b.Store(true)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if !WaitForCacheSync(ctx, a.Load, b.Load) {
		t.Fatal("WaitForCacheSync = false, want true once both informers synced")
	}
	if !a.Load() || !b.Load() {
		t.Fatal("returned before both informers synced")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}

	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if WaitForCacheSync(cancelled, func() bool { return false }) {
		t.Fatal("WaitForCacheSync = true on a cancelled context with an unsynced informer")
	}
}
