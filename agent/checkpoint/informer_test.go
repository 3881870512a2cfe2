package checkpoint

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// An informer on the wrapped lister-watcher syncs from the checkpoint
// while the apiserver is away, and reconciles with it once it answers:
// what went away is deleted, what came is added.
func TestInformerSyncsFromCheckpointThenReconciles(t *testing.T) {
	defer func(p time.Duration) { fallbackWatchPeriod = p }(fallbackWatchPeriod)
	fallbackWatchPeriod = 100 * time.Millisecond
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := pod("a"), pod("b"), pod("c")
	a.UID, b.UID, c.UID = "ua", "ub", "uc"
	if err := s.Replace(Pods, []Object{{"ns", "a", Trim(&a)}, {"ns", "b", Trim(&b)}}); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&b, &c)
	var away atomic.Bool
	away.Store(true)
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if away.Load() {
			return true, nil, errRefused
		}
		return false, nil, nil
	})
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		if away.Load() {
			return true, nil, errRefused
		}
		return false, nil, nil
	})
	lw, err := s.ListWatch(Pods, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Pods("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods("").Watch(ctx, o)
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	var deleted atomic.Value
	deleted.Store("")
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			deleted.Store(p.Name)
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Run(ctx.Done())
	names := func() string {
		var out []string
		for _, o := range inf.GetStore().List() {
			out = append(out, o.(*corev1.Pod).Name)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer not synced")
	}
	if got := names(); got != "a,b" {
		t.Fatalf("synced from the checkpoint: %s, want a,b", got)
	}
	away.Store(false)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return names() == "b,c", nil
	}); err != nil {
		t.Fatalf("after the apiserver answered: %s, want b,c", names())
	}
	if d := deleted.Load().(string); d != "a" {
		t.Errorf("deleted %q, want a", d)
	}
	if n := s.Names(Pods); len(n) != 2 || n[0][1] != "b" || n[1][1] != "c" {
		t.Errorf("checkpoint after the reconcile: %v", n)
	}
}
