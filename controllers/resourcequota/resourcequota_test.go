package resourcequota

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	quotaeval "github.com/k1s/k1s/internal/quota"
)

type fixture struct {
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	c       *Controller
	clock   *clocktesting.FakeClock
}

// newFixture builds a controller whose registry lists straight from the
// informer stores (no informer needs to run).
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	listers := func(gvr schema.GroupVersionResource) (cache.GenericLister, error) {
		inf, err := factory.ForResource(gvr)
		if err != nil {
			return nil, err
		}
		return cache.NewGenericLister(inf.Informer().GetIndexer(), gvr.GroupResource()), nil
	}
	clk := clocktesting.NewFakeClock(time.Now())
	registry := generic.NewRegistry(quotaeval.NewEvaluators(listers, clk, quotaeval.DefaultCountedResources()))
	sources := map[schema.GroupResource]cache.SharedIndexInformer{}
	for _, gvr := range MeasuredResources() {
		inf, err := factory.ForResource(gvr)
		if err != nil {
			t.Fatal(err)
		}
		sources[gvr.GroupResource()] = inf.Informer()
	}
	c, err := New(client.CoreV1(), factory.Core().V1().ResourceQuotas(), registry, sources, time.Minute, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var inf cache.SharedIndexInformer
		switch o.(type) {
		case *corev1.Pod:
			inf = factory.Core().V1().Pods().Informer()
		case *corev1.Service:
			inf = factory.Core().V1().Services().Informer()
		case *corev1.ConfigMap:
			inf = factory.Core().V1().ConfigMaps().Informer()
		case *corev1.ResourceQuota:
			inf = factory.Core().V1().ResourceQuotas().Informer()
		default:
			t.Fatalf("no informer for %T", o)
		}
		if err := inf.GetStore().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{client: client, factory: factory, c: c, clock: clk}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func rq(ns, name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	r := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if used != nil {
		r.Status = corev1.ResourceQuotaStatus{Hard: hard.DeepCopy(), Used: used}
	}
	return r
}

func pod(ns, name string, phase corev1.PodPhase, cpu string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q(cpu)}
	}
	return p
}

