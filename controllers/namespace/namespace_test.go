package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func resource(name string, verbs ...string) metav1.APIResource {
	return metav1.APIResource{Name: name, Namespaced: true, Verbs: verbs}
}

func apiList(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: rs}
}

// standardDiscovery serves pods and configmaps (all verbs), bindings
// (create only), a status subresource, and a custom resource.
func standardDiscovery() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		apiList("v1", resource("pods", allVerbs...), resource("configmaps", allVerbs...),
			resource("bindings", "create"), resource("pods/status", "get", "patch", "update")),
		apiList("example.com/v1", resource("widgets", allVerbs...)),
	}
}

var (
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	widgetsGVR    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// item is an object in the fake namespace content.
type item struct {
	name       string
	finalizers []string
	// graceful objects are only marked deleted by a delete.
	graceful bool
	deleting bool
}

// content fakes the metadata API of the namespace "apps": deletes remove
// objects unless they have finalizers or are graceful.
type content struct {
	mu    sync.Mutex
	items map[schema.GroupVersionResource][]*item
	// fail maps "verb resource" to the error it returns.
	fail map[string]error
}

func (c *content) react(a clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gvr := a.GetResource()
	if err := c.fail[a.GetVerb()+" "+gvr.Resource]; err != nil {
		return true, nil, err
	}
	remove := func(match func(*item) bool) {
		kept := c.items[gvr][:0]
		for _, it := range c.items[gvr] {
			if match(it) && len(it.finalizers) == 0 && !it.graceful {
				continue
			}
			if match(it) {
				it.deleting = true
			}
			kept = append(kept, it)
		}
		c.items[gvr] = kept
	}
	switch a.GetVerb() {
	case "list":
		list := &metav1.List{}
		for _, it := range c.items[gvr] {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: it.name, Finalizers: it.finalizers}}
			if it.deleting {
				obj.DeletionTimestamp = &metav1.Time{Time: t0}
			}
			list.Items = append(list.Items, runtime.RawExtension{Object: obj})
		}
		return true, list, nil
	case "delete-collection":
		remove(func(*item) bool { return true })
		return true, nil, nil
	case "delete":
		name := a.(clienttesting.DeleteAction).GetName()
		remove(func(it *item) bool { return it.name == name })
		return true, nil, nil
	}
	return true, nil, fmt.Errorf("unexpected %s %s", a.GetVerb(), gvr)
}

func (c *content) left(gvr schema.GroupVersionResource) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, it := range c.items[gvr] {
		out = append(out, it.name)
	}
	return out
}

type nsOption func(*corev1.Namespace)

func terminatingNamespace(opts ...nsOption) *corev1.Namespace {
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "apps", UID: "uid-1", ResourceVersion: "10",
			DeletionTimestamp: &metav1.Time{Time: t0.Add(-time.Second)}},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	for _, o := range opts {
		o(ns)
	}
	return ns
}

func specFinalizers(f ...corev1.FinalizerName) nsOption {
	return func(ns *corev1.Namespace) { ns.Spec.Finalizers = f }
}

func metaFinalizers(f ...string) nsOption {
	return func(ns *corev1.Namespace) { ns.Finalizers = f }
}

func phaseTerminating(ns *corev1.Namespace) { ns.Status.Phase = corev1.NamespaceTerminating }

func notDeleted(ns *corev1.Namespace) {
	ns.DeletionTimestamp = nil
}

func healthyConditions(ns *corev1.Namespace) {
	for _, t := range deletionConditions {
		ns.Status.Conditions = append(ns.Status.Conditions, corev1.NamespaceCondition{
			Type: t, Status: corev1.ConditionFalse, Reason: healthy[t].reason, Message: healthy[t].message,
			LastTransitionTime: metav1.Time{Time: t0.Add(-time.Hour)},
		})
	}
}

