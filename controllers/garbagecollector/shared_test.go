package garbagecollector

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// With shared informers, a resource whose informer the factory already runs
// (pods here, as for another controller) is watched through it, its objects
// reaching the graph as typed objects; other built-in resources and those
// the factory does not know get metadata informers.
func TestSharedInformers(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}}}}
	f := newFixture(t)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(pod), 0)
	stop := make(chan struct{})
	defer close(stop)
	factory.Core().V1().Pods().Informer()
	factory.Start(stop)
	f.gc.UseSharedInformers(factory, stop)

	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	roles := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	f.gc.mapper.(resettableMapper).RESTMapper.(*meta.DefaultRESTMapper).Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
	err := f.gc.syncMonitors(klog.Background(), map[schema.GroupVersionResource]struct{}{pods: {}, roles: {}, widgets: {}})
	if err != nil {
		t.Fatal(err)
	}
	if f.gc.monitors[pods].reg == nil {
		t.Fatalf("pods must be watched through the running shared informer")
	}
	if f.gc.monitors[roles].reg != nil || f.gc.monitors[widgets].reg != nil {
		t.Fatalf("resources without a running shared informer must use metadata informers")
	}
	// Only the shared monitor is started here (the fake metadata client
	// knows neither of the others).
	delete(f.gc.monitors, widgets)
	delete(f.gc.monitors, roles)
	f.gc.startMonitors()
	deadline := time.Now().Add(10 * time.Second)
	for !f.gc.resourceSynced(pods) {
		if time.Now().After(deadline) {
			t.Fatal("pods monitor never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ev, shutdown := f.gc.graphChanges.Get()
	if shutdown {
		t.Fatal("graph changes shut down")
	}
	if ev.typ != addEvent || ev.obj.GetUID() != "p-uid" || ev.gvk.Kind != "Pod" || len(ev.obj.GetOwnerReferences()) != 1 {
		t.Fatalf("event %+v, want the add of pod p with its owner", ev)
	}
	// Removing the monitor removes the handler, not the shared informer.
	if err := f.gc.syncMonitors(klog.Background(), map[schema.GroupVersionResource]struct{}{}); err != nil {
		t.Fatal(err)
	}
	if !factory.Core().V1().Pods().Informer().HasSynced() || factory.Core().V1().Pods().Informer().IsStopped() {
		t.Fatal("the shared pod informer must keep running")
	}
}
