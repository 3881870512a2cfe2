package garbagecollector

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

type resettableMapper struct{ meta.RESTMapper }

func (resettableMapper) Reset() {}

func testMapper() meta.ResettableRESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	return resettableMapper{m}
}

type fixture struct {
	gc     *GarbageCollector
	client *metadatafake.FakeMetadataClient
	events *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...*metav1.PartialObjectMetadata) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	metav1.AddMetaToScheme(scheme)
	var ros []runtime.Object
	for _, o := range objs {
		ros = append(ros, o)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, ros...)
	rec := record.NewFakeRecorder(100)
	gc, err := New(Config{Workers: 1}, client, testMapper(), func(context.Context) ([]*metav1.APIResourceList, error) { return nil, nil },
		rec, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gc.graphChanges.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
	})
	return &fixture{gc: gc, client: client, events: rec}
}

type objOpt func(*metav1.PartialObjectMetadata)

func obj(apiVersion, kind, ns, name string, opts ...objOpt) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), ResourceVersion: "10"},
	}
	for _, f := range opts {
		f(o)
	}
	return o
}

func cm(name string, opts ...objOpt) *metav1.PartialObjectMetadata {
	return obj("v1", "ConfigMap", "ns", name, opts...)
}

func ownedBy(o *metav1.PartialObjectMetadata, block bool) objOpt {
	return func(d *metav1.PartialObjectMetadata) {
		d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{
			APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(block),
		})
	}
}

func ownedByUID(apiVersion, kind, name string, uid types.UID) objOpt {
	return func(d *metav1.PartialObjectMetadata) {
		d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid})
	}
}

func deleting(finalizers ...string) objOpt {
	return func(o *metav1.PartialObjectMetadata) {
		now := metav1.Now()
		o.DeletionTimestamp = &now
		o.Finalizers = append(o.Finalizers, finalizers...)
	}
}

func finalizers(f ...string) objOpt {
	return func(o *metav1.PartialObjectMetadata) { o.Finalizers = append(o.Finalizers, f...) }
}

// observe feeds objects to the graph as informer adds.
func (f *fixture) observe(objs ...*metav1.PartialObjectMetadata) {
	for _, o := range objs {
		f.gc.processEvent(klog.Background(), &event{typ: addEvent, obj: o, gvk: o.GroupVersionKind()})
	}
}

func (f *fixture) node(uid types.UID) *node {
	n, ok := f.gc.graph.lookup(uid)
	if !ok {
		return nil
	}
	return n
}

// actions summarizes the client's writes: "delete ns/name policy",
// "patch ns/name <type> <body>".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a := a.(type) {
		case clienttesting.DeleteActionImpl:
			policy := ""
			if p := a.GetDeleteOptions().PropagationPolicy; p != nil {
				policy = string(*p)
			}
			out = append(out, "delete "+a.GetNamespace()+"/"+a.GetName()+" "+policy)
		case clienttesting.PatchActionImpl:
			out = append(out, "patch "+a.GetNamespace()+"/"+a.GetName()+" "+string(a.GetPatchType())+" "+string(a.GetPatch()))
		}
	}
	return out
}

