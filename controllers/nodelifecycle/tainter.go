package nodelifecycle

import (
	"container/heap"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// tokenBucket lets through qps items per second with a burst of one, on
// an injected clock. A rate of zero or less lets nothing through.
type tokenBucket struct {
	qps    float32
	tokens float64
	last   time.Time
}

func newTokenBucket(qps float32, now time.Time) *tokenBucket {
	return &tokenBucket{qps: qps, tokens: 1, last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if b.qps > 0 && now.After(b.last) {
		b.tokens = min(1, b.tokens+now.Sub(b.last).Seconds()*float64(b.qps))
	}
	b.last = now
}

// tryAccept takes a token if there is one.
func (b *tokenBucket) tryAccept(now time.Time) bool {
	if b.qps <= 0 {
		return false
	}
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// timedItem is a node waiting to be tainted.
type timedItem struct {
	name    string
	uid     string
	added   time.Time
	process time.Time
	// seq orders items due at the same time first in, first out.
	seq   uint64
	index int
}

type itemHeap []*timedItem

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if !h[i].process.Equal(h[j].process) {
		return h[i].process.Before(h[j].process)
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *itemHeap) Push(x any) {
	it := x.(*timedItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// tainter is one zone's queue of nodes to taint NoExecute, drained at the
// zone's rate: upstream's RateLimitedTimedQueue. A node stays "known" after
// it has been handled until remove is called, so a tainted node is not
// queued again while it stays unhealthy. Safe for concurrent use.
type tainter struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	heap    itemHeap
	byName  map[string]*timedItem // queued items
	known   map[string]bool       // queued or handled, until removed
	limiter *tokenBucket
	seq     uint64
}

func newTainter(clk clock.PassiveClock, qps float32) *tainter {
	return &tainter{clock: clk, byName: map[string]*timedItem{}, known: map[string]bool{}, limiter: newTokenBucket(qps, clk.Now())}
}

// add queues the node unless it is known; it reports whether it queued it.
func (t *tainter) add(name, uid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known[name] {
		return false
	}
	now := t.clock.Now()
	t.seq++
	it := &timedItem{name: name, uid: uid, added: now, process: now, seq: t.seq}
	heap.Push(&t.heap, it)
	t.byName[name] = it
	t.known[name] = true
	return true
}

// remove forgets the node, queued or handled; it reports whether it was
// known.
func (t *tainter) remove(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.known[name] {
		return false
	}
	delete(t.known, name)
	if it, ok := t.byName[name]; ok {
		heap.Remove(&t.heap, it.index)
		delete(t.byName, name)
	}
	return true
}

// queued reports the names waiting, soonest first (for tests).
func (t *tainter) queued() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	items := append(itemHeap(nil), t.heap...)
	var out []string
	for len(items) > 0 {
		best := 0
		for i := range items {
			if items.Less(i, best) {
				best = i
			}
		}
		out = append(out, items[best].name)
		items = append(items[:best], items[best+1:]...)
	}
	return out
}

// try hands due nodes to fn, as many as the rate allows. fn returns true
// when the node is done; otherwise it is retried after the returned wait.
// fn runs with the queue locked and must not call its methods.
func (t *tainter) try(fn func(name, uid string) (bool, time.Duration)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.heap) > 0 {
		now := t.clock.Now()
		head := t.heap[0]
		if now.Before(head.process) {
			return
		}
		if !t.limiter.tryAccept(now) {
			return
		}
		done, wait := fn(head.name, head.uid)
		if done {
			heap.Remove(&t.heap, head.index)
			delete(t.byName, head.name)
			continue
		}
		head.process = now.Add(wait + 1)
		heap.Fix(&t.heap, head.index)
	}
}

// setRate switches the zone's rate. A new bucket starts with its token
// unless the old one could not have let an item through now.
func (t *tainter) setRate(qps float32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limiter.qps == qps {
		return
	}
	now := t.clock.Now()
	t.limiter.refill(now)
	b := newTokenBucket(qps, now)
	if t.limiter.qps <= 0 || t.limiter.tokens < 1 {
		b.tokens = 0
	}
	t.limiter = b
}

// rate is the zone's current rate.
func (t *tainter) rate() float32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limiter.qps
}
