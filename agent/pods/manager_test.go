package pods

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func apiPod(name, uid string, created int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID(uid),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 0, 0, created, 0, time.UTC)),
	}}
}

func staticPod(name, hash string, created int) *corev1.Pod {
	p := apiPod(name, hash, created)
	p.Annotations = map[string]string{AnnotationSource: SourceFile, AnnotationHash: hash}
	p.Spec.NodeName = "node1"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "k1s.local/busybox:1.36"}}
	return p
}

func mirrorPod(name, uid, hash string) *corev1.Pod {
	p := apiPod(name, uid, 0)
	p.Annotations = map[string]string{AnnotationSource: SourceFile, AnnotationHash: hash, AnnotationMirror: hash}
	return p
}

type upd struct {
	Type UpdateType
	UID  types.UID
}

func drain(m *Manager) []upd {
	var out []upd
	for {
		select {
		case u := <-m.Updates():
			out = append(out, upd{u.Type, u.Pod.UID})
		default:
			return out
		}
	}
}

func TestManagerStatusOnlyChangesAreReconciled(t *testing.T) {
	base := apiPod("a", "uid-a", 2)
	tests := []struct {
		name   string
		change func(p *corev1.Pod)
		want   UpdateType
	}{
		{"status only", func(p *corev1.Pod) {
			p.ResourceVersion = "7"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		}, Reconciled},
		{"finalizers and owners", func(p *corev1.Pod) {
			p.Finalizers = []string{"x"}
			p.OwnerReferences = []metav1.OwnerReference{{Name: "rs"}}
		}, Reconciled},
		{"spec", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) }, Updated},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"v": "2"} }, Updated},
		{"annotations", func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, Updated},
		{"deletion", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(100, 0)}
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
		}, Updated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager("node1", nil)
			m.SetAPIPod(base)
			changed := base.DeepCopy()
			tt.change(changed)
			m.SetAPIPod(changed)
			if diff := cmp.Diff([]upd{{Added, "uid-a"}, {tt.want, "uid-a"}}, drain(m)); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			if got, _ := m.Get("uid-a"); got != changed {
				t.Errorf("Get returns an older version")
			}
		})
	}
}

func TestManagerAPIPods(t *testing.T) {
	m := NewManager("node1", nil)
	a := apiPod("a", "uid-a", 2)
	m.SetAPIPod(a)
	a2 := a.DeepCopy()
	a2.Labels = map[string]string{"v": "2"}
	m.SetAPIPod(a2)
	m.SetAPIPod(mirrorPod("s-node1", "mirror-1", "h1"))
	if diff := cmp.Diff([]upd{{Added, "uid-a"}, {Updated, "uid-a"}}, drain(m)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if got, ok := m.Get("uid-a"); !ok || got.Labels["v"] != "2" {
		t.Errorf("Get = %v, %v; want the latest version", got, ok)
	}
	if _, ok := m.Get("mirror-1"); ok {
		t.Errorf("a mirror pod is a desired pod")
	}
	if got := m.Pods(); len(got) != 1 || got[0].UID != "uid-a" {
		t.Errorf("Pods = %v, want only the API pod", got)
	}

	m.DeleteAPIPod(apiPod("never-seen", "uid-x", 0))
	m.DeleteAPIPod(a2)
	m.DeleteAPIPod(a2)
	if diff := cmp.Diff([]upd{{Removed, "uid-a"}}, drain(m)); diff != "" {
		t.Errorf("updates after delete (-want +got):\n%s", diff)
	}
	if len(m.Pods()) != 0 {
		t.Errorf("pods remain: %v", m.Pods())
	}
}

func TestManagerStaticPodsAndMirrors(t *testing.T) {
	m := NewManager("node1", nil)
	api := apiPod("api", "uid-api", 5)
	m.SetAPIPod(api)
	s1, s2, s3 := staticPod("s1-node1", "h1", 1), staticPod("s2-node1", "h2", 9), staticPod("s3-node1", "h3", 3)
	drain(m)

	m.SetStaticPods([]*corev1.Pod{s1, s2})
	got := drain(m)
	sort.Slice(got, func(i, j int) bool { return got[i].UID < got[j].UID })
	if diff := cmp.Diff([]upd{{Added, "h1"}, {Added, "h2"}}, got); diff != "" {
		t.Errorf("first static set (-want +got):\n%s", diff)
	}
	m.SetStaticPods([]*corev1.Pod{s1, s2})
	if got := drain(m); len(got) != 0 {
		t.Errorf("an unchanged static set sent %v", got)
	}
	// An edited manifest is a new UID: the old pod goes, the new one comes.
	m.SetStaticPods([]*corev1.Pod{s2, s3})
	if diff := cmp.Diff([]upd{{Added, "h3"}, {Removed, "h1"}}, drain(m)); diff != "" {
		t.Errorf("changed static set (-want +got):\n%s", diff)
	}
	var order []types.UID
	for _, p := range m.Pods() {
		order = append(order, p.UID)
	}
	if diff := cmp.Diff([]types.UID{"h3", "uid-api", "h2"}, order); diff != "" {
		t.Errorf("Pods by creation time (-want +got):\n%s", diff)
	}
	if p, ok := m.Get("h3"); !ok || p != s3 {
		t.Errorf("Get(static) = %v, %v", p, ok)
	}

	tests := []struct {
		name    string
		pod     *corev1.Pod
		mirror  *corev1.Pod
		wantUID types.UID
		wantOK  bool
	}{
		{name: "API pod", pod: api, wantOK: false},
		{name: "static without a mirror", pod: s2, wantOK: true},
		{name: "static with its mirror", pod: s2, mirror: mirrorPod("s2-node1", "m2", "h2"), wantUID: "m2", wantOK: true},
		{name: "static with a stale mirror", pod: s3, mirror: mirrorPod("s3-node1", "m3", "h-old"), wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mirror != nil {
				m.SetAPIPod(tt.mirror)
			}
			uid, ok := m.MirrorUID(tt.pod)
			if uid != tt.wantUID || ok != tt.wantOK {
				t.Errorf("MirrorUID = %q, %v; want %q, %v", uid, ok, tt.wantUID, tt.wantOK)
			}
		})
	}

	// Deleting an older mirror of the same name keeps the current one.
	m.DeleteAPIPod(mirrorPod("s2-node1", "m2-older", "h2"))
	if uid, _ := m.MirrorUID(s2); uid != "m2" {
		t.Errorf("mirror forgotten by the deletion of another UID: %q", uid)
	}
	m.DeleteAPIPod(mirrorPod("s2-node1", "m2", "h2"))
	if uid, _ := m.MirrorUID(s2); uid != "" {
		t.Errorf("mirror kept after its deletion: %q", uid)
	}
	// The current mirror of a static pod is handed to the status manager
	// as the static pod with the mirror's status; a stale mirror and
	// deletions send nothing.
	if diff := cmp.Diff([]upd{{Reconciled, s2.UID}}, drain(m)); diff != "" {
		t.Errorf("updates for mirror changes (-want +got):\n%s", diff)
	}
}

