package replication

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

// harness runs the controller against a fake clientset.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	recorder *record.FakeRecorder
}

// start runs the controller over objs. prepare, if set, adds reactors
// before anything runs.
func start(t *testing.T, prepare func(*fake.Clientset), objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	// Pod names from generateName, as the apiserver would.
	var n atomic.Int32
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			i := n.Add(1)
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, i)
			pod.UID = types.UID(fmt.Sprintf("created-%d", i))
		}
		return false, nil, nil
	})
	// The status subresource writes status only, as the apiserver's
	// does: a status update racing a spec update keeps the new spec.
	client.PrependReactor("update", "replicationcontrollers", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		in := a.(clienttesting.UpdateAction).GetObject().(*corev1.ReplicationController)
		obj, err := client.Tracker().Get(a.GetResource(), in.Namespace, in.Name)
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*corev1.ReplicationController).DeepCopy()
		cur.Status = in.Status
		return true, cur, client.Tracker().Update(a.GetResource(), cur, in.Namespace)
	})
	if prepare != nil {
		prepare(client)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	rec.IncludeObject = true
	c, err := New(client, factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v on cancel, want nil", err)
		}
		factory.Shutdown()
	})
	return &harness{t: t, client: client, recorder: rec}
}

// eventually waits for cond to hold, failing with its last explanation.
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		h.t.Fatalf("%s: %s", what, last)
	}
}

func (h *harness) pods() []corev1.Pod {
	h.t.Helper()
	list, err := h.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) rc(name string) *corev1.ReplicationController {
	h.t.Helper()
	rc, err := h.client.CoreV1().ReplicationControllers("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return rc
}

// ownedBy returns the pods rc controls.
func ownedBy(pods []corev1.Pod, rc *corev1.ReplicationController) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rc.UID {
			out = append(out, p)
		}
	}
	return out
}

// waitStatus waits until rc's status has replicas and observedGeneration.
func (h *harness) waitStatus(name string, replicas int32, generation int64) *corev1.ReplicationController {
	h.t.Helper()
	var rc *corev1.ReplicationController
	h.eventually("status", func() (bool, string) {
		rc = h.rc(name)
		return rc.Status.Replicas == replicas && rc.Status.ObservedGeneration == generation,
			fmt.Sprintf("status %+v, want replicas %d at generation %d", rc.Status, replicas, generation)
	})
	return rc
}

// writes returns "verb resource[/subresource]" of each write.
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func newRC(name string, replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To(replicas),
			Selector: map[string]string{"app": name},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

type podOpt func(*corev1.Pod)

func newPod(name string, rc *corev1.ReplicationController, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name), ResourceVersion: "1",
			Labels:            map[string]string{"app": rc.Name, "tier": "web"},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(rc, controllerKind)},
		},
		Spec:   corev1.PodSpec{NodeName: "node1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func orphan(p *corev1.Pod) { p.OwnerReferences = nil }
func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
}
func withLabels(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }

func TestCreatesPodsOwnedByTheReplicationController(t *testing.T) {
	rc := newRC("web", 3)
	h := start(t, nil, rc)
	h.waitStatus("web", 3, 1)
	pods := h.pods()
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.Name != "web" || ref.UID != rc.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s controller %+v", p.Name, ref)
		}
		if p.GenerateName != "web-" || p.Labels["tier"] != "web" || p.Spec.Containers[0].Image != "nginx" {
			t.Errorf("pod %s not from the template: %+v", p.Name, p)
		}
	}
	var created int
	for _, e := range h.events() {
		if !strings.HasSuffix(e, "involvedObject{kind=ReplicationController,apiVersion=v1}") {
			t.Errorf("event %q not on the ReplicationController", e)
		}
		if strings.HasPrefix(e, "Normal SuccessfulCreate Created pod: web-") {
			created++
		}
	}
	if created != 3 {
		t.Errorf("%d SuccessfulCreate events, want 3", created)
	}
}

