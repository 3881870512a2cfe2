package agent

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func versioned(uid string, v int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, UID: types.UID(uid), ResourceVersion: strconv.Itoa(v)}}
}

// recv waits for one value; a test that waits longer has failed.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestPodWorkersCollapseABurst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan string, 100)
	release := make(chan struct{})
	first := true
	w := newPodWorkers(ctx, func(_ context.Context, pod *corev1.Pod) (time.Duration, bool) {
		calls <- pod.ResourceVersion
		if first {
			first = false
			<-release
		}
		return 0, false
	})
	w.Update(versioned("a", 1))
	if got := recv(t, calls, "the first sync"); got != "1" {
		t.Fatalf("first sync saw version %s", got)
	}
	// While the worker is busy, a burst arrives.
	for v := 2; v <= 6; v++ {
		w.Update(versioned("a", v))
	}
	close(release)
	if got := recv(t, calls, "the second sync"); got != "6" {
		t.Fatalf("after the burst the worker synced version %s, want only the latest (6)", got)
	}
	// No sync of an intermediate version follows: the next one is the next update.
	w.Update(versioned("a", 7))
	if got := recv(t, calls, "the third sync"); got != "7" {
		t.Fatalf("third sync saw version %s, want 7", got)
	}
	cancel()
	w.Wait()
}

func TestPodWorkersArePerPod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	block := make(chan struct{})
	calls := make(chan types.UID, 10)
	w := newPodWorkers(ctx, func(_ context.Context, pod *corev1.Pod) (time.Duration, bool) {
		calls <- pod.UID
		if pod.UID == "slow" {
			<-block
		}
		return 0, false
	})
	w.Update(versioned("slow", 1))
	recv(t, calls, "the slow pod's sync")
	// A pod stuck in its sync does not hold up another pod.
	w.Update(versioned("fast", 1))
	if got := recv(t, calls, "the other pod's sync"); got != "fast" {
		t.Fatalf("synced %s", got)
	}
	close(block)
	cancel()
	w.Wait()
}

func TestPodWorkersFinishedWorkerExits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan string, 10)
	w := newPodWorkers(ctx, func(_ context.Context, pod *corev1.Pod) (time.Duration, bool) {
		calls <- pod.ResourceVersion
		return time.Hour, true
	})
	w.Update(versioned("a", 1))
	recv(t, calls, "the sync")
	deadline := time.Now().Add(10 * time.Second)
	for w.Has("a") {
		if time.Now().After(deadline) {
			t.Fatal("a finished worker did not exit")
		}
		time.Sleep(time.Millisecond)
	}
	// A later update starts a new worker.
	w.Update(versioned("a", 2))
	if got := recv(t, calls, "the new worker's sync"); got != "2" {
		t.Fatalf("new worker synced %s", got)
	}
	cancel()
	w.Wait()
}

func TestPodWorkersUpdateRacingAFinishingWorker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	synced := make(chan int, 1)
	w := newPodWorkers(ctx, func(_ context.Context, pod *corev1.Pod) (time.Duration, bool) {
		v, _ := strconv.Atoi(pod.ResourceVersion)
		synced <- v
		return 0, true
	})
	// Each update is sent the moment the previous sync returns, while its
	// worker decides to exit: none may be lost.
	w.Update(versioned("a", 0))
	for v := 1; v <= 3000; v++ {
		if got := recv(t, synced, "sync of version "+strconv.Itoa(v-1)); got != v-1 {
			t.Fatalf("synced version %d, want %d", got, v-1)
		}
		w.Update(versioned("a", v))
	}
	recv(t, synced, "the last sync")
	cancel()
	w.Wait()
}

func TestPodWorkersRequeue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	n := 0
	calls := make(chan string, 10)
	w := newPodWorkers(ctx, func(_ context.Context, pod *corev1.Pod) (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		n++
		calls <- pod.ResourceVersion
		if n == 1 {
			return 20 * time.Millisecond, false
		}
		return 0, false
	})
	w.Update(versioned("a", 1))
	recv(t, calls, "the first sync")
	// Requeued without an update: the same pod again.
	if got := recv(t, calls, "the requeued sync"); got != "1" {
		t.Fatalf("requeued sync saw version %s", got)
	}
	// Requeue 0: nothing until the next update.
	w.Update(versioned("a", 2))
	if got := recv(t, calls, "the sync after the update"); got != "2" {
		t.Fatalf("after a requeue of 0 the next sync saw version %s, want the update (2)", got)
	}
	cancel()
	w.Wait()
}
