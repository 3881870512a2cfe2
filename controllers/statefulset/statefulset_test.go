package statefulset

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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/history"
	"github.com/k1s/k1s/internal/apis/apps"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newSet(name string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			ServiceName: name + "-svc",
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "c", Image: "img:1"}},
					Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "cfg"}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: retain, WhenScaled: retain,
			},
		},
	}
}

type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
	uids     int
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(1000)
	clk := testingclock.NewFakeClock(t0.Add(time.Hour))
	c, err := New(client, factory, rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, client: client, factory: factory, c: c, recorder: rec, clock: clk}
	// The apiserver gives every created object a UID and every pod the
	// phase Pending.
	client.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject()
		m, _ := obj.(metav1.Object)
		if m != nil && m.GetUID() == "" {
			f.uids++
			m.SetUID(types.UID(fmt.Sprintf("created-%d", f.uids)))
		}
		if pod, ok := obj.(*corev1.Pod); ok && pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		return false, nil, nil
	})
	f.resync()
	return f
}

// resync makes the informer caches what the client holds, as the watches
// would.
func (f *fixture) resync() {
	f.t.Helper()
	ctx := context.Background()
	pods, _ := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	claims, _ := f.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	revs, _ := f.client.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
	sets, _ := f.client.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	replace := func(idx interface {
		Replace([]any, string) error
	}, items []any) {
		if err := idx.Replace(items, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	var items []any
	for i := range pods.Items {
		items = append(items, &pods.Items[i])
	}
	replace(f.factory.Core().V1().Pods().Informer().GetIndexer(), items)
	items = nil
	for i := range claims.Items {
		items = append(items, &claims.Items[i])
	}
	replace(f.factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer(), items)
	items = nil
	for i := range revs.Items {
		items = append(items, &revs.Items[i])
	}
	replace(f.factory.Apps().V1().ControllerRevisions().Informer().GetIndexer(), items)
	items = nil
	for i := range sets.Items {
		items = append(items, &sets.Items[i])
	}
	replace(f.factory.Apps().V1().StatefulSets().Informer().GetIndexer(), items)
}

// step syncs the set and then lets the caches catch up.
func (f *fixture) step(name string) {
	f.t.Helper()
	f.client.ClearActions()
	if err := f.c.sync(context.Background(), "default/"+name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	f.resync()
}

func (f *fixture) podNames() []string {
	pods, _ := f.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) claimNames() []string {
	claims, _ := f.client.CoreV1().PersistentVolumeClaims("default").List(context.Background(), metav1.ListOptions{})
	var out []string
	for _, c := range claims.Items {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	p, err := f.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) set(name string) *appsv1.StatefulSet {
	f.t.Helper()
	s, err := f.client.AppsV1().StatefulSets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// ready plays kubelet: the pods run and are ready since t0.
func (f *fixture) ready(names ...string) {
	f.t.Helper()
	for _, n := range names {
		p := f.pod(n)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
		if _, err := f.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	f.resync()
}

func (f *fixture) verbs(resource string) []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != resource || a.GetSubresource() != "" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			out = append(out, "create "+a.GetObject().(metav1.Object).GetName())
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		case clienttesting.UpdateAction:
			out = append(out, "update "+a.GetObject().(metav1.Object).GetName())
		}
	}
	return out
}

func (f *fixture) updateSpec(name string, mutate func(*appsv1.StatefulSet)) {
	f.t.Helper()
	s := f.set(name)
	mutate(s)
	s.Generation++
	if _, err := f.client.AppsV1().StatefulSets("default").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.resync()
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

func TestNewPod(t *testing.T) {
	set := newSet("web", 3)
	pod := newPod(set, 2)
	if pod.Name != "web-2" || pod.Spec.Hostname != "web-2" || pod.Spec.Subdomain != "web-svc" {
		t.Errorf("name/hostname/subdomain = %s/%s/%s", pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	wantLabels := map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-2", appsv1.PodIndexLabel: "2"}
	if !reflect.DeepEqual(pod.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", pod.Labels, wantLabels)
	}
	wantVols := []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-2"}}},
		{Name: "cfg"},
	}
	if !reflect.DeepEqual(pod.Spec.Volumes, wantVols) {
		t.Errorf("volumes = %+v, want %+v", pod.Spec.Volumes, wantVols)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != set.UID || ref.Kind != "StatefulSet" {
		t.Errorf("controller ref = %+v", ref)
	}
	if !identityMatches(set, pod) || !storageMatches(set, pod) {
		t.Errorf("a new pod does not match its own identity or storage")
	}
	claims := claimsFor(set, pod)
	c := claims["data"]
	if c.Name != "data-web-2" || c.Namespace != "default" || !reflect.DeepEqual(c.Labels, map[string]string{"tier": "db", "app": "web"}) {
		t.Errorf("claim = %s/%s labels %v", c.Namespace, c.Name, c.Labels)
	}
	if set.Spec.VolumeClaimTemplates[0].Labels["app"] != "" {
		t.Errorf("claimsFor modified the template's labels")
	}

	for _, tt := range []struct {
		name   string
		parent string
		ord    int
	}{
		{"web-0", "web", 0}, {"my-web-12", "my-web", 12}, {"web", "", -1}, {"web-x", "", -1},
	} {
		p, o := parentAndOrdinal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.name}})
		if p != tt.parent || o != tt.ord {
			t.Errorf("parentAndOrdinal(%s) = %q, %d; want %q, %d", tt.name, p, o, tt.parent, tt.ord)
		}
	}
}

func TestNewVersionedPod(t *testing.T) {
	cur, upd := newSet("web", 4), newSet("web", 4)
	upd.Spec.Template.Spec.Containers[0].Image = "img:2"
	cur.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
	for ord, want := range map[int]string{0: "cur", 1: "cur", 2: "upd", 3: "upd"} {
		p := newVersionedPod(cur, upd, "cur", "upd", ord)
		if podRevision(p) != want {
			t.Errorf("ordinal %d: revision %s, want %s", ord, podRevision(p), want)
		}
		if img := p.Spec.Containers[0].Image; (want == "cur") != (img == "img:1") {
			t.Errorf("ordinal %d: image %s for revision %s", ord, img, want)
		}
	}
}

func TestOrderedCreation(t *testing.T) {
	f := newFixture(t, newSet("web", 3))
	for i, want := range [][]string{{"web-0"}, {"web-0", "web-1"}, {"web-0", "web-1", "web-2"}} {
		f.step("web")
		if got := f.podNames(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: pods %v, want %v", i, got, want)
		}
		// Nothing more while the newest pod is not running and ready.
		f.step("web")
		if got := f.podNames(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: pods %v before %s is ready, want %v", i, got, want[i], want)
		}
		if got := f.verbs("pods"); len(got) != 0 {
			t.Fatalf("round %d: pod requests %v while waiting", i, got)
		}
		f.ready(want[i])
	}
	if got, want := f.claimNames(), []string{"data-web-0", "data-web-1", "data-web-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("claims %v, want %v", got, want)
	}
	f.step("web")
	st := f.set("web").Status
	if st.Replicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.CurrentReplicas != 3 || st.UpdatedReplicas != 3 {
		t.Errorf("status counts = %+v", st)
	}
	if st.CurrentRevision == "" || st.CurrentRevision != st.UpdateRevision || st.ObservedGeneration != 1 || st.CollisionCount == nil {
		t.Errorf("status revisions = current %q update %q generation %d collisions %v", st.CurrentRevision, st.UpdateRevision, st.ObservedGeneration, st.CollisionCount)
	}
	p := f.pod("web-1")
	if p.Labels[appsv1.StatefulSetRevisionLabel] != st.UpdateRevision {
		t.Errorf("pod revision label %q, want %q", p.Labels[appsv1.StatefulSetRevisionLabel], st.UpdateRevision)
	}
	ev := strings.Join(f.events(), "\n")
	for _, want := range []string{
		"Normal SuccessfulCreate create Claim data-web-0 Pod web-0 in StatefulSet web success",
		"Normal SuccessfulCreate create Pod web-0 in StatefulSet web successful",
	} {
		if !strings.Contains(strings.ToLower(ev), strings.ToLower(want)) {
			t.Errorf("events lack %q:\n%s", want, ev)
		}
	}
	if !strings.Contains(ev, "Create Pod web-2 in StatefulSet web successful") {
		t.Errorf("event verbs are not capitalised as upstream's:\n%s", ev)
	}
}

func TestParallelCreationAndOrdinals(t *testing.T) {
	set := newSet("web", 3)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
	f := newFixture(t, set)
	f.step("web")
	if got, want := f.podNames(), []string{"web-5", "web-6", "web-7"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pods %v, want %v", got, want)
	}
	if got, want := f.claimNames(), []string{"data-web-5", "data-web-6", "data-web-7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("claims %v, want %v", got, want)
	}
	if l := f.pod("web-6").Labels[appsv1.PodIndexLabel]; l != "6" {
		t.Errorf("pod-index label %q, want 6", l)
	}
}

func TestScaleDown(t *testing.T) {
	for _, policy := range []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement} {
		t.Run(string(policy), func(t *testing.T) {
			set := newSet("web", 3)
			set.Spec.PodManagementPolicy = policy
			f := newFixture(t, set)
			for range 3 {
				f.step("web")
				f.ready(f.podNames()...)
			}
			if got := f.podNames(); len(got) != 3 {
				t.Fatalf("pods %v, want 3", got)
			}
			f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
			f.step("web")
			if policy == appsv1.ParallelPodManagement {
				if got, want := f.verbs("pods"), []string{"delete web-2", "delete web-1"}; !sameSet(got, want) {
					t.Fatalf("requests %v, want %v", got, want)
				}
				return
			}
			if got, want := f.verbs("pods"), []string{"delete web-2"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("first scale-down step: %v, want %v", got, want)
			}
			f.step("web")
			if got, want := f.verbs("pods"), []string{"delete web-1"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("second scale-down step: %v, want %v", got, want)
			}
			if got, want := f.claimNames(), []string{"data-web-0", "data-web-1", "data-web-2"}; !reflect.DeepEqual(got, want) {
				t.Errorf("claims %v, want all kept (Retain)", got)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return reflect.DeepEqual(a, b)
}

func TestOrderedScaleDownWaitsForHealth(t *testing.T) {
	f := newFixture(t, newSet("web", 3))
	for range 3 {
		f.step("web")
		f.ready(f.podNames()...)
	}
	// web-1 becomes unready: scale-down of web-2 waits; but an unhealthy
	// pod that is itself condemned is the first to go.
	p := f.pod("web-1")
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := f.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](2) })
	f.step("web")
	if got := f.verbs("pods"); len(got) != 0 {
		t.Errorf("scaled down %v while web-1 is unready", got)
	}
	f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	f.step("web")
	if got, want := f.verbs("pods"), []string{"delete web-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestRollingUpdateWithPartition(t *testing.T) {
	f := newFixture(t, newSet("web", 3))
	for range 3 {
		f.step("web")
		f.ready(f.podNames()...)
	}
	f.step("web")
	rev1 := f.set("web").Status.CurrentRevision
	f.updateSpec("web", func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "img:2"
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
	})

	// Highest ordinal first; each comes back at the new revision before the
	// next goes.
	for _, victim := range []string{"web-2", "web-1"} {
		f.step("web")
		if got, want := f.verbs("pods"), []string{"delete " + victim}; !reflect.DeepEqual(got, want) {
			t.Fatalf("requests %v, want %v", got, want)
		}
		f.step("web")
		if got, want := f.verbs("pods"), []string{"create " + victim}; !reflect.DeepEqual(got, want) {
			t.Fatalf("requests %v, want %v", got, want)
		}
		if img := f.pod(victim).Spec.Containers[0].Image; img != "img:2" {
			t.Fatalf("%s recreated with %s, want img:2", victim, img)
		}
		f.step("web")
		if got := f.verbs("pods"); len(got) != 0 {
			t.Fatalf("requests %v while %s is not ready", got, victim)
		}
		f.ready(victim)
	}
	// web-0 is below the partition.
	f.step("web")
	if got := f.verbs("pods"); len(got) != 0 {
		t.Fatalf("requests %v below the partition", got)
	}
	st := f.set("web").Status
	if st.CurrentRevision != rev1 || st.UpdateRevision == rev1 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 2 {
		t.Errorf("status = current %s (%d), update %s (%d); want current %s (1), a new update revision (2)",
			st.CurrentRevision, st.CurrentReplicas, st.UpdateRevision, st.UpdatedReplicas, rev1)
	}
	if img := f.pod("web-0").Spec.Containers[0].Image; img != "img:1" {
		t.Errorf("web-0 runs %s, want img:1", img)
	}

	// Dropping the partition finishes the rollout.
	f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0) })
	f.step("web")
	if got, want := f.verbs("pods"), []string{"delete web-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	f.step("web")
	f.ready("web-0")
	f.step("web")
	st = f.set("web").Status
	if st.CurrentRevision != st.UpdateRevision || st.CurrentReplicas != 3 || st.UpdatedReplicas != 3 {
		t.Errorf("after the rollout: current %s (%d), update %s (%d)", st.CurrentRevision, st.CurrentReplicas, st.UpdateRevision, st.UpdatedReplicas)
	}
	revs, _ := f.client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 2 {
		t.Errorf("%d revisions, want 2", len(revs.Items))
	}
}

func TestRollingUpdateMaxUnavailable(t *testing.T) {
	set := newSet("web", 4)
	set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("50%"))
	f := newFixture(t, set)
	for range 4 {
		f.step("web")
		f.ready(f.podNames()...)
	}
	f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "img:2" })
	f.step("web")
	if got, want := f.verbs("pods"), []string{"delete web-3", "delete web-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestOnDelete(t *testing.T) {
	set := newSet("web", 2)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	f := newFixture(t, set)
	for range 2 {
		f.step("web")
		f.ready(f.podNames()...)
	}
	f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "img:2" })
	f.step("web")
	if got := f.verbs("pods"); len(got) != 0 {
		t.Fatalf("OnDelete touched pods: %v", got)
	}
	if err := f.client.CoreV1().Pods("default").Delete(context.Background(), "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.resync()
	f.step("web")
	if img := f.pod("web-1").Spec.Containers[0].Image; img != "img:2" {
		t.Errorf("deleted pod came back with %s, want img:2", img)
	}
	if img := f.pod("web-0").Spec.Containers[0].Image; img != "img:1" {
		t.Errorf("web-0 runs %s, want img:1", img)
	}
}