func TestDeletesSurplusPods(t *testing.T) {
	rc := newRC("web", 1)
	h := start(t, nil, rc, newPod("a", rc, ready), newPod("b", rc), newPod("c", rc, ready))
	got := h.waitStatus("web", 1, 1)
	pods := h.pods()
	// The unready pod goes first, then one of the ready ones.
	if len(pods) != 1 || pods[0].Name == "b" {
		t.Fatalf("pods left %v, want one ready pod", pods)
	}
	if got.Status.ReadyReplicas != 1 || got.Status.AvailableReplicas != 1 || got.Status.FullyLabeledReplicas != 1 {
		t.Errorf("status %+v", got.Status)
	}
	var deleted int
	for _, e := range h.events() {
		if strings.HasPrefix(e, "Normal SuccessfulDelete Deleted pod: ") && strings.HasSuffix(e, "kind=ReplicationController,apiVersion=v1}") {
			deleted++
		}
	}
	if deleted != 2 {
		t.Errorf("%d SuccessfulDelete events on the ReplicationController, want 2", deleted)
	}
}

func TestAdoptsMatchingOrphans(t *testing.T) {
	rc := newRC("web", 1)
	h := start(t, nil, rc, newPod("orphan", rc, orphan), newPod("stranger", rc, orphan, withLabels(map[string]string{"app": "other"})))
	h.eventually("adoption", func() (bool, string) {
		owned := ownedBy(h.pods(), rc)
		return len(owned) == 1 && owned[0].Name == "orphan", fmt.Sprintf("owned %v", owned)
	})
	h.waitStatus("web", 1, 1)
	for _, w := range h.writes() {
		if w == "create pods" || w == "delete pods" {
			t.Errorf("unexpected write %s", w)
		}
	}
	for _, p := range h.pods() {
		if p.Name == "stranger" && len(p.OwnerReferences) != 0 {
			t.Errorf("pod with other labels adopted: %+v", p.OwnerReferences)
		}
	}
}

func TestReleasesPodsNoLongerMatching(t *testing.T) {
	rc := newRC("web", 1)
	h := start(t, nil, rc, newPod("relabelled", rc, withLabels(map[string]string{"app": "other"})))
	h.eventually("release and replacement", func() (bool, string) {
		pods := h.pods()
		owned := ownedBy(pods, rc)
		return len(pods) == 2 && len(owned) == 1 && owned[0].Name != "relabelled", fmt.Sprintf("pods %d, owned %v", len(pods), owned)
	})
	h.waitStatus("web", 1, 1)
}

func TestStatusCountsLabelsAndReadiness(t *testing.T) {
	rc := newRC("web", 2)
	rc.Spec.MinReadySeconds = 3600 * 2
	h := start(t, nil, rc, newPod("a", rc, ready), newPod("b", rc, withLabels(map[string]string{"app": "web"})))
	got := h.waitStatus("web", 2, 1)
	// b lacks the template's tier label; a has been ready for an hour,
	// less than minReadySeconds.
	if got.Status.FullyLabeledReplicas != 1 || got.Status.ReadyReplicas != 1 || got.Status.AvailableReplicas != 0 || len(got.Status.Conditions) != 0 {
		t.Errorf("status %+v", got.Status)
	}
}

func TestQuotaSurfacesReplicaFailure(t *testing.T) {
	rc := newRC("web", 3)
	// A quota of two pods.
	quota := func(client *fake.Clientset) {
		var n atomic.Int32
		client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			if n.Add(1) > 2 {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"))
			}
			return false, nil, nil
		})
	}
	h := start(t, quota, rc)
	h.eventually("ReplicaFailure", func() (bool, string) {
		rc := h.rc("web")
		for _, c := range rc.Status.Conditions {
			if c.Type == corev1.ReplicationControllerReplicaFailure && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate" && strings.Contains(c.Message, "exceeded quota") {
				return rc.Status.ObservedGeneration == 1, ""
			}
		}
		return false, fmt.Sprintf("status %+v", rc.Status)
	})
	var failed bool
	for _, e := range h.events() {
		failed = failed || strings.HasPrefix(e, "Warning FailedCreate Error creating: ") && strings.HasSuffix(e, "kind=ReplicationController,apiVersion=v1}")
	}
	if !failed {
		t.Error("no FailedCreate event on the ReplicationController")
	}

	// Scaled down to fit, the condition goes.
	cur := h.rc("web")
	cur.Spec.Replicas = ptr.To[int32](2)
	cur.Generation = 2
	if _, err := h.client.CoreV1().ReplicationControllers("ns").Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := h.waitStatus("web", 2, 2)
	if len(got.Status.Conditions) != 0 {
		t.Errorf("conditions after scaling down: %+v", got.Status.Conditions)
	}
}

