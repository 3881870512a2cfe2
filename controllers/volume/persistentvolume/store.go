package persistentvolume

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// store keeps the newest version of each object the controller has seen,
// from the informer or from its own writes: a write the informer has not
// delivered yet must not be undone by acting on the older cached copy
// (upstream keeps the same kind of store). Safe for concurrent use.
type store[T metav1.Object] struct {
	mu   sync.Mutex
	objs map[string]T
	key  func(T) string
}

func newStore[T metav1.Object](key func(T) string) *store[T] {
	return &store[T]{objs: map[string]T{}, key: key}
}

// update stores obj unless a newer version is stored, and reports
// whether it did.
func (s *store[T]) update(obj T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.key(obj)
	if old, ok := s.objs[k]; ok && old.GetUID() == obj.GetUID() && newer(old.GetResourceVersion(), obj.GetResourceVersion()) {
		return false
	}
	s.objs[k] = obj
	return true
}

// newer reports whether resource version a is newer than b; versions
// that do not parse are never newer.
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x > y
}

func (s *store[T]) delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, key)
}

func (s *store[T]) get(key string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[key]
	return o, ok
}

func (s *store[T]) list() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o)
	}
	return out
}