func runningPod(name string, grace int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(grace)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// Typed client actions the happy path makes, in order.
const (
	getNS        = "get namespaces"
	updateStatus = "update namespaces/status"
	listPods     = "list pods"
	finalize     = "create namespaces/finalize" // the fake's spelling of PUT .../finalize
	deleteNS     = "delete namespaces"
)

func summarize(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		if a.GetVerb() == "watch" || (a.GetVerb() == "list" && a.GetResource().Resource == "namespaces") {
			continue // the informer's own traffic
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		if g := a.GetResource().Group; g != "" {
			s += "." + g
		}
		out = append(out, s)
	}
	return out
}

// lastConditions returns the conditions of the last status update.
func lastConditions(actions []clienttesting.Action) map[corev1.NamespaceConditionType]corev1.NamespaceCondition {
	var conds map[corev1.NamespaceConditionType]corev1.NamespaceCondition
	for _, a := range actions {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok || a.GetSubresource() != "status" {
			continue
		}
		conds = map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
		for _, c := range u.GetObject().(*corev1.Namespace).Status.Conditions {
			conds[c.Type] = c
		}
	}
	return conds
}

func TestSync(t *testing.T) {
	allHealthy := map[corev1.NamespaceConditionType]string{}
	for _, c := range deletionConditions {
		allHealthy[c] = healthy[c].message
	}
	with := func(m map[corev1.NamespaceConditionType]string, t corev1.NamespaceConditionType, msg string) map[corev1.NamespaceConditionType]string {
		out := map[corev1.NamespaceConditionType]string{}
		for k, v := range m {
			out[k] = v
		}
		out[t] = msg
		return out
	}
	groupFailed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.example.com", Version: "v1"}: errors.New("service unavailable"),
	}}

	tests := []struct {
		name         string
		ns           *corev1.Namespace
		notOnServer  bool
		pods         []*corev1.Pod
		items        map[schema.GroupVersionResource][]*item
		fail         map[string]error
		discovery    []*metav1.APIResourceList
		discoveryErr error

		wantActions  []string
		wantMetadata []string
		// wantErr: "" none, "remaining N" a ResourcesRemainingError, else a
		// substring of the error.
		wantErr string
		// wantConditions maps each condition to its message; a message of
		// a healthy condition means status False, any other True.
		wantConditions map[corev1.NamespaceConditionType]string
		wantLeft       map[schema.GroupVersionResource][]string
		wantFinalizers []corev1.FinalizerName // sent to finalize
	}{
		{
			name: "namespace not being deleted is left alone",
			ns:   terminatingNamespace(notDeleted),
		},
		{
			name:           "empty namespace is marked terminating, finalized and deleted",
			ns:             terminatingNamespace(),
			wantActions:    []string{getNS, updateStatus, listPods, updateStatus, finalize, deleteNS},
			wantMetadata:   []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantConditions: allHealthy,
			wantFinalizers: []corev1.FinalizerName{},
		},
		{
			name: "content of every resource is deleted, then the namespace",
			ns:   terminatingNamespace(),
			items: map[schema.GroupVersionResource][]*item{
				configMapsGVR: {{name: "a"}, {name: "b"}},
				widgetsGVR:    {{name: "w"}},
				podsGVR:       {{name: "done"}},
			},
			wantActions:    []string{getNS, updateStatus, listPods, updateStatus, finalize, deleteNS},
			wantMetadata:   []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantConditions: allHealthy,
			wantLeft:       map[schema.GroupVersionResource][]string{configMapsGVR: nil, widgetsGVR: nil, podsGVR: nil},
			wantFinalizers: []corev1.FinalizerName{},
		},
		{
			name:         "terminating pods hold back the rest",
			ns:           terminatingNamespace(),
			pods:         []*corev1.Pod{runningPod("web", 30), {ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "old"}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](600)}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}},
			items:        map[schema.GroupVersionResource][]*item{podsGVR: {{name: "web", graceful: true}}, configMapsGVR: {{name: "a"}}},
			wantActions:  []string{getNS, updateStatus, listPods, updateStatus},
			wantMetadata: []string{"delete-collection pods", "list pods"},
			wantErr:      "remaining 30",
			wantConditions: with(allHealthy, corev1.NamespaceContentRemaining,
				"Some resources are remaining: pods. has 1 resource instances"),
			wantLeft: map[schema.GroupVersionResource][]string{podsGVR: {"web"}, configMapsGVR: {"a"}},
		},
		{
			name:         "pods left past their grace period are an error",
			ns:           terminatingNamespace(),
			pods:         []*corev1.Pod{runningPod("web", 0)},
			items:        map[schema.GroupVersionResource][]*item{podsGVR: {{name: "web", graceful: true}}},
			wantActions:  []string{getNS, updateStatus, listPods, updateStatus},
			wantMetadata: []string{"delete-collection pods", "list pods"},
			wantErr:      "unexpected items still remain in namespace: apps",
			wantConditions: with(with(allHealthy, corev1.NamespaceContentRemaining,
				"Some resources are remaining: pods. has 1 resource instances"), corev1.NamespaceDeletionContentFailure,
				"Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: apps for gvr: /v1, Resource=pods"),
		},
		{
			name:         "objects held by finalizers are waited for",
			ns:           terminatingNamespace(phaseTerminating),
			items:        map[schema.GroupVersionResource][]*item{widgetsGVR: {{name: "w", finalizers: []string{"example.com/hold"}}, {name: "v"}}},
			wantActions:  []string{getNS, listPods, updateStatus},
			wantMetadata: []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantErr:      "remaining 15",
			wantConditions: with(with(allHealthy, corev1.NamespaceContentRemaining,
				"Some resources are remaining: widgets.example.com has 1 resource instances"), corev1.NamespaceFinalizersRemaining,
				"Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"),
			wantLeft: map[schema.GroupVersionResource][]string{widgetsGVR: {"w"}},
		},
		{
			name:           "resources without deletecollection are deleted one by one",
			ns:             terminatingNamespace(phaseTerminating),
			discovery:      []*metav1.APIResourceList{apiList("v1", resource("secrets", "delete", "get", "list"))},
			items:          map[schema.GroupVersionResource][]*item{secretsGVR: {{name: "s1"}, {name: "s2"}}},
			wantActions:    []string{getNS, updateStatus, finalize, deleteNS},
			wantMetadata:   []string{"list secrets", "delete secrets", "delete secrets", "list secrets"},
			wantConditions: allHealthy,
			wantLeft:       map[schema.GroupVersionResource][]string{secretsGVR: nil},
			wantFinalizers: []corev1.FinalizerName{},
		},
		{
			name:         "partial discovery deletes what it can but does not finalize",
			ns:           terminatingNamespace(phaseTerminating),
			discoveryErr: groupFailed,
			items:        map[schema.GroupVersionResource][]*item{configMapsGVR: {{name: "a"}}},
			wantActions:  []string{getNS, listPods, updateStatus},
			wantMetadata: []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantErr:      "discover resources",
			wantConditions: with(allHealthy, corev1.NamespaceDeletionDiscoveryFailure,
				"Discovery failed for some groups, 1 failing: "+groupFailed.Error()),
			wantLeft: map[schema.GroupVersionResource][]string{configMapsGVR: nil},
		},
		{
			name: "unparsable group version is reported",
			ns:   terminatingNamespace(phaseTerminating),
			discovery: []*metav1.APIResourceList{
				apiList("v1", resource("configmaps", allVerbs...)),
				apiList("a/b/c", resource("things", allVerbs...)),
			},
			wantActions:  []string{getNS, updateStatus},
			wantMetadata: []string{"delete-collection configmaps", "list configmaps"},
			wantErr:      "group versions could not be parsed",
			wantConditions: with(allHealthy, corev1.NamespaceDeletionGVParsingFailure,
				"unexpected GroupVersion string: a/b/c"),
		},
		{
			name:         "a failing resource is reported, the others are still deleted",
			ns:           terminatingNamespace(phaseTerminating),
			items:        map[schema.GroupVersionResource][]*item{configMapsGVR: {{name: "a"}}, widgetsGVR: {{name: "w"}}},
			fail:         map[string]error{"delete-collection configmaps": apierrors.NewInternalError(errors.New("etcd down"))},
			wantActions:  []string{getNS, listPods, updateStatus},
			wantMetadata: []string{"delete-collection pods", "list pods", "delete-collection configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantErr:      "etcd down",
			wantConditions: with(allHealthy, corev1.NamespaceDeletionContentFailure,
				"Failed to delete all resource types, 1 remaining: delete /v1, Resource=configmaps in apps: Internal error occurred: etcd down"),
			wantLeft: map[schema.GroupVersionResource][]string{configMapsGVR: {"a"}, widgetsGVR: nil},
		},
		{
			name:           "unchanged conditions are not written again",
			ns:             terminatingNamespace(phaseTerminating, healthyConditions),
			wantActions:    []string{getNS, listPods, finalize, deleteNS},
			wantMetadata:   []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantFinalizers: []corev1.FinalizerName{},
		},
		{
			name:        "finalized namespace is deleted again",
			ns:          terminatingNamespace(phaseTerminating, specFinalizers()),
			wantActions: []string{getNS, deleteNS},
		},
		{
			name:        "other spec finalizers are waited for",
			ns:          terminatingNamespace(phaseTerminating, specFinalizers("example.com/other")),
			wantActions: []string{getNS},
		},
		{
			name:           "finalize keeps other spec finalizers and does not delete",
			ns:             terminatingNamespace(phaseTerminating, healthyConditions, specFinalizers("example.com/other", corev1.FinalizerKubernetes)),
			wantActions:    []string{getNS, listPods, finalize},
			wantMetadata:   []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantFinalizers: []corev1.FinalizerName{"example.com/other"},
		},
		{
			name:           "metadata finalizers are left to the garbage collector",
			ns:             terminatingNamespace(phaseTerminating, healthyConditions, metaFinalizers(metav1.FinalizerOrphanDependents)),
			wantActions:    []string{getNS, listPods, finalize},
			wantMetadata:   []string{"delete-collection pods", "list pods", "delete-collection configmaps", "list configmaps", "delete-collection widgets.example.com", "list widgets.example.com"},
			wantFinalizers: []corev1.FinalizerName{},
		},
		{
			name:        "namespace already gone from the server",
			ns:          terminatingNamespace(),
			notOnServer: true,
			wantActions: []string{getNS},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if !tt.notOnServer {
				objs = append(objs, tt.ns.DeepCopy())
			}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			client := fake.NewClientset(objs...)
			store := &content{items: map[schema.GroupVersionResource][]*item{}, fail: tt.fail}
			for gvr, items := range tt.items {
				store.items[gvr] = items
			}
			meta := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			meta.PrependReactor("*", "*", store.react)
			lists := tt.discovery
			if lists == nil {
				lists = standardDiscovery()
			}
			discover := func(context.Context) ([]*metav1.APIResourceList, error) { return lists, tt.discoveryErr }

			factory := informers.NewSharedInformerFactory(client, 0)
			clk := testingclock.NewFakeClock(t0)
			c, err := New(client, meta, discover, factory.Core().V1().Namespaces(), 0, clk)
			if err != nil {
				t.Fatal(err)
			}
			_ = factory.Core().V1().Namespaces().Informer().GetIndexer().Add(tt.ns)

			err = c.sync(context.Background(), "apps")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("sync: %v", err)
			case strings.HasPrefix(tt.wantErr, "remaining "):
				var est int64
				fmt.Sscanf(tt.wantErr, "remaining %d", &est)
				r, ok := errors.AsType[*ResourcesRemainingError](err)
				if !ok || r.Estimate != est {
					t.Fatalf("sync error = %v, want content remaining for %ds", err, est)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("sync error = %v, want one containing %q", err, tt.wantErr)
				}
				if _, ok := errors.AsType[*ResourcesRemainingError](err); ok {
					t.Fatalf("sync error = %v, want a failure, not content remaining", err)
				}
			}

			actions := client.Actions()
			if got := summarize(actions); !slices.Equal(got, tt.wantActions) {
				t.Errorf("client actions:\n got %q\nwant %q", got, tt.wantActions)
			}
			if got := summarize(meta.Actions()); !slices.Equal(got, tt.wantMetadata) {
				t.Errorf("metadata actions:\n got %q\nwant %q", got, tt.wantMetadata)
			}
			for gvr, want := range tt.wantLeft {
				if got := store.left(gvr); !slices.Equal(got, want) {
					t.Errorf("%s left: %q, want %q", gvr.Resource, got, want)
				}
			}

			for _, a := range actions {
				switch {
				case a.GetSubresource() == "finalize":
					got := a.(clienttesting.CreateAction).GetObject().(*corev1.Namespace).Spec.Finalizers
					if !slices.Equal(got, tt.wantFinalizers) {
						t.Errorf("finalize sent spec.finalizers %q, want %q", got, tt.wantFinalizers)
					}
				case a.GetVerb() == "delete" && a.GetResource().Resource == "namespaces":
					pre := a.(clienttesting.DeleteActionImpl).GetDeleteOptions().Preconditions
					if pre == nil || pre.UID == nil || *pre.UID != types.UID("uid-1") {
						t.Errorf("delete without the namespace's UID precondition: %+v", pre)
					}
				case a.GetSubresource() == "status":
					ns := a.(clienttesting.UpdateAction).GetObject().(*corev1.Namespace)
					if ns.Status.Phase != corev1.NamespaceTerminating {
						t.Errorf("status update with phase %q", ns.Status.Phase)
					}
				}
			}

			if tt.wantConditions != nil {
				conds := lastConditions(actions)
				if len(conds) != len(deletionConditions) {
					t.Fatalf("conditions written: %v", conds)
				}
				for typ, msg := range tt.wantConditions {
					c := conds[typ]
					wantStatus := corev1.ConditionTrue
					if msg == healthy[typ].message {
						wantStatus = corev1.ConditionFalse
					}
					if c.Status != wantStatus || c.Message != msg {
						t.Errorf("condition %s = %s %q, want %s %q", typ, c.Status, c.Message, wantStatus, msg)
					}
					if c.Status == corev1.ConditionTrue && c.Reason == healthy[typ].reason {
						t.Errorf("condition %s is True with the healthy reason %q", typ, c.Reason)
					}
					if !c.LastTransitionTime.Time.Equal(t0) {
						t.Errorf("condition %s transition time %v, want %v", typ, c.LastTransitionTime, t0)
					}
				}
			}
		})
	}
}