type action struct {
	Verb, Name string
	UID        types.UID // delete precondition
}

func actionsOf(c *fake.Clientset) []action {
	var out []action
	for _, a := range c.Actions() {
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			var uid types.UID
			if p := a.GetDeleteOptions().Preconditions; p != nil && p.UID != nil {
				uid = *p.UID
			}
			out = append(out, action{"delete", a.GetName(), uid})
		case k8stesting.CreateAction:
			out = append(out, action{"create", a.GetObject().(*corev1.Pod).Name, ""})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Verb+out[i].Name < out[j].Verb+out[j].Name })
	return out
}

func TestSyncMirrors(t *testing.T) {
	fresh := staticPod("fresh-node1", "hf", 0)
	stale := staticPod("stale-node1", "hs", 0)
	current := staticPod("current-node1", "hc", 0)
	deleting := staticPod("deleting-node1", "hd", 0)

	mirrors := []*corev1.Pod{
		mirrorPod("stale-node1", "m-stale", "hs-old"),
		mirrorPod("current-node1", "m-current", "hc"),
		mirrorPod("orphan-node1", "m-orphan", "ho"),
		mirrorPod("deleting-node1", "m-deleting", "hd"),
	}
	now := metav1.Now()
	mirrors[3].DeletionTimestamp = &now
	var objs []runtime.Object
	for _, p := range mirrors {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	m := NewManager("node1", client)
	m.SetStaticPods([]*corev1.Pod{fresh, stale, current, deleting})
	for _, p := range mirrors {
		m.SetAPIPod(p)
	}
	client.ClearActions()

	if err := m.SyncMirrors(context.Background(), "node-uid"); err != nil {
		t.Fatal(err)
	}
	want := []action{
		{"create", "deleting-node1", ""},
		{"create", "fresh-node1", ""},
		{"create", "stale-node1", ""},
		{"delete", "deleting-node1", "m-deleting"},
		{"delete", "orphan-node1", "m-orphan"},
		{"delete", "stale-node1", "m-stale"},
	}
	if diff := cmp.Diff(want, actionsOf(client)); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}

	created, err := client.CoreV1().Pods("default").Get(context.Background(), "fresh-node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Annotations[AnnotationMirror] != "hf" || created.Annotations[AnnotationHash] != "hf" || created.Annotations[AnnotationSource] != SourceFile {
		t.Errorf("mirror annotations = %v", created.Annotations)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node1", UID: "node-uid", Controller: func() *bool { b := true; return &b }()}}
	if diff := cmp.Diff(wantOwner, created.OwnerReferences); diff != "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
	if created.Spec.NodeName != "node1" || created.Spec.Containers[0].Name != "c" {
		t.Errorf("mirror spec = %+v", created.Spec)
	}
	if fresh.Annotations[AnnotationMirror] != "" {
		t.Errorf("the static pod itself was changed: %v", fresh.Annotations)
	}
	if _, err := client.CoreV1().Pods("default").Get(context.Background(), "orphan-node1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan mirror still there: %v", err)
	}
}

func TestSyncMirrorsErrors(t *testing.T) {
	client := fake.NewClientset()
	m := NewManager("node1", client)
	m.SetStaticPods([]*corev1.Pod{staticPod("a-node1", "ha", 0)})
	m.SetAPIPod(mirrorPod("gone-node1", "m-gone", "hg")) // already deleted in the API: NotFound is fine
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	err := m.SyncMirrors(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "create mirror pod default/a-node1: apiserver unavailable") {
		t.Fatalf("err = %v, want the create failure", err)
	}
	if strings.Contains(err.Error(), "gone") {
		t.Errorf("a NotFound delete was reported: %v", err)
	}

	// Without a node UID the mirror has no owner; an existing one is fine.
	client = fake.NewClientset(staticPod("a-node1", "ha", 0))
	m = NewManager("node1", client)
	m.SetStaticPods([]*corev1.Pod{staticPod("a-node1", "ha", 0)})
	if err := m.SyncMirrors(context.Background(), ""); err != nil {
		t.Errorf("AlreadyExists reported: %v", err)
	}
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && len(c.GetObject().(*corev1.Pod).OwnerReferences) != 0 {
			t.Errorf("owner references without a node UID")
		}
	}
}