func TestFailedPodIsReplaced(t *testing.T) {
	f := newFixture(t, newSet("web", 1))
	f.step("web")
	p := f.pod("web-0")
	p.Status.Phase = corev1.PodFailed
	if _, err := f.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.resync()
	f.step("web")
	if got, want := f.verbs("pods"), []string{"delete web-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	f.step("web")
	if got, want := f.verbs("pods"), []string{"create web-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
}

func TestRetentionPolicy(t *testing.T) {
	set := newSet("web", 2)
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: remove, WhenScaled: remove}
	f := newFixture(t, set)
	for range 2 {
		f.step("web")
		f.ready(f.podNames()...)
	}
	claim := func(name string) *corev1.PersistentVolumeClaim {
		c, err := f.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	owners := func(c *corev1.PersistentVolumeClaim) []string {
		var out []string
		for _, r := range c.OwnerReferences {
			out = append(out, r.Kind+"/"+r.Name)
		}
		return out
	}
	// The owner is set once the claim is in the cache.
	f.step("web")
	if got := owners(claim("data-web-1")); !reflect.DeepEqual(got, []string{"StatefulSet/web"}) {
		t.Fatalf("owners of a claim in range = %v, want the set", got)
	}
	f.updateSpec("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	f.step("web")
	// Before the condemned pod goes, its claim is handed to it, so that
	// the garbage collector removes the claim with the pod.
	if got := owners(claim("data-web-1")); !reflect.DeepEqual(got, []string{"Pod/web-1"}) {
		t.Errorf("owners of the scaled-away claim = %v, want the pod", got)
	}
	if got := f.verbs("pods"); !reflect.DeepEqual(got, []string{"delete web-1"}) {
		t.Errorf("requests %v, want delete web-1", got)
	}
	if got := owners(claim("data-web-0")); !reflect.DeepEqual(got, []string{"StatefulSet/web"}) {
		t.Errorf("owners of the kept claim = %v", got)
	}
}

func TestClaimOwnerUpToDate(t *testing.T) {
	set := newSet("web", 2)
	inRange := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", UID: "pod-uid"}}
	scaled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-5", UID: "pod-uid"}}
	setRef := *metav1.NewControllerRef(set, controllerKind)
	podRef := *metav1.NewControllerRef(inRange, podKind)
	scaledRef := *metav1.NewControllerRef(scaled, podKind)
	staleSet := setRef
	staleSet.UID = "old"
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "Thing", Name: "x", UID: "x", Controller: ptr.To(true)}
	nonController := setRef
	nonController.Controller = nil
	tests := []struct {
		name     string
		scaled   appsv1.PersistentVolumeClaimRetentionPolicyType
		deleted  appsv1.PersistentVolumeClaimRetentionPolicyType
		pod      *corev1.Pod
		refs     []metav1.OwnerReference
		want     bool
		wantRefs []metav1.OwnerReference
	}{
		{name: "retain/retain, none", scaled: retain, deleted: retain, pod: inRange, want: true},
		{name: "retain/retain, set ref", scaled: retain, deleted: retain, pod: inRange, refs: []metav1.OwnerReference{setRef}},
		{name: "retain/delete wants the set", scaled: retain, deleted: remove, pod: inRange, wantRefs: []metav1.OwnerReference{setRef}},
		{name: "retain/delete with the set", scaled: retain, deleted: remove, pod: inRange, refs: []metav1.OwnerReference{setRef}, want: true},
		{name: "delete/retain in range wants none", scaled: remove, deleted: retain, pod: inRange, want: true},
		{name: "delete/retain scaled away wants the pod", scaled: remove, deleted: retain, pod: scaled, wantRefs: []metav1.OwnerReference{scaledRef}},
		{name: "delete/delete in range wants the set", scaled: remove, deleted: remove, pod: inRange, refs: []metav1.OwnerReference{podRef}, wantRefs: []metav1.OwnerReference{setRef}},
		{name: "delete/delete scaled away wants the pod only", scaled: remove, deleted: remove, pod: scaled, refs: []metav1.OwnerReference{setRef}, wantRefs: []metav1.OwnerReference{scaledRef}},
		{name: "stale set reference is left alone", scaled: remove, deleted: remove, pod: inRange, refs: []metav1.OwnerReference{staleSet}, want: true},
		{name: "another controller is left alone", scaled: remove, deleted: remove, pod: inRange, refs: []metav1.OwnerReference{other}, want: true},
		{name: "another controller and ours: ours go", scaled: retain, deleted: remove, pod: inRange, refs: []metav1.OwnerReference{other, setRef}, wantRefs: []metav1.OwnerReference{other}},
		{name: "non-controller reference is fixed", scaled: retain, deleted: remove, pod: inRange, refs: []metav1.OwnerReference{nonController}, wantRefs: []metav1.OwnerReference{setRef}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := set.DeepCopy()
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: tt.scaled, WhenDeleted: tt.deleted}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + tt.pod.Name, OwnerReferences: tt.refs}}
			if got := claimOwnerUpToDate(klogDiscard, claim, s, tt.pod); got != tt.want {
				t.Fatalf("up to date = %v, want %v", got, tt.want)
			}
			if tt.want {
				return
			}
			setClaimOwnerRefs(klogDiscard, claim, s, tt.pod)
			if !reflect.DeepEqual(claim.OwnerReferences, tt.wantRefs) && !(len(claim.OwnerReferences) == 0 && len(tt.wantRefs) == 0) {
				t.Errorf("refs after update = %+v, want %+v", claim.OwnerReferences, tt.wantRefs)
			}
			if !claimOwnerUpToDate(klogDiscard, claim, s, tt.pod) {
				t.Errorf("not up to date after the update")
			}
		})
	}
}

