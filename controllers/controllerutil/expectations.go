package controllerutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long expectations are trusted: after it they
// count as satisfied, so a controller that missed a watch event syncs again.
const ExpectationsTimeout = 5 * time.Minute

// expectation is one owner's outstanding creations and deletions.
type expectation struct {
	add, del int64
	set      time.Time
}

// ControllerExpectations records, per controller key (usually
// "namespace/name" of the owner), how many creations and deletions the
// controller still waits to observe. A key with no record, with both counts
// at or below zero, or whose record is older than ExpectationsTimeout is
// satisfied. Safe for concurrent use.
type ControllerExpectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

// NewControllerExpectations returns empty expectations timed by clk
// (clock.RealClock{} when nil).
func NewControllerExpectations(clk clock.PassiveClock) *ControllerExpectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ControllerExpectations{clock: clk, m: map[string]*expectation{}}
}

// SatisfiedExpectations reports whether the controller may act on key:
// true when nothing is outstanding, when the record has expired, or when
// there is no record at all.
func (e *ControllerExpectations) SatisfiedExpectations(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok {
		return true
	}
	if exp.add <= 0 && exp.del <= 0 {
		return true
	}
	return e.clock.Since(exp.set) > ExpectationsTimeout
}

// GetExpectations returns the outstanding creations and deletions of key,
// and whether key has a record.
func (e *ControllerExpectations) GetExpectations(key string) (add, del int64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok {
		return 0, 0, false
	}
	return exp.add, exp.del, true
}

// SetExpectations replaces key's record with add creations and del
// deletions, timed from now.
func (e *ControllerExpectations) SetExpectations(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{add: int64(add), del: int64(del), set: e.clock.Now()}
}

// ExpectCreations replaces key's record with adds creations.
func (e *ControllerExpectations) ExpectCreations(key string, adds int) {
	e.SetExpectations(key, adds, 0)
}

// ExpectDeletions replaces key's record with dels deletions.
func (e *ControllerExpectations) ExpectDeletions(key string, dels int) {
	e.SetExpectations(key, 0, dels)
}

// LowerExpectations subtracts add and del from key's record, if it has one.
func (e *ControllerExpectations) LowerExpectations(key string, add, del int) {
	e.adjust(key, -int64(add), -int64(del))
}

// RaiseExpectations adds add and del to key's record, if it has one.
func (e *ControllerExpectations) RaiseExpectations(key string, add, del int) {
	e.adjust(key, int64(add), int64(del))
}

func (e *ControllerExpectations) adjust(key string, add, del int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		exp.add += add
		exp.del += del
	}
}

// CreationObserved counts one expected creation of key as seen.
func (e *ControllerExpectations) CreationObserved(key string) { e.LowerExpectations(key, 1, 0) }

// DeletionObserved counts one expected deletion of key as seen.
func (e *ControllerExpectations) DeletionObserved(key string) { e.LowerExpectations(key, 0, 1) }

// DeleteExpectations forgets key (the owner is gone).
func (e *ControllerExpectations) DeleteExpectations(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// UIDTrackingExpectations are ControllerExpectations that also remember
// which children (by key, usually the pod's "namespace/name") a controller
// deletes, so that the update setting a child's deletionTimestamp and the
// final delete event count once. Safe for concurrent use.
type UIDTrackingExpectations struct {
	*ControllerExpectations
	mu   sync.Mutex
	keys map[string]sets.Set[string]
}

// NewUIDTrackingExpectations wraps exp.
func NewUIDTrackingExpectations(exp *ControllerExpectations) *UIDTrackingExpectations {
	return &UIDTrackingExpectations{ControllerExpectations: exp, keys: map[string]sets.Set[string]{}}
}

// ExpectDeletions replaces key's record with the deletion of the children
// named by childKeys.
func (u *UIDTrackingExpectations) ExpectDeletions(key string, childKeys []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := sets.New(childKeys...)
	u.keys[key] = s
	u.ControllerExpectations.ExpectDeletions(key, s.Len())
}

// DeletionObserved counts the deletion of childKey as seen, once, if key
// expects it.
func (u *UIDTrackingExpectations) DeletionObserved(key, childKey string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.keys[key]
	if !s.Has(childKey) {
		return
	}
	s.Delete(childKey)
	u.ControllerExpectations.DeletionObserved(key)
}

// ExpectedDeletions returns a copy of the child keys key still waits for.
func (u *UIDTrackingExpectations) ExpectedDeletions(key string) sets.Set[string] {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.keys[key].Clone()
}

// DeleteExpectations forgets key and its child keys.
func (u *UIDTrackingExpectations) DeleteExpectations(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.keys, key)
	u.ControllerExpectations.DeleteExpectations(key)
}
