package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventLog records component starts and stops in order.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// filter returns the events with the given prefix, prefix stripped.
func (l *eventLog) filter(prefix string) []string {
	var out []string
	for _, e := range l.get() {
		if rest, ok := strings.CutPrefix(e, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// fake is a component without readiness. It runs until its context is
// cancelled (unless ignoreCancel), until fail delivers an error, or until
// exit is closed (returning nil, an unexpected stop).
type fake struct {
	name         string
	log          *eventLog
	started      chan struct{}
	fail         chan error
	exit         chan struct{}
	ignoreCancel bool
	release      chan struct{} // ends an ignoreCancel component
}

func newFake(name string, log *eventLog) *fake {
	return &fake{name: name, log: log, started: make(chan struct{}), fail: make(chan error, 1),
		exit: make(chan struct{}), release: make(chan struct{})}
}

func (f *fake) Run(ctx context.Context) error {
	f.log.add("start:" + f.name)
	close(f.started)
	select {
	case err := <-f.fail:
		f.log.add("fail:" + f.name)
		return err
	case <-f.exit:
		f.log.add("exit:" + f.name)
		return nil
	case <-ctx.Done():
	}
	if f.ignoreCancel {
		<-f.release
	}
	f.log.add("stop:" + f.name)
	return nil
}

// readyFake is a fake with a ready channel the test closes (or that closes
// itself on start when readyOnStart).
type readyFake struct {
	*fake
	ready        chan struct{}
	readyOnStart bool
}

func newReady(name string, log *eventLog, readyOnStart bool) *readyFake {
	return &readyFake{fake: newFake(name, log), ready: make(chan struct{}), readyOnStart: readyOnStart}
}

func (r *readyFake) Ready() <-chan struct{} { return r.ready }

func (r *readyFake) Run(ctx context.Context) error {
	if r.readyOnStart {
		close(r.ready)
	}
	return r.fake.Run(ctx)
}

// runAsync starts s.Run and returns its result channel and the cancel function.
func runAsync(t *testing.T, s *Supervisor) (<-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(cancel)
	return done, cancel
}

const waitLong = 10 * time.Second

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLong):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func waitResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLong):
		t.Fatalf("Run did not return")
		return nil
	}
}

func assertNotStarted(t *testing.T, f *fake) {
	t.Helper()
	select {
	case <-f.started:
		t.Fatalf("%s started too early", f.name)
	case <-time.After(5 * time.Millisecond):
	}
}

func TestTiersStartInOrderAndStopInReverse(t *testing.T) {
	log := &eventLog{}
	a := newReady("a", log, false)
	b := newReady("b", log, false)
	c := newFake("c", log) // no readiness: does not hold back its tier's successor
	d := newReady("d", log, true)
	e := newFake("e", log)
	s := New(Tier{{"a", a}}, Tier{{"b", b}, {"c", c}}, Tier{{"d", d}}, Tier{{"e", e}})
	done, cancel := runAsync(t, s)

	waitClosed(t, a.started, "a to start")
	assertNotStarted(t, b.fake)
	assertNotStarted(t, c)
	close(a.ready)
	waitClosed(t, b.started, "b to start")
	waitClosed(t, c.started, "c to start")
	assertNotStarted(t, d.fake)
	close(b.ready)
	waitClosed(t, d.started, "d to start")
	waitClosed(t, e.started, "e to start")

	cancel()
	if err := waitResult(t, done); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	stops := log.filter("stop:")
	// Tiers stop in reverse; b and c share a tier, so either order between them.
	want1 := []string{"e", "d", "b", "c", "a"}
	want2 := []string{"e", "d", "c", "b", "a"}
	if !slices.Equal(stops, want1) && !slices.Equal(stops, want2) {
		t.Errorf("stop order = %v, want %v (b and c in either order)", stops, want1)
	}
	if starts := log.filter("start:"); len(starts) != 5 || starts[0] != "a" || starts[3] != "d" || starts[4] != "e" {
		t.Errorf("start order = %v", starts)
	}
}

func TestFailureStopsOthers(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		// failer is the index of the failing component in [a, b, c, d]
		// with tiers {a, b}, {c}, {d}.
		failer    int
		failErr   error
		wantErr   string
		wantIs    error
		wantStops []string
	}{
		{"last tier fails", 3, errBoom, "d: boom", errBoom, []string{"c", "a", "b"}},
		{"middle tier fails", 2, errBoom, "c: boom", errBoom, []string{"d", "a", "b"}},
		{"first tier fails", 0, errBoom, "a: boom", errBoom, []string{"d", "c", "b"}},
		{"component returns nil unexpectedly", 2, nil, "c stopped unexpectedly", nil, []string{"d", "a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &eventLog{}
			comps := []*readyFake{newReady("a", log, true), newReady("b", log, true), newReady("c", log, true), newReady("d", log, true)}
			s := New(Tier{{"a", comps[0]}, {"b", comps[1]}}, Tier{{"c", comps[2]}}, Tier{{"d", comps[3]}})
			done, _ := runAsync(t, s)
			waitClosed(t, comps[3].started, "d to start")
			if tt.failErr != nil {
				comps[tt.failer].fail <- tt.failErr
			} else {
				close(comps[tt.failer].exit)
			}
			err := waitResult(t, done)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Run = %v, want %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Run error %v does not wrap %v", err, tt.wantIs)
			}
			stops := log.filter("stop:")
			// Within the first tier a and b may stop in either order.
			if len(stops) != len(tt.wantStops) || !sameTiers(stops, tt.wantStops) {
				t.Errorf("stop order = %v, want %v", stops, tt.wantStops)
			}
		})
	}
}