func TestConversionRoundTrip(t *testing.T) {
	rc := newRC("web", 2)
	rc.Spec.MinReadySeconds = 7
	rc.Labels = map[string]string{"app": "web"}
	rc.Status = corev1.ReplicationControllerStatus{
		Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1,
		Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "m"}},
	}
	rs := toReplicaSet(rc)
	if rs.Name != "web" || rs.UID != rc.UID || *rs.Spec.Replicas != 2 || rs.Spec.MinReadySeconds != 7 ||
		!reflect.DeepEqual(rs.Spec.Selector.MatchLabels, rc.Spec.Selector) || rs.Spec.Template.Labels["tier"] != "web" ||
		rs.Status.ReadyReplicas != 1 || len(rs.Status.Conditions) != 1 || string(rs.Status.Conditions[0].Type) != "ReplicaFailure" {
		t.Errorf("as ReplicaSet: %+v", rs)
	}
	back := toReplicationController(rs)
	if back.Kind != "ReplicationController" || back.APIVersion != "v1" {
		t.Errorf("kind %q apiVersion %q", back.Kind, back.APIVersion)
	}
	back.TypeMeta = metav1.TypeMeta{}
	if !reflect.DeepEqual(back, rc) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, rc)
	}
	// No selector (validation refuses one) selects nothing.
	rc.Spec.Selector = nil
	if rs := toReplicaSet(rc); rs.Spec.Selector != nil {
		t.Errorf("selector %+v from an empty map", rs.Spec.Selector)
	}
	if _, ok := (owners{}).AsReplicaSet(newPod("p", rc)); ok {
		t.Error("a pod seen as a ReplicaSet")
	}
}

func TestDescriptor(t *testing.T) {
	d := Descriptor(Config{})
	if d.Name != "replicationcontroller-controller" || d.ServiceAccount != "replication-controller" || !reflect.DeepEqual(d.Aliases, []string{"replicationcontroller"}) || d.DisabledByDefault {
		t.Errorf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	builder := &managertesting.ClientBuilder{Clientset: client}
	factory := informers.NewSharedInformerFactory(client, 0)
	var runs int
	var recorders []string
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: factory,
		EventRecorder: func(c string) record.EventRecorder {
			recorders = append(recorders, c)
			return record.NewFakeRecorder(1)
		},
		Go: func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if got := builder.Names(); len(got) != 1 || got[0] != "replication-controller" {
		t.Errorf("clients asked for %v", got)
	}
	if runs != 1 || !reflect.DeepEqual(recorders, []string{"replication-controller"}) {
		t.Errorf("Go called %d times, recorders %v", runs, recorders)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	synced := factory.WaitForCacheSync(stop)
	for _, typ := range []reflect.Type{reflect.TypeFor[*corev1.ReplicationController](), reflect.TypeFor[*corev1.Pod]()} {
		if !synced[typ] {
			t.Errorf("no synced informer for %v", typ)
		}
	}
	close(stop)
	factory.Shutdown()

	if err := Descriptor(Config{ConcurrentSyncs: -1}).Start(context.Background(), cc); err == nil || !strings.Contains(err.Error(), "--concurrent-rc-syncs") {
		t.Errorf("Start with a bad config = %v", err)
	}
}
