package daemonset

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
	cutesting "github.com/k1s/k1s/controllers/controllerutil/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newDS(name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
}

func newNode(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
}

// daemonPod is a pod of ds bound to node, of revision hash, Running and
// (if ready) Ready since t0, created age seconds after t0.
func daemonPod(ds *appsv1.DaemonSet, name, node, hash string, ready bool, age int) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ds.Namespace, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second)),
			Labels:            map[string]string{"app": ds.Name, appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: ds.Spec.Template.Spec.Containers},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0)},
		}},
	}
}

type fixture struct {
	t          *testing.T
	client     *fake.Clientset
	factory    informers.SharedInformerFactory
	c          *Controller
	podControl *cutesting.FakePodControl
	recorder   *record.FakeRecorder
	clock      *testingclock.FakeClock
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	clk := testingclock.NewFakeClock(t0.Add(time.Hour))
	c, err := New(client, factory, rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	pc := &cutesting.FakePodControl{}
	c.podControl = pc
	f := &fixture{t: t, client: client, factory: factory, c: c, podControl: pc, recorder: rec, clock: clk}
	for _, o := range objs {
		f.addToCache(o)
	}
	client.ClearActions()
	return f
}

func (f *fixture) addToCache(o runtime.Object) {
	f.t.Helper()
	var err error
	switch o := o.(type) {
	case *appsv1.DaemonSet:
		err = f.factory.Apps().V1().DaemonSets().Informer().GetIndexer().Add(o)
	case *appsv1.ControllerRevision:
		err = f.factory.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(o)
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
	case *corev1.Node:
		err = f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
	default:
		f.t.Fatalf("unexpected object %T", o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync(ds *appsv1.DaemonSet) {
	f.t.Helper()
	if err := f.c.sync(context.Background(), ds.Namespace+"/"+ds.Name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// createdNodes are the nodes of the pods created, in order.
func (f *fixture) createdNodes() []string {
	f.t.Helper()
	var out []string
	for _, tmpl := range f.podControl.Templates {
		n, err := targetNode(&corev1.Pod{Spec: tmpl.Spec})
		if err != nil {
			f.t.Fatalf("created pod without target node: %v", err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) deleted() []string {
	out := slices.Clone(f.podControl.DeletePodNames)
	slices.Sort(out)
	return out
}

func (f *fixture) lastStatus() *appsv1.DaemonSetStatus {
	var st *appsv1.DaemonSetStatus
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" && a.GetResource().Resource == "daemonsets" {
			st = &u.GetObject().(*appsv1.DaemonSet).Status
		}
	}
	return st
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func currentHash(ds *appsv1.DaemonSet) string {
	return controllerutil.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

func TestSyncCreatesOnePodPerEligibleNode(t *testing.T) {
	ds := newDS("agent")
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
	worker := func(name string, taints ...corev1.Taint) *corev1.Node {
		n := newNode(name, taints...)
		n.Labels = map[string]string{"role": "worker"}
		return n
	}
	objs := []runtime.Object{
		ds,
		worker("n1"),
		worker("n2", corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}),
		worker("n3", corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}),
		newNode("n4"), // not a worker
	}
	f := newFixture(t, objs...)
	f.sync(ds)

	if got, want := f.createdNodes(), []string{"n1", "n2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pods created for nodes %v, want %v", got, want)
	}
	hash := currentHash(ds)
	for i, tmpl := range f.podControl.Templates {
		if tmpl.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || tmpl.Labels["app"] != "agent" {
			t.Errorf("pod %d labels = %v, want app=agent and controller-revision-hash=%s", i, tmpl.Labels, hash)
		}
		if tmpl.Spec.NodeName != "" {
			t.Errorf("pod %d is bound to %q by the controller; the scheduler should bind it", i, tmpl.Spec.NodeName)
		}
		if len(tmpl.Spec.Tolerations) != 6 {
			t.Errorf("pod %d tolerations = %v, want the daemon tolerations", i, tmpl.Spec.Tolerations)
		}
		if tmpl.Spec.NodeSelector["role"] != "worker" {
			t.Errorf("pod %d lost the template's nodeSelector", i)
		}
		ref := f.podControl.ControllerRefs[i]
		if ref.UID != ds.UID || ref.Kind != "DaemonSet" || !*ref.Controller {
			t.Errorf("pod %d controller ref = %+v", i, ref)
		}
	}
	if add, del, _ := f.c.expectations.GetExpectations("default/agent"); add != 2 || del != 0 {
		t.Errorf("expectations = %d creations, %d deletions; want 2, 0", add, del)
	}
	// A revision of the template was recorded.
	revs, _ := f.client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 1 || revs.Items[0].Name != "agent-"+hash || revs.Items[0].Revision != 1 ||
		revs.Items[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash {
		t.Fatalf("revisions = %+v, want agent-%s at revision 1", revs.Items, hash)
	}
	if ok, err := Match(ds, &revs.Items[0]); !ok || err != nil {
		t.Errorf("revision data does not match the template: %v, %s", err, revs.Items[0].Data.Raw)
	}
	if !strings.Contains(string(revs.Items[0].Data.Raw), `"$patch":"replace"`) {
		t.Errorf("revision data %s is not a template replacement patch", revs.Items[0].Data.Raw)
	}
	st := f.lastStatus()
	if st == nil {
		t.Fatal("no status written")
	}
	want := appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberUnavailable: 2, ObservedGeneration: 1}
	if !reflect.DeepEqual(*st, want) {
		t.Errorf("status = %+v, want %+v", *st, want)
	}

	// Until the creations are observed, a second sync creates nothing.
	f.podControl.Clear()
	f.sync(ds)
	if len(f.podControl.Templates) != 0 {
		t.Errorf("second sync created %d more pods before the first were observed", len(f.podControl.Templates))
	}
}

func TestSyncDeletesPods(t *testing.T) {
	ds := newDS("agent")
	hash := currentHash(ds)
	failed := daemonPod(ds, "failed", "n3", hash, false, 0)
	failed.Status.Phase = corev1.PodFailed
	succeeded := daemonPod(ds, "done", "n5", hash, false, 0)
	succeeded.Status.Phase = corev1.PodSucceeded
	unbound := daemonPod(ds, "unbound", "", hash, false, 0)
	unbound.Spec.Affinity = bindToNode(nil, "gone")
	terminating := daemonPod(ds, "terminating", "n4", hash, true, 0)
	terminating.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	objs := []runtime.Object{
		ds,
		newNode("n1"),
		newNode("n2", corev1.Taint{Key: "evict", Effect: corev1.TaintEffectNoExecute}),
		newNode("n3"),
		newNode("n4"),
		newNode("n5"),
		newNode("n6", corev1.Taint{Key: "nosched", Effect: corev1.TaintEffectNoSchedule}),
		daemonPod(ds, "n1-old", "n1", hash, true, 0),
		daemonPod(ds, "n1-young", "n1", hash, true, 10),
		daemonPod(ds, "n2-pod", "n2", hash, true, 0),
		daemonPod(ds, "n6-pod", "n6", hash, true, 0),
		failed, succeeded, unbound, terminating,
	}
	f := newFixture(t, objs...)
	f.sync(ds)
	// n1: the younger duplicate; n2: evicted by NoExecute; n3: failed;
	// n5: succeeded; unbound: its node is gone. n6's pod stays (NoSchedule
	// only); n4's terminating pod is left to finish.
	if got, want := f.deleted(), []string{"done", "failed", "n1-young", "n2-pod", "unbound"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	if got := f.createdNodes(); len(got) != 0 {
		t.Errorf("created pods for %v; replacements wait for the deletions", got)
	}
	ev := strings.Join(f.events(), "\n")
	for _, want := range []string{
		"Warning FailedDaemonPod Found failed daemon pod default/failed on node n3, will try to kill it",
		"Normal SucceededDaemonPod Found succeeded daemon pod default/done on node n5, will try to delete it",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("events %q lack %q", ev, want)
		}
	}

	// A failed pod found again soon is left alone during the back-off.
	f2 := newFixture(t, ds, newNode("n3"), failed)
	f2.c.failedBackoff.Next(fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, "n3"), f2.clock.Now())
	f2.sync(ds)
	if len(f2.podControl.DeletePodNames) != 0 {
		t.Errorf("deleted %v during the back-off", f2.podControl.DeletePodNames)
	}
}

func TestSyncStatus(t *testing.T) {
	ds := newDS("agent")
	ds.Spec.MinReadySeconds = 7200 // longer than the pods have been ready
	hash := currentHash(ds)
	notReady := daemonPod(ds, "p2", "n2", hash, false, 0)
	objs := []runtime.Object{
		ds,
		newNode("n1"), newNode("n2"), newNode("n3"), newNode("n4"),
		newNode("n5", corev1.Taint{Key: "nosched", Effect: corev1.TaintEffectNoSchedule}),
		daemonPod(ds, "p1", "n1", hash, true, 0),
		notReady,
		daemonPod(ds, "p3", "n3", "oldhash", true, 0),
		daemonPod(ds, "p5", "n5", hash, true, 0),
	}
	f := newFixture(t, objs...)
	f.c.podControl.(*cutesting.FakePodControl).Clear()
	f.sync(ds)
	st := f.lastStatus()
	if st == nil {
		t.Fatal("no status written")
	}
	want := appsv1.DaemonSetStatus{
		DesiredNumberScheduled: 4, // n1-n4
		CurrentNumberScheduled: 3, // n1-n3
		NumberMisscheduled:     1, // n5
		NumberReady:            2, // p1, p3
		NumberAvailable:        0, // minReadySeconds not reached
		NumberUnavailable:      4,
		UpdatedNumberScheduled: 2, // p1, p2
		ObservedGeneration:     1,
	}
	if !reflect.DeepEqual(*st, want) {
		t.Errorf("status = %+v\nwant %+v", *st, want)
	}
	if got := f.createdNodes(); !reflect.DeepEqual(got, []string{"n4"}) {
		t.Errorf("created for %v, want n4", got)
	}
}

func TestSyncEmptySelector(t *testing.T) {
	ds := newDS("agent")
	ds.Spec.Selector = &metav1.LabelSelector{}
	f := newFixture(t, ds, newNode("n1"))
	f.sync(ds)
	if len(f.podControl.Templates) != 0 || len(f.client.Actions()) != 0 {
		t.Errorf("acted on a DaemonSet selecting everything: %d creations, actions %v", len(f.podControl.Templates), f.client.Actions())
	}
	if ev := f.events(); len(ev) != 1 || !strings.Contains(ev[0], "Warning SelectingAll This daemon set is selecting all pods. A non-empty selector is required.") {
		t.Errorf("events = %v", ev)
	}
}

func TestRollingUpdate(t *testing.T) {
	type podSpec struct {
		node  string
		isNew bool
		ready bool
	}
	tests := []struct {
		name        string
		surge       int32
		unavailable intstr.IntOrString
		onDelete    bool
		pods        []podSpec
		wantDeleted []string
		wantCreated []string
	}{
		{
			name:        "maxUnavailable 1 deletes one old pod",
			unavailable: intstr.FromInt32(1),
			pods:        []podSpec{{"n1", false, true}, {"n2", false, true}, {"n3", false, true}},
			wantDeleted: []string{"n1-old"},
		},
		{
			name:        "an unavailable new pod uses up the budget",
			unavailable: intstr.FromInt32(1),
			pods:        []podSpec{{"n1", true, false}, {"n2", false, true}, {"n3", false, true}},
		},
		{
			name:        "an available new pod frees the budget",
			unavailable: intstr.FromInt32(1),
			pods:        []podSpec{{"n1", true, true}, {"n2", false, true}, {"n3", false, true}},
			wantDeleted: []string{"n2-old"},
		},
		{
			name:        "unavailable old pods are replaced beyond the budget",
			unavailable: intstr.FromInt32(1),
			pods:        []podSpec{{"n1", true, false}, {"n2", false, true}, {"n3", false, false}},
			wantDeleted: []string{"n3-old"},
		},
		{
			name:        "maxUnavailable 50% of 3 rounds up to 2",
			unavailable: intstr.FromString("50%"),
			pods:        []podSpec{{"n1", false, true}, {"n2", false, true}, {"n3", false, true}},
			wantDeleted: []string{"n1-old", "n2-old"},
		},
		{
			name:        "all updated: nothing to do",
			unavailable: intstr.FromInt32(1),
			pods:        []podSpec{{"n1", true, true}, {"n2", true, true}, {"n3", true, true}},
		},
		{
			name:        "OnDelete leaves old pods",
			onDelete:    true,
			pods:        []podSpec{{"n1", false, true}, {"n2", false, true}, {"n3", false, true}},
			wantDeleted: nil,
		},
		{
			name:        "maxSurge 1 starts one new pod beside an old one",
			surge:       1,
			unavailable: intstr.FromInt32(0),
			pods:        []podSpec{{"n1", false, true}, {"n2", false, true}, {"n3", false, true}},
			wantCreated: []string{"n1"},
		},
		{
			name:        "surge waits while the new pod is unavailable",
			surge:       1,
			unavailable: intstr.FromInt32(0),
			pods:        []podSpec{{"n1", false, true}, {"n1", true, false}, {"n2", false, true}, {"n3", false, true}},
		},
		{
			// manage removes the replaced pod; the next node surges on the
			// next sync, once that deletion has been observed.
			name:        "an available surge pod replaces the old one",
			surge:       1,
			unavailable: intstr.FromInt32(0),
			pods:        []podSpec{{"n1", false, true}, {"n1", true, true}, {"n2", false, true}, {"n3", false, true}},
			wantDeleted: []string{"n1-old"},
		},
		{
			name:        "the next node surges once the old pod is gone",
			surge:       1,
			unavailable: intstr.FromInt32(0),
			pods:        []podSpec{{"n1", true, true}, {"n2", false, true}, {"n3", false, true}},
			wantCreated: []string{"n2"},
		},
		{
			name:        "surge replaces an unavailable old pod at once",
			surge:       1,
			unavailable: intstr.FromInt32(0),
			pods:        []podSpec{{"n1", false, true}, {"n1", true, false}, {"n2", false, true}, {"n3", false, false}},
			wantCreated: []string{"n3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS("agent")
			if tt.onDelete {
				ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
			} else {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(tt.surge))
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(tt.unavailable)
			}
			hash := currentHash(ds)
			objs := []runtime.Object{ds, newNode("n1"), newNode("n2"), newNode("n3")}
			for i, p := range tt.pods {
				h, suffix := "oldhash", "old"
				if p.isNew {
					h, suffix = hash, "new"
				}
				objs = append(objs, daemonPod(ds, p.node+"-"+suffix, p.node, h, p.ready, i))
			}
			f := newFixture(t, objs...)
			f.sync(ds)
			if got := f.deleted(); !reflect.DeepEqual(got, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tt.wantDeleted)
			}
			if got := f.createdNodes(); !reflect.DeepEqual(got, tt.wantCreated) {
				t.Errorf("created for %v, want %v", got, tt.wantCreated)
			}
		})
	}
}

func revisionOf(t *testing.T, ds *appsv1.DaemonSet, revision int64) *appsv1.ControllerRevision {
	t.Helper()
	patch, err := templatePatch(ds)
	if err != nil {
		t.Fatal(err)
	}
	hash := currentHash(ds)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ds.Namespace, Name: ds.Name + "-" + hash, UID: types.UID("rev-" + hash),
			Labels:          map[string]string{"app": ds.Name, appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}
}

func TestHistory(t *testing.T) {
	ds := newDS("agent")
	var objs []runtime.Object
	var olds []*appsv1.ControllerRevision
	// Revisions 1-4 of older images; a pod still runs revision 2.
	for i := 1; i <= 4; i++ {
		old := newDS("agent")
		old.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("img:old%d", i)
		r := revisionOf(t, old, int64(i))
		olds = append(olds, r)
		objs = append(objs, r)
	}
	// The current template was revision 3 once before (a rollback).
	cur := revisionOf(t, ds, 3)
	objs = append(objs, cur)
	ds.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	objs = append(objs, ds, newNode("n1"), daemonPod(ds, "p", "n1", olds[1].Labels[appsv1.DefaultDaemonSetUniqueLabelKey], true, 0))
	f := newFixture(t, objs...)
	f.sync(ds)

	got, err := f.client.AppsV1().ControllerRevisions("default").Get(context.Background(), cur.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 5 {
		t.Errorf("current revision renumbered to %d, want 5 (after the old ones)", got.Revision)
	}
	list, _ := f.client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	// Limit 1 of 4 old: three go, oldest first, but revision 2 is spared
	// for its pod, so 1, 3 and 4 go.
	want := []string{cur.Name, olds[1].Name}
	slices.Sort(want)
	if !reflect.DeepEqual(names, want) {
		t.Errorf("revisions left %v, want %v", names, want)
	}
}

func TestHistoryCollision(t *testing.T) {
	ds := newDS("agent")
	hash := currentHash(ds)
	// Another template's revision holds the name this template hashes to.
	other := newDS("agent")
	other.Spec.Template.Spec.Containers[0].Image = "img:other"
	squatter := revisionOf(t, other, 1)
	squatter.Name = "agent-" + hash
	f := newFixture(t, ds, newNode("n1"), squatter)
	// Only the client has the squatter (the cache does not yet).
	if err := f.factory.Apps().V1().ControllerRevisions().Informer().GetIndexer().Delete(squatter); err != nil {
		t.Fatal(err)
	}
	err := f.c.sync(context.Background(), "default/agent")
	if err == nil {
		t.Fatal("sync succeeded despite the name collision")
	}
	fresh, _ := f.client.AppsV1().DaemonSets("default").Get(context.Background(), "agent", metav1.GetOptions{})
	if fresh.Status.CollisionCount == nil || *fresh.Status.CollisionCount != 1 {
		t.Fatalf("collisionCount = %v, want 1", fresh.Status.CollisionCount)
	}
	// With the raised count the next sync picks another name.
	f.addToCache(fresh)
	f.client.ClearActions()
	f.sync(fresh)
	want := "agent-" + controllerutil.ComputeHash(&ds.Spec.Template, ptr.To[int32](1))
	if _, err := f.client.AppsV1().ControllerRevisions("default").Get(context.Background(), want, metav1.GetOptions{}); err != nil {
		t.Errorf("revision %s not created: %v", want, err)
	}
}

func TestSyncNodeEnqueues(t *testing.T) {
	ds := newDS("agent")
	mis := newDS("mis")
	mis.Status.NumberMisscheduled = 1
	hash := currentHash(ds)
	tainted := newNode("n2", corev1.Taint{Key: "evict", Effect: corev1.TaintEffectNoExecute})
	tests := []struct {
		name string
		node *corev1.Node
		pods []*corev1.Pod
		want []string
	}{
		{name: "eligible node without pods", node: newNode("n1"), want: []string{"default/agent", "default/mis"}},
		{name: "eligible node with pods", node: newNode("n1"), pods: []*corev1.Pod{daemonPod(ds, "a", "n1", hash, true, 0)}, want: []string{"default/mis"}},
		{name: "evicting node with a pod", node: tainted, pods: []*corev1.Pod{daemonPod(ds, "a", "n2", hash, true, 0)}, want: []string{"default/agent"}},
		{name: "misscheduled count is rechecked", node: newNode("n1"), pods: []*corev1.Pod{daemonPod(ds, "a", "n1", hash, true, 0), daemonPod(mis, "m", "n1", hash, true, 0)}, want: []string{"default/mis"}},
		{name: "evicting node without pods", node: tainted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{ds, mis, tt.node}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			if err := f.c.syncNode(context.Background(), tt.node.Name); err != nil {
				t.Fatal(err)
			}
			var got []string
			for f.c.queue.Len() > 0 {
				k, _ := f.c.queue.Get()
				got = append(got, k)
				f.c.queue.Done(k)
			}
			slices.Sort(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRun runs the controller against a fake clientset through its
// informers: pods appear for nodes as they come and go away from a node
// tainted NoExecute.
func TestRun(t *testing.T) {
	client := fake.NewClientset()
	var seq int
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			seq++
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, seq)
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory, record.NewFakeRecorder(100), clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- c.Run(ctx, 1) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()

	bg := context.Background()
	for _, n := range []string{"n1", "n2"} {
		if _, err := client.CoreV1().Nodes().Create(bg, newNode(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.AppsV1().DaemonSets("default").Create(bg, newDS("agent"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodes := func(want ...string) {
		t.Helper()
		var got []string
		err := wait.PollUntilContextTimeout(bg, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			got = nil
			for _, p := range pods.Items {
				n, err := targetNode(&p)
				if err != nil {
					return false, err
				}
				got = append(got, n)
			}
			slices.Sort(got)
			return reflect.DeepEqual(got, want), nil
		})
		if err != nil {
			t.Fatalf("daemon pods on %v, want %v", got, want)
		}
	}
	waitNodes("n1", "n2")
	if _, err := client.CoreV1().Nodes().Create(bg, newNode("n3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodes("n1", "n2", "n3")
	n1 := newNode("n1", corev1.Taint{Key: "evict", Effect: corev1.TaintEffectNoExecute})
	if _, err := client.CoreV1().Nodes().Update(bg, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodes("n2", "n3")
}