func TestRecreateStrategyIsRefused(t *testing.T) {
	set := newSet("web", 1)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RecreateStatefulSetStrategyType}
	f := newFixture(t, set)
	if err := f.c.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("sync of a Recreate StatefulSet succeeded")
	}
	if len(f.podNames()) != 0 {
		t.Errorf("pods created: %v", f.podNames())
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning UnknownStrategy ") {
		t.Errorf("events = %v", ev)
	}
}

func TestAdoptsOrphans(t *testing.T) {
	set := newSet("web", 1)
	orphan := newPod(set, 0)
	orphan.OwnerReferences = nil
	orphan.UID = "orphan"
	orphan.Status.Phase = corev1.PodRunning
	stranger := newPod(set, 0)
	stranger.Name = "other-0" // matches the selector but is not a member
	stranger.OwnerReferences = nil
	f := newFixture(t, set, orphan, stranger)
	f.step("web")
	var patched []string
	for _, a := range f.client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			patched = append(patched, p.GetName())
		}
	}
	if !reflect.DeepEqual(patched, []string{"web-0"}) {
		t.Errorf("adopted %v, want web-0 only", patched)
	}
	if ref := metav1.GetControllerOf(f.pod("web-0")); ref == nil || ref.UID != set.UID {
		t.Errorf("web-0 controller = %v", ref)
	}
}

