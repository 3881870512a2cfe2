package endpointslicemirroring

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func service(selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
}

func customEndpoints(mut ...func(*corev1.Endpoints)) *corev1.Endpoints {
	e := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "ep-uid", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: "x", "note": "kept"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "10.1.2.3", Hostname: "h1"}, {IP: "not-an-ip"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "fd00::9"}},
			Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		}},
	}
	for _, m := range mut {
		m(e)
	}
	return e
}

type harness struct {
	c      *Controller
	client *fake.Clientset
	rec    *record.FakeRecorder
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	// The fake does not generate names.
	n := 0
	client.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		if s.Name == "" {
			n++
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, n)
		}
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(10)
	c, err := New(client, f.Core().V1().Endpoints(), f.Core().V1().Services(), f.Discovery().V1().EndpointSlices(), rec,
		clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced...)
	return &harness{c: c, client: client, rec: rec}
}

func (h *harness) slices(t *testing.T) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestMirrorsEndpoints(t *testing.T) {
	h := newHarness(t, service(nil), customEndpoints())
	if err := h.c.sync(context.Background(), "ns/ext"); err != nil {
		t.Fatal(err)
	}
	got := h.slices(t)
	if len(got) != 2 {
		t.Fatalf("want an IPv4 and an IPv6 slice, got %d: %+v", len(got), got)
	}
	for _, s := range got {
		if s.Labels[discoveryv1.LabelServiceName] != "ext" || s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels["team"] != "a" {
			t.Errorf("labels %v", s.Labels)
		}
		if _, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok || s.Annotations["note"] != "kept" {
			t.Errorf("annotations %v", s.Annotations)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Endpoints" || s.OwnerReferences[0].UID != "ep-uid" {
			t.Errorf("owner %v", s.OwnerReferences)
		}
		if len(s.Ports) != 1 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" {
			t.Errorf("ports %+v", s.Ports)
		}
		if len(s.Endpoints) != 1 {
			t.Fatalf("endpoints %+v", s.Endpoints)
		}
		e := s.Endpoints[0]
		switch s.AddressType {
		case discoveryv1.AddressTypeIPv4:
			if e.Addresses[0] != "10.1.2.3" || !*e.Conditions.Ready || *e.Hostname != "h1" {
				t.Errorf("v4 endpoint %+v", e)
			}
		case discoveryv1.AddressTypeIPv6:
			if e.Addresses[0] != "fd00::9" || *e.Conditions.Ready {
				t.Errorf("v6 endpoint %+v", e)
			}
		}
	}
	select {
	case ev := <-h.rec.Events:
		if ev == "" {
			t.Error("no event for the invalid address")
		}
	default:
		t.Error("no event for the invalid address")
	}
}

func TestMirrorUpdateAndCleanup(t *testing.T) {
	h := newHarness(t, service(nil), customEndpoints(func(e *corev1.Endpoints) {
		e.Subsets[0].NotReadyAddresses = nil
		e.Subsets[0].Addresses = e.Subsets[0].Addresses[:1]
	}))
	ctx := context.Background()
	if err := h.c.sync(ctx, "ns/ext"); err != nil {
		t.Fatal(err)
	}
	// The informer sees the created slice; the address changes.
	waitSlices(t, h, 1)
	ep := customEndpoints(func(e *corev1.Endpoints) {
		e.Subsets[0].NotReadyAddresses = nil
		e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "10.2.3.4"}}
	})
	if _, err := h.client.CoreV1().Endpoints("ns").Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		e, err := h.c.endpoints.Endpoints("ns").Get("ext")
		return err == nil && e.Subsets[0].Addresses[0].IP == "10.2.3.4"
	})
	if err := h.c.sync(ctx, "ns/ext"); err != nil {
		t.Fatal(err)
	}
	got := h.slices(t)
	if len(got) != 1 || got[0].Endpoints[0].Addresses[0] != "10.2.3.4" {
		t.Fatalf("after the update: %+v", got)
	}
	// The Service gains a selector: its mirrored slices go.
	if _, err := h.client.CoreV1().Services("ns").Update(ctx, service(map[string]string{"app": "x"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		s, err := h.c.services.Services("ns").Get("ext")
		return err == nil && s.Spec.Selector != nil
	})
	if err := h.c.sync(ctx, "ns/ext"); err != nil {
		t.Fatal(err)
	}
	if got := h.slices(t); len(got) != 0 {
		t.Fatalf("mirrored slices left: %+v", got)
	}
}

func TestSkipMirror(t *testing.T) {
	h := newHarness(t, service(nil), customEndpoints(func(e *corev1.Endpoints) {
		e.Labels[discoveryv1.LabelSkipMirror] = "true"
	}))
	if err := h.c.sync(context.Background(), "ns/ext"); err != nil {
		t.Fatal(err)
	}
	if got := h.slices(t); len(got) != 0 {
		t.Fatalf("skip-mirror endpoints mirrored: %+v", got)
	}
}

func waitSlices(t *testing.T, h *harness, n int) {
	t.Helper()
	waitFor(t, func() bool {
		l, err := h.c.slices.List(labels.Everything())
		return err == nil && len(l) == n
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
