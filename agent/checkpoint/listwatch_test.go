package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/k1s/k1s/agent/kuberuntime"
)

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// fakeLW answers lists with pods or err, and watches with w.
type fakeLW struct {
	pods []corev1.Pod
	err  error
	w    *watch.FakeWatcher
}

func (f *fakeLW) lw() cache.ListerWatcher {
	return &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			if f.err != nil {
				return nil, f.err
			}
			return &corev1.PodList{Items: f.pods}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			if f.err != nil {
				return nil, f.err
			}
			f.w = watch.NewFake()
			return f.w, nil
		},
	}
}

func pod(name string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "name", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.5"},
	}
}

func names(t *testing.T, obj runtime.Object) []string {
	t.Helper()
	var out []string
	for _, p := range obj.(*corev1.PodList).Items {
		out = append(out, p.Name)
	}
	return out
}

func TestListWatchFallsBackToTheCheckpoint(t *testing.T) {
	defer func(p time.Duration) { fallbackWatchPeriod = p }(fallbackWatchPeriod)
	fallbackWatchPeriod = 10 * time.Millisecond
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLW{err: errRefused}
	lw, err := s.ListWatch(Pods, f.lw(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := lw.(cache.ListerWatcherWithContext)
	ctx := context.Background()

	// Never listed: the error stands.
	if _, err := l.ListWithContext(ctx, metav1.ListOptions{}); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("list before any checkpoint: %v, want the connection error", err)
	}
	// A list is kept, trimmed.
	f.err, f.pods = nil, []corev1.Pod{pod("a"), pod("b")}
	if _, err := l.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var kept corev1.Pod
	if ok, _ := s.Get(Pods, "ns", "a", &kept); !ok || kept.ResourceVersion != "" || kept.ManagedFields != nil || kept.Status.PodIP != "" || kept.Status.Phase != corev1.PodRunning {
		t.Errorf("kept pod not trimmed as documented: %+v", kept)
	}
	// Unreachable: the list comes from the checkpoint, and the watch
	// after it fails so that the reflector lists again.
	for _, err := range []error{errRefused, apierrors.NewServiceUnavailable("etcd"), context.DeadlineExceeded} {
		f.err = err
		got, lerr := l.ListWithContext(ctx, metav1.ListOptions{})
		if lerr != nil {
			t.Fatalf("list with %v: %v", err, lerr)
		}
		if n := names(t, got); len(n) != 2 || n[0] != "a" || n[1] != "b" {
			t.Errorf("list from checkpoint with %v = %v", err, n)
		}
		w, werr := l.WatchWithContext(ctx, metav1.ListOptions{})
		if werr != nil {
			t.Fatalf("watch after a checkpoint list: %v", werr)
		}
		select {
		case ev := <-w.ResultChan():
			if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Reason != metav1.StatusReasonExpired {
				t.Errorf("watch after a checkpoint list sent %v %+v, want an expired error", ev.Type, ev.Object)
			}
		case <-time.After(5 * time.Second):
			t.Error("the watch after a checkpoint list does not end")
		}
		w.Stop()
	}
	// An answer refusing the request is no reason to fall back.
	f.err = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	if _, err := l.ListWithContext(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden list: %v", err)
	}
	// Back: the new list replaces the checkpoint (b pruned), watch
	// events are kept.
	f.err, f.pods = nil, []corev1.Pod{pod("a"), pod("c")}
	if _, err := l.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := s.Names(Pods); len(n) != 2 || n[1][1] != "c" {
		t.Errorf("after reconnect kept %v, want a and c", n)
	}
	w, err := l.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := pod("d")
	go func() {
		f.w.Add(&d)
		f.w.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	}()
	for range 2 {
		select {
		case <-w.ResultChan():
		case <-time.After(5 * time.Second):
			t.Fatal("watch event not delivered")
		}
	}
	w.Stop()
	if n := s.Names(Pods); fmt.Sprint(n) != "[[ns c] [ns d]]" {
		t.Errorf("after watch events kept %v, want c and d", n)
	}
}

func TestFirstListIsBoundedWhenTheCheckpointCanAnswer(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(Pods, []Object{{"ns", "a", Trim(ptr(pod("a")))}}); err != nil {
		t.Fatal(err)
	}
	s.MarkUnreachable()
	hang := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, errRefused },
	}
	lw, _ := s.ListWatch(Pods, hang, nil)
	start := time.Now()
	got, err := lw.(cache.ListerWatcherWithContext).ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("first list took %s with the apiservers marked unreachable", d)
	}
	if n := names(t, got); len(n) != 1 {
		t.Errorf("list = %v", n)
	}
}