func TestAttemptToDeleteItem(t *testing.T) {
	owner := cm("owner")
	other := cm("other")
	tests := []struct {
		name      string
		stored    []*metav1.PartialObjectMetadata // in the apiserver
		graph     []*metav1.PartialObjectMetadata // observed by informers
		item      types.UID
		want      []string
		wantErr   error
		wantQueue bool // a virtual delete event was queued
	}{
		{
			name:   "owner gone: dependent deleted in the background",
			stored: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false))},
			graph:  []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false))},
			item:   "dep-uid",
			want:   []string{"delete ns/dep Background"},
		},
		{
			name:   "owner replaced by another object of the same name",
			stored: []*metav1.PartialObjectMetadata{cm("owner", func(o *metav1.PartialObjectMetadata) { o.UID = "new-uid" }), cm("dep", ownedBy(owner, false))},
			graph:  []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false))},
			item:   "dep-uid",
			want:   []string{"delete ns/dep Background"},
		},
		{
			name:   "owner present: nothing to do",
			stored: []*metav1.PartialObjectMetadata{owner, cm("dep", ownedBy(owner, false))},
			graph:  []*metav1.PartialObjectMetadata{owner, cm("dep", ownedBy(owner, false))},
			item:   "dep-uid",
		},
		{
			name:   "one owner gone, one left: the reference goes",
			stored: []*metav1.PartialObjectMetadata{other, cm("dep", ownedBy(owner, false), ownedBy(other, false))},
			graph:  []*metav1.PartialObjectMetadata{other, cm("dep", ownedBy(owner, false), ownedBy(other, false))},
			item:   "dep-uid",
			want:   []string{`patch ns/dep application/strategic-merge-patch+json {"metadata":{"ownerReferences":[{"$patch":"delete","uid":"owner-uid"}],"uid":"dep-uid"}}`},
		},
		{
			name:   "dependent's own finalizers choose its policy",
			stored: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false), finalizers(metav1.FinalizerOrphanDependents))},
			graph:  []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false), finalizers(metav1.FinalizerOrphanDependents))},
			item:   "dep-uid",
			want:   []string{"delete ns/dep Orphan"},
		},
		{
			name: "owner in foreground deletion: a leaf dependent is deleted",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents)), cm("dep", ownedBy(owner, true)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, true))},
			item:  "dep-uid",
			want:  []string{"delete ns/dep Background"},
		},
		{
			name: "owner in foreground deletion: a dependent with dependents goes in the foreground",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents)), cm("dep", ownedBy(owner, true)),
				cm("grandchild", ownedBy(cm("dep"), true)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, true)), cm("grandchild", ownedBy(cm("dep"), true))},
			item:  "dep-uid",
			want:  []string{"delete ns/dep Foreground"},
		},
		{
			name: "owner in foreground deletion with a solid second owner: only the reference goes",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents)), other, cm("dep", ownedBy(owner, true), ownedBy(other, false)),
			},
			graph: []*metav1.PartialObjectMetadata{other, cm("dep", ownedBy(owner, true), ownedBy(other, false))},
			item:  "dep-uid",
			want:  []string{`patch ns/dep application/strategic-merge-patch+json {"metadata":{"ownerReferences":[{"$patch":"delete","uid":"owner-uid"}],"uid":"dep-uid"}}`},
		},
		{
			name:   "cluster-scoped owner of a namespaced dependent",
			stored: []*metav1.PartialObjectMetadata{obj("v1", "Node", "", "n1"), cm("dep", ownedBy(obj("v1", "Node", "", "n1"), false))},
			graph:  []*metav1.PartialObjectMetadata{obj("v1", "Node", "", "n1"), cm("dep", ownedBy(obj("v1", "Node", "", "n1"), false))},
			item:   "dep-uid",
		},
		{
			name: "namespaced owner in another namespace counts as absent",
			stored: []*metav1.PartialObjectMetadata{
				obj("v1", "ConfigMap", "elsewhere", "owner"), cm("dep", ownedBy(owner, false)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false))},
			item:  "dep-uid",
			want:  []string{"delete ns/dep Background"},
		},
		{
			name: "cluster-scoped dependent naming a namespaced owner is ignored",
			stored: []*metav1.PartialObjectMetadata{
				obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role", ownedBy(owner, false)),
			},
			graph:   []*metav1.PartialObjectMetadata{obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role", ownedBy(owner, false))},
			item:    "role-uid",
			wantErr: errNamespacedOwnerOfClusterScoped,
		},
		{
			name:      "item gone: a virtual delete is queued",
			graph:     []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false))},
			item:      "dep-uid",
			wantErr:   errVirtualDeleteQueued,
			wantQueue: true,
		},
		{
			name: "foreground owner without blocking dependents loses its finalizer",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents, "example.com/keep")), cm("dep", ownedBy(owner, false)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("owner", deleting(metav1.FinalizerDeleteDependents, "example.com/keep")), cm("dep", ownedBy(owner, false))},
			item:  "owner-uid",
			want:  []string{`patch ns/owner application/merge-patch+json {"metadata":{"finalizers":["example.com/keep"],"resourceVersion":"10"}}`},
		},
		{
			name: "foreground owner with a blocking dependent waits and queues it",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents)), cm("dep", ownedBy(owner, true)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("owner", deleting(metav1.FinalizerDeleteDependents)), cm("dep", ownedBy(owner, true))},
			item:  "owner-uid",
		},
		{
			// A cycle: dep waits on owner, and dep's own dependent is in
			// foreground deletion waiting on dep.
			name: "owner in foreground deletion, a dependent of the item deleting its dependents: unblock, then delete",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents)), cm("dep", ownedBy(owner, true)),
				cm("grandchild", ownedBy(cm("dep"), true), deleting(metav1.FinalizerDeleteDependents)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, true)), cm("grandchild", ownedBy(cm("dep"), true), deleting(metav1.FinalizerDeleteDependents))},
			item:  "dep-uid",
			want: []string{
				`patch ns/dep application/strategic-merge-patch+json {"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"owner-uid","blockOwnerDeletion":false}],"uid":"dep-uid"}}`,
				"delete ns/dep Foreground",
			},
		},
		{
			// The retry of the case above: its references no longer
			// block, and must not be patched away (an empty list).
			name: "the same cycle with the item's references already unblocked: only the delete",
			stored: []*metav1.PartialObjectMetadata{
				cm("owner", deleting(metav1.FinalizerDeleteDependents)), cm("dep", ownedBy(owner, false)),
				cm("grandchild", ownedBy(cm("dep"), true), deleting(metav1.FinalizerDeleteDependents)),
			},
			graph: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false)), cm("grandchild", ownedBy(cm("dep"), true), deleting(metav1.FinalizerDeleteDependents))},
			item:  "dep-uid",
			want:  []string{"delete ns/dep Foreground"},
		},
		{
			name:   "an item being deleted (not in the foreground) is left alone",
			stored: []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false), deleting("example.com/keep"))},
			graph:  []*metav1.PartialObjectMetadata{cm("dep", ownedBy(owner, false), deleting("example.com/keep"))},
			item:   "dep-uid",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.stored...)
			f.observe(tt.graph...)
			n := f.node(tt.item)
			if n == nil {
				t.Fatalf("item %s not in the graph", tt.item)
			}
			f.client.ClearActions()
			for f.gc.graphChanges.Len() > 0 {
				e, _ := f.gc.graphChanges.Get()
				f.gc.graphChanges.Done(e)
			}
			err := f.gc.attemptToDeleteItem(context.Background(), n)
			if err != tt.wantErr {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, f.writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if got := f.gc.graphChanges.Len() > 0; got != tt.wantQueue {
				t.Errorf("virtual delete queued %v, want %v", got, tt.wantQueue)
			}
		})
	}
}