func TestConditionTransitionTime(t *testing.T) {
	old := metav1.Time{Time: t0.Add(-time.Hour)}
	status := corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods. has 2 resource instances", LastTransitionTime: old},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "x", LastTransitionTime: old},
	}}
	s := &conditionSet{}
	s.contentTotals(map[schema.GroupVersionResource]remaining{podsGVR: {count: 1}})
	if !s.apply(&status, t0) {
		t.Fatal("apply reported no change")
	}
	got := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range status.Conditions {
		got[c.Type] = c
	}
	// Same status, new message: the transition time stays.
	if c := got[corev1.NamespaceContentRemaining]; !c.LastTransitionTime.Equal(&old) || c.Message != "Some resources are remaining: pods. has 1 resource instances" {
		t.Errorf("content remaining = %+v", c)
	}
	// True to False: the transition time moves.
	if c := got[corev1.NamespaceFinalizersRemaining]; c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("finalizers remaining = %+v", c)
	}
	if len(status.Conditions) != len(deletionConditions) {
		t.Errorf("%d conditions, want %d", len(status.Conditions), len(deletionConditions))
	}
	if s.apply(&status, t0.Add(time.Minute)) {
		t.Error("second apply of the same set reported a change")
	}
}

// recordingQueue is a delaying queue that records AddAfter instead of
// waiting.
type recordingQueue struct {
	workqueue.TypedInterface[string]
	mu    sync.Mutex
	after []string
}

