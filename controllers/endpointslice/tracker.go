package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice this controller deleted.
const deletionExpected = -1

// tracker remembers, per Service, the generation of each slice as this
// controller last wrote it (or that it deleted it), so that events caused
// by its own writes need no sync and a sync can tell a lagging cache.
// Safe for concurrent use.
type tracker struct {
	mu   sync.Mutex
	gens map[types.NamespacedName]map[types.UID]int64
}

func newTracker() *tracker {
	return &tracker{gens: map[types.NamespacedName]map[types.UID]int64{}}
}

func serviceOf(slice *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: slice.Namespace, Name: slice.Labels[discoveryv1.LabelServiceName]}
}

func (t *tracker) set(slice *discoveryv1.EndpointSlice, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc := serviceOf(slice)
	if t.gens[svc] == nil {
		t.gens[svc] = map[types.UID]int64{}
	}
	t.gens[svc][slice.UID] = gen
}

// wrote records a slice as written (created or updated).
func (t *tracker) wrote(slice *discoveryv1.EndpointSlice) { t.set(slice, slice.Generation) }

// deleted records that the slice was deleted.
func (t *tracker) deleted(slice *discoveryv1.EndpointSlice) { t.set(slice, deletionExpected) }

// has reports whether the slice is tracked.
func (t *tracker) has(slice *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.gens[serviceOf(slice)][slice.UID]
	return ok
}

// shouldSync reports whether a slice seen in an event differs from what
// this controller last wrote: unknown to it, or of a newer generation.
func (t *tracker) shouldSync(slice *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.gens[serviceOf(slice)][slice.UID]
	return !ok || slice.Generation > g
}

// handleDeletion forgets a deleted slice and reports whether this
// controller had deleted it.
func (t *tracker) handleDeletion(slice *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc := serviceOf(slice)
	g, ok := t.gens[svc][slice.UID]
	delete(t.gens[svc], slice.UID)
	return ok && g == deletionExpected
}

// stale reports whether slices (the cached slices of svc) predate this
// controller's own writes: a written slice missing or of an older
// generation, or a deleted one still present.
func (t *tracker) stale(svc types.NamespacedName, slices []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	cached := make(map[types.UID]int64, len(slices))
	for _, s := range slices {
		cached[s.UID] = s.Generation
	}
	for uid, g := range t.gens[svc] {
		have, ok := cached[uid]
		if g == deletionExpected {
			if ok {
				return true
			}
			continue
		}
		if !ok || have < g {
			return true
		}
	}
	return false
}

// forget drops what is tracked for svc.
func (t *tracker) forget(svc types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gens, svc)
}

// relabelled forgets a slice under the Service it used to be labelled
// for (old carries the previous labels).
func (t *tracker) relabelled(old *discoveryv1.EndpointSlice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gens[serviceOf(old)], old.UID)
}
