package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// restartWatchers is how many watches are open across each restart.
const restartWatchers = 50

// TestRestartUnderWatches restarts a control-plane server (SIGTERM, then
// start again) while 50 watches on ConfigMaps are open and a writer
// creates ConfigMaps at a steady rate. Each watch resumes from the last
// resourceVersion it saw and must see every write the writer had
// acknowledged; the server must exit promptly after SIGTERM (no component
// left to its stop deadline).
//
// K1S_RESTARTS=N restarts N times (default 1) and logs, per restart, the
// process exit time after SIGTERM and the API downtime the writer saw:
// the figures in docs/BENCHMARKS.md.
func TestRestartUnderWatches(t *testing.T) {
	restarts := 1
	if v := os.Getenv("K1S_RESTARTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("K1S_RESTARTS=%q: want a positive integer", v)
		}
		restarts = n
	}
	s := framework.NewServer(t)
	s.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := restartClient(t, s)
	const ns = "restart-watch"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	watchers := make([]*resumingWatcher, restartWatchers)
	var wg sync.WaitGroup
	for i := range watchers {
		watchers[i] = &resumingWatcher{client: client, ns: ns, rv: list.ResourceVersion, seen: map[string]bool{}}
		wg.Add(1)
		go func() { defer wg.Done(); watchers[i].run(ctx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	w := &steadyWriter{client: client, ns: ns, period: 20 * time.Millisecond}
	writerDone := make(chan struct{})
	writerCtx, stopWriter := context.WithCancel(ctx)
	go func() { defer close(writerDone); w.run(writerCtx) }()

	var exits, downtimes []time.Duration
	for r := 0; r < restarts; r++ {
		time.Sleep(2 * time.Second)
		before := w.acked()
		start := time.Now()
		s.Stop(t)
		exits = append(exits, time.Since(start))
		s.Start(t)
		ready := time.Now()
		// Let the writer get through the restart before measuring.
		if !w.waitAckedAfter(ready, 30*time.Second) {
			t.Fatalf("restart %d: no write acknowledged within 30s of the restart", r+1)
		}
		downtimes = append(downtimes, w.longestGap(start, ready))
		if w.acked() <= before {
			t.Fatalf("restart %d: the writer made no progress", r+1)
		}
		t.Logf("restart %d: exit after SIGTERM %v, API downtime %v", r+1, exits[r].Round(time.Millisecond), downtimes[r].Round(time.Millisecond))
	}
	time.Sleep(time.Second)
	stopWriter()
	<-writerDone

	want := w.names()
	if len(want) == 0 {
		t.Fatal("the writer acknowledged no write")
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, wt := range watchers {
		for {
			missing, gone := wt.missing(want)
			if gone != nil {
				t.Fatalf("watcher %d could not resume: %v", i, gone)
			}
			if len(missing) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("watcher %d misses %d of %d acknowledged writes, e.g. %v", i, len(missing), len(want), missing[:min(5, len(missing))])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if log := s.Log(); strings.Contains(log, "did not stop in time") {
		t.Errorf("a component outlived its stop deadline:\n%s", grepLines(log, "did not stop in time"))
	}
	for i, d := range exits {
		if d > 5*time.Second {
			t.Errorf("restart %d: the server took %v to exit after SIGTERM, want about a second", i+1, d)
		}
	}
	t.Logf("%d watchers saw all %d acknowledged writes across %d restart(s)", len(watchers), len(want), restarts)
	if restarts > 1 {
		t.Logf("exit after SIGTERM: %s", minMedMax(exits))
		t.Logf("API downtime: %s", minMedMax(downtimes))
	}
}

func restartClient(t *testing.T, s *framework.Server) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, -1 // no client-side throttling of the writer or the 50 resumes
	cfg.Timeout = 5 * time.Second
	return kubernetes.NewForConfigOrDie(cfg)
}

// resumingWatcher watches ConfigMaps and, whenever its watch ends, opens
// a new one from the last resourceVersion it saw.
type resumingWatcher struct {
	client kubernetes.Interface
	ns     string

	mu   sync.Mutex
	rv   string
	seen map[string]bool
	gone error // the server refused to resume (410 Gone)
}

func (w *resumingWatcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.mu.Lock()
		rv := w.rv
		w.mu.Unlock()
		wi, err := w.client.CoreV1().ConfigMaps(w.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				w.fail(err)
				return
			}
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				if err := apierrors.FromObject(ev.Object); apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					w.fail(err)
					wi.Stop()
					return
				}
				continue
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			w.mu.Lock()
			w.rv = cm.ResourceVersion
			if ev.Type == watch.Added {
				w.seen[cm.Name] = true
			}
			w.mu.Unlock()
		}
		wi.Stop()
	}
}

func (w *resumingWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = fmt.Errorf("resume from resourceVersion %s: %w", w.rv, err)
}

func (w *resumingWatcher) missing(want []string) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var missing []string
	for _, n := range want {
		if !w.seen[n] {
			missing = append(missing, n)
		}
	}
	return missing, w.gone
}

// steadyWriter creates one ConfigMap per period and records the ones the
// server acknowledged, and when.
type steadyWriter struct {
	client kubernetes.Interface
	ns     string
	period time.Duration

	mu    sync.Mutex
	ok    []string
	times []time.Time // of each acknowledged write
}

func (w *steadyWriter) run(ctx context.Context) {
	tick := time.NewTicker(w.period)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		name := fmt.Sprintf("cm-%06d", i)
		_, err := w.client.CoreV1().ConfigMaps(w.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			continue // unacknowledged: it may or may not exist
		}
		w.mu.Lock()
		w.ok = append(w.ok, name)
		w.times = append(w.times, time.Now())
		w.mu.Unlock()
	}
}

func (w *steadyWriter) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ok)
}

func (w *steadyWriter) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ok)
}

func (w *steadyWriter) waitAckedAfter(t time.Time, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n := len(w.times)
		last := time.Time{}
		if n > 0 {
			last = w.times[n-1]
		}
		w.mu.Unlock()
		if last.After(t) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// longestGap is the longest time between two consecutive acknowledged
// writes from the last one before from to the first one after to: the
// API downtime a client saw across a restart.
func (w *steadyWriter) longestGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	cmp := func(a, b time.Time) int { return a.Compare(b) }
	i, _ := slices.BinarySearchFunc(w.times, from, cmp)
	j, _ := slices.BinarySearchFunc(w.times, to, cmp)
	var gap time.Duration
	for k := max(i, 1); k <= j && k < len(w.times); k++ {
		gap = max(gap, w.times[k].Sub(w.times[k-1]))
	}
	return gap
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func minMedMax(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("min %v / median %v / max %v over %d runs", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s))
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