func (q *recordingQueue) AddAfter(item string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.after = append(q.after, fmt.Sprintf("%s after %s", item, d))
}

func TestQueueing(t *testing.T) {
	newController := func(t *testing.T, ns *corev1.Namespace, lists []*metav1.APIResourceList, items map[schema.GroupVersionResource][]*item, pods ...runtime.Object) (*Controller, *recordingQueue) {
		client := fake.NewClientset(append([]runtime.Object{ns.DeepCopy()}, pods...)...)
		if items == nil {
			items = map[schema.GroupVersionResource][]*item{}
		}
		store := &content{items: items}
		meta := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
		meta.PrependReactor("*", "*", store.react)
		factory := informers.NewSharedInformerFactory(client, 0)
		c, err := New(client, meta, func(context.Context) ([]*metav1.APIResourceList, error) { return lists, nil },
			factory.Core().V1().Namespaces(), 0, testingclock.NewFakeClock(t0))
		if err != nil {
			t.Fatal(err)
		}
		_ = factory.Core().V1().Namespaces().Informer().GetIndexer().Add(ns)
		rec := &recordingQueue{TypedInterface: workqueue.NewTyped[string]()}
		c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{DelayingQueue: rec})
		return c, rec
	}

	t.Run("deleted namespaces are queued after the grace delay", func(t *testing.T) {
		c, rec := newController(t, terminatingNamespace(), nil, nil)
		c.enqueue(terminatingNamespace())
		c.enqueue(terminatingNamespace(notDeleted))
		if want := []string{"apps after 5s"}; !slices.Equal(rec.after, want) {
			t.Errorf("queued %q, want %q", rec.after, want)
		}
	})
	t.Run("remaining content is retried after half its estimate", func(t *testing.T) {
		c, rec := newController(t, terminatingNamespace(), standardDiscovery(),
			map[schema.GroupVersionResource][]*item{podsGVR: {{name: "web", graceful: true}}}, runningPod("web", 30))
		c.queue.Add("apps")
		if !c.processNext(context.Background()) {
			t.Fatal("queue shut down")
		}
		if want := []string{"apps after 16s"}; !slices.Equal(rec.after, want) {
			t.Errorf("queued %q, want %q", rec.after, want)
		}
	})
	t.Run("failures are retried with backoff", func(t *testing.T) {
		c, rec := newController(t, terminatingNamespace(), []*metav1.APIResourceList{apiList("a/b/c")}, nil)
		for range 2 {
			c.queue.Add("apps")
			c.processNext(context.Background())
		}
		if want := []string{"apps after 5ms", "apps after 10ms"}; !slices.Equal(rec.after, want) {
			t.Errorf("queued %q, want %q", rec.after, want)
		}
	})
	t.Run("success forgets the backoff", func(t *testing.T) {
		c, rec := newController(t, terminatingNamespace(), standardDiscovery(), nil)
		c.queue.AddRateLimited("apps") // one earlier failure
		c.queue.Add("apps")
		c.processNext(context.Background())
		if n := c.queue.NumRequeues("apps"); n != 0 {
			t.Errorf("requeues after success = %d, want 0", n)
		}
		if want := []string{"apps after 5ms"}; !slices.Equal(rec.after, want) {
			t.Errorf("queued %q, want %q", rec.after, want)
		}
	})
}