var klogDiscard = klog.Background().V(10)

func TestRevisions(t *testing.T) {
	set := newSet("web", 1)
	apps.DefaultStatefulSet(set)
	revOf := func(s *appsv1.StatefulSet, n int64) *appsv1.ControllerRevision {
		r, err := newRevision(s, n, ptr.To[int32](0))
		if err != nil {
			t.Fatal(err)
		}
		r.UID = types.UID("uid-" + r.Name)
		r.ResourceVersion = "1"
		return r
	}
	older := set.DeepCopy()
	older.Spec.Template.Spec.Containers[0].Image = "img:0"
	// The same template as recorded before the apiserver defaulted it.
	undefaulted := newSet("web", 1)
	undefaulted.Spec.Template.Spec.Containers[0].Image = "img:9"
	defaultedNine := undefaulted.DeepCopy()
	apps.DefaultStatefulSet(defaultedNine)

	tests := []struct {
		name       string
		set        *appsv1.StatefulSet
		existing   []*appsv1.ControllerRevision
		wantName   string
		wantNumber int64
		wantCreate bool
	}{
		{name: "first revision is created", set: set, wantName: revOf(set, 1).Name, wantNumber: 1, wantCreate: true},
		{name: "newest equal revision is reused", set: set, existing: []*appsv1.ControllerRevision{revOf(older, 1), revOf(set, 2)}, wantName: revOf(set, 2).Name, wantNumber: 2},
		{name: "an earlier equal revision becomes the newest", set: set, existing: []*appsv1.ControllerRevision{revOf(set, 1), revOf(older, 2)}, wantName: revOf(set, 1).Name, wantNumber: 3},
		{name: "a revision differing only by defaults is reused", set: defaultedNine, existing: []*appsv1.ControllerRevision{revOf(older, 1), revOf(undefaulted, 2)}, wantName: revOf(undefaulted, 2).Name, wantNumber: 2},
		{name: "a new template gets a new revision", set: set, existing: []*appsv1.ControllerRevision{revOf(older, 4)}, wantName: revOf(set, 5).Name, wantNumber: 5, wantCreate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.set}
			for _, r := range tt.existing {
				objs = append(objs, r)
			}
			f := newFixture(t, objs...)
			revs, err := f.c.listRevisions(tt.set)
			if err != nil {
				t.Fatal(err)
			}
			history.Sort(revs)
			f.client.ClearActions()
			cur, upd, _, err := f.c.revisions(context.Background(), tt.set, revs)
			if err != nil {
				t.Fatal(err)
			}
			if upd.Name != tt.wantName || upd.Revision != tt.wantNumber {
				t.Errorf("update revision %s #%d, want %s #%d", upd.Name, upd.Revision, tt.wantName, tt.wantNumber)
			}
			if cur.Name != upd.Name {
				t.Errorf("current revision %s, want the update revision without status", cur.Name)
			}
			created := slices.ContainsFunc(f.client.Actions(), func(a clienttesting.Action) bool { return a.GetVerb() == "create" })
			if created != tt.wantCreate {
				t.Errorf("created a revision: %v, want %v", created, tt.wantCreate)
			}
		})
	}
}