func TestGraphEvents(t *testing.T) {
	owner := cm("owner")
	f := newFixture(t)
	logger := klog.Background()
	dep := cm("dep", ownedBy(owner, true))

	// A dependent seen before its owner makes a virtual owner, queued for a
	// check.
	f.observe(dep)
	ownerNode := f.node("owner-uid")
	if ownerNode == nil || ownerNode.observed {
		t.Fatalf("no virtual owner node: %+v", ownerNode)
	}
	if got := drain(f.gc); !slices.Equal(got, []types.UID{"owner-uid"}) {
		t.Errorf("queued %v, want the virtual owner", got)
	}
	// The owner shows up: the node becomes observed, nothing to do.
	f.observe(owner)
	if !f.node("owner-uid").observed {
		t.Errorf("owner not marked observed")
	}
	if got := drain(f.gc); len(got) != 0 {
		t.Errorf("queued %v after the owner appeared", got)
	}
	// Foreground deletion starts: the owner and its dependents are queued.
	deletingOwner := cm("owner", deleting(metav1.FinalizerDeleteDependents))
	f.gc.processEvent(logger, &event{typ: updateEvent, obj: deletingOwner, old: owner, gvk: owner.GroupVersionKind()})
	if !f.node("owner-uid").deletingDependents {
		t.Errorf("owner not marked deletingDependents")
	}
	if got := drain(f.gc); !cmp.Equal(sorted(got), []types.UID{"dep-uid", "owner-uid"}) {
		t.Errorf("queued %v, want owner and dependent", got)
	}
	// The dependent stops blocking: the waiting owner is queued.
	unblocked := cm("dep", ownedBy(owner, false))
	f.gc.processEvent(logger, &event{typ: updateEvent, obj: unblocked, old: dep, gvk: dep.GroupVersionKind()})
	if got := drain(f.gc); !slices.Equal(got, []types.UID{"owner-uid"}) {
		t.Errorf("queued %v after unblocking, want the owner", got)
	}
	// The dependent goes: removed from the graph, its deleting owner queued.
	f.gc.processEvent(logger, &event{typ: deleteEvent, obj: unblocked, gvk: dep.GroupVersionKind()})
	if f.node("dep-uid") != nil {
		t.Errorf("deleted dependent still in the graph")
	}
	if len(f.node("owner-uid").dependents) != 0 {
		t.Errorf("owner still lists the deleted dependent")
	}
	if got := drain(f.gc); !slices.Equal(got, []types.UID{"owner-uid"}) {
		t.Errorf("queued %v after the dependent went, want the owner", got)
	}
	// Orphan deletion of another owner queues it for orphaning.
	o2 := cm("o2")
	f.observe(o2, cm("d2", ownedBy(o2, false)))
	drain(f.gc)
	f.gc.processEvent(logger, &event{typ: updateEvent, obj: cm("o2", deleting(metav1.FinalizerOrphanDependents)), old: o2, gvk: o2.GroupVersionKind()})
	if f.gc.attemptToOrphan.Len() != 1 {
		t.Errorf("orphan deletion did not queue the owner for orphaning")
	}
	// The owner is deleted: its dependents are queued, and it is known to
	// be absent.
	f.gc.processEvent(logger, &event{typ: deleteEvent, obj: o2, gvk: o2.GroupVersionKind()})
	if got := drain(f.gc); !slices.Equal(got, []types.UID{"d2-uid"}) {
		t.Errorf("queued %v after the owner went, want its dependent", got)
	}
	if _, ok := f.gc.absentOwners.Get(objectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "o2", UID: "o2-uid", Namespace: "ns"}); !ok {
		t.Errorf("deleted owner not recorded as absent")
	}
}