// TestRun deletes a namespace end to end through the informer and the
// workers.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(terminatingNamespace())
	deleted := make(chan struct{}, 1)
	client.PrependReactor("delete", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		deleted <- struct{}{}
		return false, nil, nil
	})
	store := &content{items: map[schema.GroupVersionResource][]*item{configMapsGVR: {{name: "a"}}}}
	meta := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	meta.PrependReactor("*", "*", store.react)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, meta, func(context.Context) ([]*metav1.APIResourceList, error) { return standardDiscovery(), nil },
		factory.Core().V1().Namespaces(), 0, testingclock.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	c.gracePeriod = 0
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()
	select {
	case <-deleted:
	case <-time.After(10 * time.Second):
		t.Fatal("namespace not deleted")
	}
	if left := store.left(configMapsGVR); len(left) != 0 {
		t.Errorf("configmaps left: %q", left)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v on cancel, want nil", err)
	}
	factory.Shutdown()
}

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.Name != "namespace-controller" || !slices.Equal(d.Aliases, []string{"namespace"}) || d.ServiceAccount != "namespace-controller" || d.DisabledByDefault {
		t.Errorf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	builder := &managertesting.ClientBuilder{Clientset: client}
	var runs int
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: informers.NewSharedInformerFactory(client, 0),
		Clock:           testingclock.NewFakeClock(t0),
		Go:              func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if got := builder.Names(); !slices.Equal(got, []string{"namespace-controller"}) {
		t.Errorf("credentials asked for %q, want [namespace-controller]", got)
	}
	if runs != 1 {
		t.Errorf("Go called %d times, want 1", runs)
	}
}
