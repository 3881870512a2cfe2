package apiserver

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/ptr"
)

// watchRecorder is a storage that records which watches reached it.
type watchRecorder struct {
	storage.Interface
	name string
	got  *string
}

func (w watchRecorder) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	*w.got = w.name
	return watch.NewEmptyWatch(), nil
}

func TestResumingStorageWatch(t *testing.T) {
	tests := []struct {
		name string
		opts storage.ListOptions
		want string
	}{
		{"resourceVersion before the cache's first list", storage.ListOptions{ResourceVersion: "57"}, "etcd"},
		{"resourceVersion of the cache's first list", storage.ListOptions{ResourceVersion: "100"}, "etcd"},
		{"resourceVersion in the cache's window", storage.ListOptions{ResourceVersion: "101"}, "cache"},
		{"no resourceVersion", storage.ListOptions{}, "cache"},
		{"resourceVersion 0", storage.ListOptions{ResourceVersion: "0"}, "cache"},
		{"resourceVersion that does not parse", storage.ListOptions{ResourceVersion: "abc"}, "cache"},
		{"watch list", storage.ListOptions{ResourceVersion: "57", SendInitialEvents: ptr.To(true)}, "cache"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			s := &resumingStorage{
				Interface: watchRecorder{name: "cache", got: &got},
				raw:       watchRecorder{name: "etcd", got: &got},
				floor:     100,
			}
			if _, err := s.Watch(context.Background(), "/configmaps", tc.opts); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("watch served by %s, want %s", got, tc.want)
			}
		})
	}
	// With no floor (etcd did not answer), every watch is the cache's.
	var got string
	s := &resumingStorage{Interface: watchRecorder{name: "cache", got: &got}, raw: watchRecorder{name: "etcd", got: &got}}
	if _, _ = s.Watch(context.Background(), "/configmaps", storage.ListOptions{ResourceVersion: "5"}); got != "cache" {
		t.Errorf("watch served by %s with no floor, want cache", got)
	}
}