// sameTiers compares stop orders, allowing a and b (one tier) to swap.
func sameTiers(got, want []string) bool {
	norm := func(s []string) []string {
		s = slices.Clone(s)
		for i := 0; i+1 < len(s); i++ {
			if s[i] == "b" && s[i+1] == "a" {
				s[i], s[i+1] = "a", "b"
			}
		}
		return s
	}
	return slices.Equal(norm(got), norm(want))
}

func TestFailureWhileStarting(t *testing.T) {
	log := &eventLog{}
	slow := newReady("slow", log, false) // never ready
	bad := newFake("bad", log)
	later := newFake("later", log)
	s := New(Tier{{"slow", slow}, {"bad", bad}}, Tier{{"later", later}})
	done, _ := runAsync(t, s)
	waitClosed(t, bad.started, "bad to start")
	waitClosed(t, slow.started, "slow to start")
	bad.fail <- errors.New("cannot bind")
	err := waitResult(t, done)
	if err == nil || err.Error() != "bad: cannot bind" {
		t.Fatalf("Run = %v, want %q", err, "bad: cannot bind")
	}
	if got := log.filter("stop:"); !slices.Equal(got, []string{"slow"}) {
		t.Errorf("stopped = %v, want [slow]", got)
	}
	select {
	case <-later.started:
		t.Errorf("a later tier started although an earlier one failed")
	default:
	}
}

func TestStartTimeout(t *testing.T) {
	log := &eventLog{}
	first := newReady("first", log, true)
	stuck := newReady("stuck", log, false)
	later := newFake("later", log)
	s := New(Tier{{"first", first}}, Tier{{"stuck", stuck}}, Tier{{"later", later}})
	s.StartTimeout = 20 * time.Millisecond
	done, _ := runAsync(t, s)
	err := waitResult(t, done)
	if err == nil || err.Error() != "stuck did not become ready within 20ms" {
		t.Fatalf("Run = %v, want the start timeout of stuck", err)
	}
	if got := log.filter("stop:"); !slices.Equal(got, []string{"stuck", "first"}) {
		t.Errorf("stop order = %v, want [stuck first]", got)
	}
	if got := log.filter("start:"); slices.Contains(got, "later") {
		t.Errorf("later tier started: %v", got)
	}
}

func TestCancelWhileStarting(t *testing.T) {
	log := &eventLog{}
	first := newReady("first", log, true)
	waiting := newReady("waiting", log, false)
	s := New(Tier{{"first", first}}, Tier{{"waiting", waiting}})
	done, cancel := runAsync(t, s)
	waitClosed(t, waiting.started, "waiting to start")
	cancel()
	if err := waitResult(t, done); err != nil {
		t.Fatalf("Run after cancel while starting = %v, want nil", err)
	}
	if got := log.filter("stop:"); !slices.Equal(got, []string{"waiting", "first"}) {
		t.Errorf("stop order = %v, want [waiting first]", got)
	}
}

func TestStopTimeoutAbandonsComponent(t *testing.T) {
	log := &eventLog{}
	base := newReady("base", log, true)
	stubborn := newReady("stubborn", log, true)
	stubborn.ignoreCancel = true
	t.Cleanup(func() { close(stubborn.release) })
	s := New(Tier{{"base", base}}, Tier{{"stubborn", stubborn}})
	s.StopTimeout = 20 * time.Millisecond
	done, cancel := runAsync(t, s)
	waitClosed(t, stubborn.started, "stubborn to start")
	start := time.Now()
	cancel()
	if err := waitResult(t, done); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if elapsed := time.Since(start); elapsed < s.StopTimeout {
		t.Errorf("Run returned after %v, before the stop timeout of the stubborn component", elapsed)
	}
	// The stubborn component never stopped; the tier below it still did.
	if got := log.filter("stop:"); !slices.Equal(got, []string{"base"}) {
		t.Errorf("stopped = %v, want [base]", got)
	}
}

func TestComponentContextIsNotTheCallers(t *testing.T) {
	// Components are cancelled by the supervisor, tier by tier, not all at
	// once by the caller's context: the lower tier is still running while
	// the upper one stops.
	log := &eventLog{}
	lower := newReady("lower", log, true)
	upper := &probe{readyFake: newReady("upper", log, true), lower: lower}
	s := New(Tier{{"lower", lower}}, Tier{{"upper", upper}})
	done, cancel := runAsync(t, s)
	waitClosed(t, upper.started, "upper to start")
	cancel()
	if err := waitResult(t, done); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if !upper.lowerRunning {
		t.Errorf("lower tier was already stopped when upper saw its cancel")
	}
}

// probe records, when cancelled, whether lower is still running.
type probe struct {
	*readyFake
	lower        *readyFake
	lowerRunning bool
}

func (p *probe) Run(ctx context.Context) error {
	close(p.ready)
	close(p.started)
	<-ctx.Done()
	p.lowerRunning = !slices.Contains(p.log.filter("stop:"), "lower")
	return nil
}

func TestEmpty(t *testing.T) {
	done, cancel := runAsync(t, New())
	cancel()
	if err := waitResult(t, done); err != nil {
		t.Fatalf("Run of no tiers = %v", err)
	}
}

func TestDefaults(t *testing.T) {
	s := New()
	if s.StopTimeout != 15*time.Second || s.StartTimeout != 2*time.Minute {
		t.Errorf("defaults StopTimeout=%v StartTimeout=%v, want 15s and 2m", s.StopTimeout, s.StartTimeout)
	}
}