func TestSync(t *testing.T) {
	podsHard := corev1.ResourceList{corev1.ResourcePods: q("10"), corev1.ResourceRequestsCPU: q("4"), "count/pods": q("20")}
	tests := []struct {
		name       string
		objs       []runtime.Object
		key        string
		wantStatus *corev1.ResourceQuotaStatus // nil: no status write
		wantErr    bool
	}{
		{
			name: "new quota gets hard and measured usage; terminal pods count only in count/pods",
			objs: []runtime.Object{
				rq("ns", "q", podsHard, nil),
				pod("ns", "a", corev1.PodRunning, "500m"),
				pod("ns", "b", corev1.PodPending, "1"),
				pod("ns", "done", corev1.PodSucceeded, "2"),
				pod("other", "x", corev1.PodRunning, "3"),
			},
			key: "ns/q",
			wantStatus: &corev1.ResourceQuotaStatus{
				Hard: podsHard,
				Used: corev1.ResourceList{corev1.ResourcePods: q("2"), corev1.ResourceRequestsCPU: q("1500m"), "count/pods": q("3")},
			},
		},
		{
			name: "usage of deleted objects is released",
			objs: []runtime.Object{
				rq("ns", "q", corev1.ResourceList{corev1.ResourcePods: q("10")}, corev1.ResourceList{corev1.ResourcePods: q("5")}),
				pod("ns", "a", corev1.PodRunning, ""),
			},
			key: "ns/q",
			wantStatus: &corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{corev1.ResourcePods: q("10")},
				Used: corev1.ResourceList{corev1.ResourcePods: q("1")},
			},
		},
		{
			name: "spec change is copied to status.hard and usage of dropped resources goes",
			objs: []runtime.Object{
				func() *corev1.ResourceQuota {
					r := rq("ns", "q", corev1.ResourceList{corev1.ResourceConfigMaps: q("3")}, nil)
					r.Status = corev1.ResourceQuotaStatus{
						Hard: corev1.ResourceList{corev1.ResourceConfigMaps: q("5"), corev1.ResourceSecrets: q("1")},
						Used: corev1.ResourceList{corev1.ResourceConfigMaps: q("1"), corev1.ResourceSecrets: q("1")},
					}
					return r
				}(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}},
			},
			key: "ns/q",
			wantStatus: &corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{corev1.ResourceConfigMaps: q("3")},
				Used: corev1.ResourceList{corev1.ResourceConfigMaps: q("2")},
			},
		},
		{
			name: "scoped quota counts only pods in scope",
			objs: []runtime.Object{
				func() *corev1.ResourceQuota {
					r := rq("ns", "q", corev1.ResourceList{corev1.ResourcePods: q("10")}, nil)
					r.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
					return r
				}(),
				pod("ns", "besteffort", corev1.PodRunning, ""),
				pod("ns", "burstable", corev1.PodRunning, "100m"),
			},
			key: "ns/q",
			wantStatus: &corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{corev1.ResourcePods: q("10")},
				Used: corev1.ResourceList{corev1.ResourcePods: q("1")},
			},
		},
		{
			name: "services by type",
			objs: []runtime.Object{
				rq("ns", "q", corev1.ResourceList{corev1.ResourceServices: q("5"), corev1.ResourceServicesNodePorts: q("1")}, nil),
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}},
			},
			key: "ns/q",
			wantStatus: &corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{corev1.ResourceServices: q("5"), corev1.ResourceServicesNodePorts: q("1")},
				Used: corev1.ResourceList{corev1.ResourceServices: q("2"), corev1.ResourceServicesNodePorts: q("1")},
			},
		},
		{
			name: "unmeasured resource keeps no usage, measured ones are filled",
			objs: []runtime.Object{
				rq("ns", "q", corev1.ResourceList{"count/widgets.example.com": q("3"), corev1.ResourcePods: q("1")}, nil),
			},
			key: "ns/q",
			wantStatus: &corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{"count/widgets.example.com": q("3"), corev1.ResourcePods: q("1")},
				Used: corev1.ResourceList{corev1.ResourcePods: q("0")},
			},
		},
		{
			name: "up to date status is not written",
			objs: []runtime.Object{
				rq("ns", "q", corev1.ResourceList{corev1.ResourcePods: q("10")}, corev1.ResourceList{corev1.ResourcePods: q("1")}),
				pod("ns", "a", corev1.PodRunning, ""),
			},
			key: "ns/q",
		},
		{
			name: "deleted quota is ignored",
			key:  "ns/gone",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.objs...)
			f.client.ClearActions()
			err := f.c.sync(context.Background(), tt.key)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error %v, want error %v", err, tt.wantErr)
			}
			var writes []*corev1.ResourceQuota
			for _, a := range f.client.Actions() {
				u, ok := a.(clienttesting.UpdateAction)
				if !ok || a.GetSubresource() != "status" {
					t.Errorf("unexpected action %v", a)
					continue
				}
				writes = append(writes, u.GetObject().(*corev1.ResourceQuota))
			}
			if tt.wantStatus == nil {
				if len(writes) != 0 {
					t.Fatalf("status written: %+v", writes[0].Status)
				}
				return
			}
			if len(writes) != 1 {
				t.Fatalf("%d status writes, want 1", len(writes))
			}
			if diff := cmp.Diff(*tt.wantStatus, writes[0].Status, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplenishEnqueuesMatchingQuotas(t *testing.T) {
	f := newFixture(t,
		rq("ns", "pods", corev1.ResourceList{corev1.ResourcePods: q("10")}, nil),
		rq("ns", "services", corev1.ResourceList{corev1.ResourceServices: q("10")}, nil),
		rq("other", "pods", corev1.ResourceList{corev1.ResourcePods: q("10")}, nil),
	)
	h := f.c.replenishHandler(corev1.Resource("pods"))
	running := pod("ns", "a", corev1.PodRunning, "")
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: running})
	if got := drain(f.c); !cmp.Equal(got, []string{"ns/pods"}) {
		t.Errorf("after a pod delete, queued %v, want [ns/pods]", got)
	}
	// An update that changes nothing the quota measures is ignored.
	relabelled := running.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	h.OnUpdate(running, relabelled)
	if got := drain(f.c); len(got) != 0 {
		t.Errorf("after a relabel, queued %v, want nothing", got)
	}
	// A pod that finishes releases its compute usage.
	done := running.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	h.OnUpdate(running, done)
	if got := drain(f.c); !cmp.Equal(got, []string{"ns/pods"}) {
		t.Errorf("after a pod finished, queued %v, want [ns/pods]", got)
	}
	h.OnAdd(pod("other", "b", corev1.PodPending, ""), false)
	if got := drain(f.c); !cmp.Equal(got, []string{"other/pods"}) {
		t.Errorf("after a pod add, queued %v, want [other/pods]", got)
	}
}

func TestResyncEnqueuesAll(t *testing.T) {
	f := newFixture(t,
		rq("ns", "a", corev1.ResourceList{corev1.ResourcePods: q("10")}, corev1.ResourceList{corev1.ResourcePods: q("0")}),
		rq("ns", "b", corev1.ResourceList{corev1.ResourcePods: q("10")}, corev1.ResourceList{corev1.ResourcePods: q("3")}),
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f.factory.Start(ctx.Done())
	go func() { done <- f.c.Run(ctx, 1) }()
	// Run's ticker is on the fake clock: once it waits, stepping past the
	// period resyncs, and b's stale usage is corrected.
	deadline := time.Now().Add(10 * time.Second)
	for !f.clock.HasWaiters() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	f.clock.Step(time.Minute)
	var fixed bool
	for time.Now().Before(deadline) && !fixed {
		for _, a := range f.client.Actions() {
			if u, ok := a.(clienttesting.UpdateAction); ok && u.GetObject().(*corev1.ResourceQuota).Name == "b" {
				fixed = quota.Equals(u.GetObject().(*corev1.ResourceQuota).Status.Used, corev1.ResourceList{corev1.ResourcePods: q("0")})
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !fixed {
		t.Fatalf("resync did not correct b's usage; actions %v", f.client.Actions())
	}
}

func drain(c *Controller) []string {
	var out []string
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		c.queue.Done(k)
		out = append(out, k)
	}
	return out
}