func TestOwnerInAnotherNamespaceIsReported(t *testing.T) {
	f := newFixture(t)
	owner := obj("v1", "ConfigMap", "elsewhere", "owner")
	f.observe(owner)
	f.observe(cm("dep", ownedBy(owner, false)))
	if got := drain(f.gc); !slices.Equal(got, []types.UID{"dep-uid"}) {
		t.Errorf("queued %v, want the dependent for a check", got)
	}
	select {
	case e := <-f.events.Events:
		if want := "Warning OwnerRefInvalidNamespace"; len(e) < len(want) || e[:len(want)] != want {
			t.Errorf("event %q", e)
		}
	default:
		t.Errorf("no OwnerRefInvalidNamespace event")
	}
}

func TestVirtualDeleteWithDisagreeingDependents(t *testing.T) {
	f := newFixture(t)
	// Two dependents name the same UID with different kinds.
	a := cm("a", ownedByUID("v1", "ConfigMap", "owner", "x-uid"))
	b := cm("b", ownedByUID("apps/v1", "ReplicaSet", "owner", "x-uid"))
	f.observe(a, b)
	drain(f.gc)
	virtual := f.node("x-uid")
	id := f.gc.graph.view(virtual).identity
	// The identity the virtual node has is found absent.
	f.gc.processEvent(klog.Background(), &event{typ: deleteEvent, virtual: true, gvk: schema.FromAPIVersionAndKind(id.APIVersion, id.Kind),
		obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID}}})
	n := f.node("x-uid")
	if n == nil {
		t.Fatalf("virtual node removed although another dependent disagrees")
	}
	if got := f.gc.graph.view(n).identity; got == id {
		t.Errorf("virtual node kept the identity found absent: %v", got)
	}
	queued := drain(f.gc)
	var matching types.UID = "a-uid"
	if id.Kind == "ReplicaSet" {
		matching = "b-uid"
	}
	if !slices.Equal(queued, []types.UID{matching}) {
		t.Errorf("queued %v, want %s, whose owner is confirmed absent", queued, matching)
	}
	// The re-identified owner is checked again, after a back-off.
	if f.gc.attemptToDelete.NumRequeues(n) != 1 {
		t.Errorf("re-identified owner not requeued")
	}
}

