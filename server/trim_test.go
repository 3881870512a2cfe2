package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// The start-up trims come in order: two of the mapped pages (once the
// apiserver serves, once the controllers and the node have started), then
// the full one, which waits for the apiserver's deferred start-up work
// (Settled), up to a bound, and never comes once the server stops.
func TestTrimAfterStartup(t *testing.T) {
	oldSettle, oldDigest := settleTime, digestTime
	settleTime, digestTime = 100*time.Millisecond, 50*time.Millisecond
	defer func() { settleTime, digestTime = oldSettle, oldDigest }()

	type call struct {
		kind string
		at   time.Time
	}
	for _, tc := range []struct {
		name string
		// settledAfter closes Settled this long after the node is ready
		// (0: never).
		settledAfter time.Duration
		cancel       bool
		// wantFullAfter is the least time from the node's start to the
		// full trim (0: no full trim).
		wantFullAfter time.Duration
	}{
		{name: "settled early", settledAfter: 10 * time.Millisecond, wantFullAfter: 150 * time.Millisecond},
		{name: "settled late", settledAfter: 160 * time.Millisecond, wantFullAfter: 210 * time.Millisecond},
		{name: "never settled", wantFullAfter: 250 * time.Millisecond},
		{name: "stopped", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var calls []call
			record := func(kind string) func() (int64, error) {
				return func() (int64, error) {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, call{kind, time.Now()})
					return 0, nil
				}
			}
			controllers, node, settled := make(chan struct{}), make(chan struct{}), make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				trimAfterStartup(ctx, klog.Background(), startupSignals{controllers: controllers, node: node, apiSettled: settled},
					record("mapped"), record("full"))
			}()
			time.Sleep(20 * time.Millisecond)
			close(controllers)
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			if len(calls) != 1 {
				t.Errorf("before the node started: %d trims, want 1", len(calls))
			}
			mu.Unlock()
			nodeAt := time.Now()
			close(node)
			if tc.settledAfter > 0 {
				time.AfterFunc(tc.settledAfter, func() { close(settled) })
			}
			if tc.cancel {
				time.Sleep(50 * time.Millisecond)
				cancel()
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("trimAfterStartup did not return")
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"mapped", "mapped", "full"}
			if tc.cancel {
				want = want[:2]
			}
			if len(calls) != len(want) {
				t.Fatalf("%d trims, want %v", len(calls), want)
			}
			for i, c := range calls {
				if c.kind != want[i] {
					t.Errorf("trim %d is %s, want %s", i, c.kind, want[i])
				}
			}
			if !tc.cancel {
				if got := calls[2].at.Sub(nodeAt); got < tc.wantFullAfter {
					t.Errorf("full trim %v after the node started, want at least %v", got, tc.wantFullAfter)
				}
			}
		})
	}
}