func ptr[T any](v T) *T { return &v }

// The container hash the agent compares must survive the checkpoint: a
// container started from a checkpointed pod is not restarted when the
// apiserver's pod arrives.
func TestContainerHashStableAcrossCheckpoint(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := pod("a")
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k", LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}
	p.Spec.Containers[0].Command = []string{}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	// The apiserver's pod as a JSON client decodes it.
	data, _ := json.Marshal(p)
	var api corev1.Pod
	if err := json.Unmarshal(data, &api); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(Pods, []Object{{"ns", "a", Trim(&api)}}); err != nil {
		t.Fatal(err)
	}
	kept, err := s.Pods()
	if err != nil || len(kept) != 1 {
		t.Fatalf("Pods = %v, %v", kept, err)
	}
	if a, b := kuberuntime.HashContainer(&api.Spec.Containers[0]), kuberuntime.HashContainer(&kept[0].Spec.Containers[0]); a != b {
		t.Errorf("container hash %x from the apiserver, %x from the checkpoint", a, b)
	}
}

// Served from the checkpoint, EndpointSlices name the node's own pods at
// their current address: a pod restarted while cut off has a new one.
func TestEndpointSlicesFollowLocalPods(t *testing.T) {
	defer func(p, r time.Duration) { fallbackWatchPeriod, localRefreshPeriod = p, r }(fallbackWatchPeriod, localRefreshPeriod)
	fallbackWatchPeriod, localRefreshPeriod = time.Hour, 10*time.Millisecond
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-abc"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.42.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes}, TargetRef: &corev1.ObjectReference{Kind: "Pod", UID: "local"}},
			{Addresses: []string{"10.42.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes}, TargetRef: &corev1.ObjectReference{Kind: "Pod", UID: "elsewhere"}},
		},
	}
	if err := s.Replace(EndpointSlices, []Object{{"ns", "web-abc", es}}); err != nil {
		t.Fatal(err)
	}
	var local struct {
		ip string
		ok bool
	}
	var mu sync.Mutex
	s.SetLocalPods(func(uid types.UID) (string, bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		return local.ip, true, uid == "local" && local.ok
	})
	lw, _ := s.ListWatch(EndpointSlices, &cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return nil, errRefused },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return nil, errRefused },
	}, nil)
	l := lw.(cache.ListerWatcherWithContext)
	addrs := func(obj runtime.Object) string {
		var out []string
		for _, ep := range obj.(*discoveryv1.EndpointSlice).Endpoints {
			out = append(out, ep.Addresses...)
		}
		return strings.Join(out, ",")
	}
	list, err := l.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := addrs(&list.(*discoveryv1.EndpointSliceList).Items[0]); got != "10.42.1.5,10.42.0.7" {
		t.Errorf("before the pod runs: %s", got)
	}
	w, err := l.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mu.Lock()
	local.ip, local.ok = "10.42.1.9", true
	mu.Unlock()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Modified || addrs(ev.Object) != "10.42.1.9,10.42.0.7" {
			t.Errorf("event %v %s, want the local pod's new address only", ev.Type, addrs(ev.Object))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event for the local pod's new address")
	}
	// The kept object itself is not rewritten.
	var kept discoveryv1.EndpointSlice
	if ok, _ := s.Get(EndpointSlices, "ns", "web-abc", &kept); !ok || addrs(&kept) != "10.42.1.5,10.42.0.7" {
		t.Errorf("checkpoint rewritten: %s", addrs(&kept))
	}
}