func TestOrphanDependents(t *testing.T) {
	owner := cm("owner", deleting(metav1.FinalizerOrphanDependents))
	f := newFixture(t, owner, cm("d1", ownedBy(owner, true)), cm("d2", ownedBy(owner, false), ownedBy(cm("other"), false)))
	f.observe(owner, cm("d1", ownedBy(owner, true)), cm("d2", ownedBy(owner, false), ownedBy(cm("other"), false)))
	f.client.ClearActions()
	if err := f.gc.orphanDependents(context.Background(), f.node("owner-uid")); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for name, want := range map[string][]string{"d1": nil, "d2": {"other-uid"}} {
		got, err := f.client.Resource(gvr).Namespace("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var uids []string
		for _, r := range got.OwnerReferences {
			uids = append(uids, string(r.UID))
		}
		if !slices.Equal(uids, want) {
			t.Errorf("%s owners %v, want %v", name, uids, want)
		}
	}
	got, err := f.client.Resource(gvr).Namespace("ns").Get(context.Background(), "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("owner finalizers %v, want none", got.Finalizers)
	}
}

func TestDeletableResources(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Verbs: []string{"create", "delete", "get", "list", "watch"}},
			{Name: "bindings", Verbs: []string{"create"}},
			{Name: "componentstatuses", Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Verbs: []string{"delete", "list", "watch", "get"}},
		}},
	}
	got, err := DeletableResources(context.Background(), func(context.Context) ([]*metav1.APIResourceList, error) { return lists, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupVersionResource]struct{}{
		{Version: "v1", Resource: "pods"}:                       {},
		{Group: "apps", Version: "v1", Resource: "deployments"}: {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReferenceDiffs(t *testing.T) {
	a := metav1.OwnerReference{UID: "a", Name: "a"}
	b := metav1.OwnerReference{UID: "b", Name: "b"}
	b2 := metav1.OwnerReference{UID: "b", Name: "b", BlockOwnerDeletion: ptr.To(true)}
	c := metav1.OwnerReference{UID: "c", Name: "c"}
	added, removed, changed := referenceDiffs([]metav1.OwnerReference{a, b}, []metav1.OwnerReference{b2, c})
	if !cmp.Equal(added, []metav1.OwnerReference{c}) || !cmp.Equal(removed, []metav1.OwnerReference{a}) ||
		!cmp.Equal(changed, [][2]metav1.OwnerReference{{b, b2}}) {
		t.Errorf("added %v removed %v changed %v", added, removed, changed)
	}
}

func drain(gc *GarbageCollector) []types.UID {
	// Events the workers would produce are not part of these checks.
	var out []types.UID
	for gc.attemptToDelete.Len() > 0 {
		n, _ := gc.attemptToDelete.Get()
		gc.attemptToDelete.Done(n)
		gc.attemptToDelete.Forget(n)
		out = append(out, gc.graph.view(n).identity.UID)
	}
	return out
}

func sorted(u []types.UID) []types.UID {
	out := slices.Clone(u)
	slices.Sort(out)
	return out
}
