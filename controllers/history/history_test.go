package history

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

var setKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

func parent(name, uid string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

func revision(name string, rev int64, data string, lbls map[string]string, owner *appsv1.StatefulSet) *appsv1.ControllerRevision {
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: lbls},
		Data:       runtime.RawExtension{Raw: []byte(data)},
		Revision:   rev,
	}
	if owner != nil {
		cr.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, setKind)}
	}
	return cr
}

func TestName(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		prefix, hash, want string
	}{
		{"web", "5d8f", "web-5d8f"},
		{long, "h", strings.Repeat("a", 223) + "-h"},
	}
	for _, tt := range tests {
		if got := Name(tt.prefix, tt.hash); got != tt.want {
			t.Errorf("Name(%d chars, %q) = %q, want %q", len(tt.prefix), tt.hash, got, tt.want)
		}
	}
}

func TestHash(t *testing.T) {
	a := revision("a", 1, `{"spec":1}`, nil, nil)
	b := revision("b", 7, `{"spec":1}`, map[string]string{"x": "y"}, nil)
	c := revision("c", 1, `{"spec":2}`, nil, nil)
	zero, one := int32(0), int32(1)
	if Hash(a, nil) != Hash(b, nil) {
		t.Errorf("same data, different metadata: hashes differ")
	}
	if Hash(a, nil) == Hash(c, nil) {
		t.Errorf("different data: same hash %q", Hash(a, nil))
	}
	if Hash(a, &zero) == Hash(a, &one) {
		t.Errorf("collision count does not change the hash")
	}
	if Hash(a, &zero) == Hash(a, nil) {
		t.Errorf("a zero collision count is not distinguished from none")
	}
	for _, r := range Hash(a, &one) {
		if strings.ContainsRune("aeiou013", r) {
			t.Errorf("hash %q has an unsafe character %q", Hash(a, &one), r)
		}
	}
	obj := &appsv1.ControllerRevision{Data: runtime.RawExtension{Object: &appsv1.StatefulSet{}}}
	if Hash(obj, nil) == Hash(&appsv1.ControllerRevision{}, nil) {
		t.Errorf("Data.Object is not hashed")
	}
}

func TestNewRevision(t *testing.T) {
	set := parent("web", "u1")
	count := int32(2)
	data := runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}
	rev := NewRevision(set, setKind, map[string]string{"app": "web"}, data, 3, &count)
	hash := Hash(rev, &count)
	if rev.Name != "web-"+hash || rev.Namespace != "ns" || rev.Revision != 3 {
		t.Errorf("name/namespace/revision = %s/%s/%d, want ns/web-%s/3", rev.Namespace, rev.Name, rev.Revision, hash)
	}
	if want := map[string]string{"app": "web", HashLabel: hash}; !reflect.DeepEqual(rev.Labels, want) {
		t.Errorf("labels = %v, want %v", rev.Labels, want)
	}
	ref := metav1.GetControllerOf(rev)
	if ref == nil || ref.UID != "u1" || ref.Kind != "StatefulSet" || ref.APIVersion != "apps/v1" || !*ref.BlockOwnerDeletion {
		t.Errorf("controller ref = %+v", ref)
	}
}

func TestSortAndFind(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(100, 0))
	t1 := metav1.NewTime(time.Unix(200, 0))
	r := func(name string, n int64, ts metav1.Time, data string) *appsv1.ControllerRevision {
		cr := revision(name, n, data, nil, nil)
		cr.CreationTimestamp = ts
		return cr
	}
	revs := []*appsv1.ControllerRevision{r("d", 3, t0, "x"), r("c", 1, t1, "y"), r("b", 1, t0, "x"), r("a", 1, t0, "z")}
	Sort(revs)
	var names []string
	for _, cr := range revs {
		names = append(names, cr.Name)
	}
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(names, want) {
		t.Errorf("sorted = %v, want %v", names, want)
	}
	eq := FindEqual(revs, r("needle", 9, t1, "x"))
	if len(eq) != 2 || eq[0].Name != "b" || eq[1].Name != "d" {
		t.Errorf("FindEqual = %v, want b and d", eq)
	}
	if !Equal(nil, nil) || Equal(revs[0], nil) || Equal(revs[0], revs[1]) {
		t.Errorf("Equal mishandles nil or different data")
	}
	if MaxRevision(revs) != 3 || MaxRevision(nil) != 0 {
		t.Errorf("MaxRevision = %d / %d, want 3 / 0", MaxRevision(revs), MaxRevision(nil))
	}
}

func newHistory(t *testing.T, objs ...*appsv1.ControllerRevision) (Interface, *fake.Clientset) {
	t.Helper()
	var robjs []runtime.Object
	for _, o := range objs {
		robjs = append(robjs, o)
	}
	client := fake.NewClientset(robjs...)
	inf := informers.NewSharedInformerFactory(client, 0).Apps().V1().ControllerRevisions()
	h, err := New(client, inf)
	if err != nil {
		t.Fatal(err)
	}
	// A second call (another controller) is harmless.
	if err := AddOwnerIndex(inf.Informer()); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := inf.Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	return h, client
}

func TestList(t *testing.T) {
	web, other := parent("web", "u1"), parent("db", "u2")
	stale := parent("web", "old-uid")
	objs := []*appsv1.ControllerRevision{
		revision("web-1", 1, `{"d":"a"}`, map[string]string{"app": "web"}, web),
		revision("web-2", 2, `{"d":"b"}`, map[string]string{"app": "other"}, web),
		revision("orphan", 1, `{"d":"c"}`, map[string]string{"app": "web"}, nil),
		revision("orphan-nomatch", 1, `{"d":"c"}`, map[string]string{"app": "x"}, nil),
		revision("db-1", 1, `{"d":"d"}`, map[string]string{"app": "web"}, other),
		revision("stale-1", 1, `{"d":"d"}`, map[string]string{"app": "web"}, stale),
	}
	h, _ := newHistory(t, objs...)
	got, err := h.List(web, setKind, labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range got {
		names[r.Name] = true
	}
	if want := map[string]bool{"web-1": true, "orphan": true}; !reflect.DeepEqual(names, want) {
		t.Errorf("List = %v, want %v", names, want)
	}
	all, err := h.List(web, setKind, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Errorf("List(everything) = %d revisions, want 4 (web-1, web-2, orphan, orphan-nomatch)", len(all))
	}
}

func TestCreate(t *testing.T) {
	web := parent("web", "u1")
	data := runtime.RawExtension{Raw: []byte(`{"v":"new"}`)}
	tests := []struct {
		name          string
		existing      func(want *appsv1.ControllerRevision) []*appsv1.ControllerRevision
		wantCollision int32
		wantCreates   int
	}{
		{
			name:        "no conflict",
			existing:    func(*appsv1.ControllerRevision) []*appsv1.ControllerRevision { return nil },
			wantCreates: 1,
		},
		{
			name: "same name, same data is the revision",
			existing: func(want *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
				return []*appsv1.ControllerRevision{revision(want.Name, 5, `{"v":"new"}`, nil, web)}
			},
			wantCreates: 1,
		},
		{
			name: "same name, other data bumps the collision count",
			existing: func(want *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
				return []*appsv1.ControllerRevision{revision(want.Name, 5, `{"v":"old"}`, nil, web)}
			},
			wantCollision: 1,
			wantCreates:   2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count := int32(0)
			rev := NewRevision(web, setKind, map[string]string{"app": "web"}, data, 2, &count)
			h, client := newHistory(t, tt.existing(rev)...)
			got, err := h.Create(context.Background(), web, rev, &count)
			if err != nil {
				t.Fatal(err)
			}
			if count != tt.wantCollision {
				t.Errorf("collision count = %d, want %d", count, tt.wantCollision)
			}
			if want := Name("web", Hash(rev, &count)); got.Name != want {
				t.Errorf("name = %s, want %s", got.Name, want)
			}
			if string(got.Data.Raw) != `{"v":"new"}` {
				t.Errorf("data = %q", got.Data.Raw)
			}
			creates := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" {
					creates++
				}
			}
			if creates != tt.wantCreates {
				t.Errorf("creates = %d, want %d", creates, tt.wantCreates)
			}
			if tt.wantCollision > 0 && got.Labels[HashLabel] != Hash(rev, &count) {
				t.Errorf("hash label %q not renamed with the revision %s", got.Labels[HashLabel], got.Name)
			}
		})
	}
	h, _ := newHistory(t)
	if _, err := h.Create(context.Background(), web, NewRevision(web, setKind, nil, data, 1, nil), nil); err == nil {
		t.Errorf("Create with nil collision count succeeded")
	}
}

func TestUpdateDeleteRevision(t *testing.T) {
	web := parent("web", "u1")
	r := revision("web-1", 1, `{"d":"a"}`, nil, web)
	h, client := newHistory(t, r)
	got, err := h.UpdateRevision(context.Background(), r, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 4 || r.Revision != 1 {
		t.Errorf("revision = %d (input now %d), want 4 (input untouched)", got.Revision, r.Revision)
	}
	stored, _ := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), "web-1", metav1.GetOptions{})
	if stored.Revision != 4 {
		t.Errorf("stored revision = %d, want 4", stored.Revision)
	}
	client.ClearActions()
	if _, err := h.UpdateRevision(context.Background(), got, 4); err != nil || len(client.Actions()) != 0 {
		t.Errorf("same revision: err %v, actions %v, want no request", err, client.Actions())
	}
	if err := h.Delete(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(context.Background(), r); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v, want NotFound", err)
	}
}

func patchBody(t *testing.T, client *fake.Clientset) map[string]any {
	t.Helper()
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			if p.GetPatchType() != types.StrategicMergePatchType {
				t.Errorf("patch type %s, want strategic merge", p.GetPatchType())
			}
			var m map[string]any
			if err := json.Unmarshal(p.GetPatch(), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no patch in %v", client.Actions())
	return nil
}

func TestAdoptRelease(t *testing.T) {
	web := parent("web", "u1")
	orphan := revision("orphan", 1, `{"d":"a"}`, nil, nil)
	h, client := newHistory(t, orphan)
	adopted, err := h.Adopt(context.Background(), web, setKind, orphan)
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(adopted); ref == nil || ref.UID != "u1" {
		t.Errorf("adopted controller = %v", ref)
	}
	body := patchBody(t, client)
	meta := body["metadata"].(map[string]any)
	if meta["uid"] != "uid-orphan" {
		t.Errorf("adopt patch uid precondition = %v", meta["uid"])
	}
	ref := meta["ownerReferences"].([]any)[0].(map[string]any)
	if ref["controller"] != true || ref["blockOwnerDeletion"] != true || ref["kind"] != "StatefulSet" || ref["apiVersion"] != "apps/v1" {
		t.Errorf("adopt owner ref = %v", ref)
	}
	if _, err := h.Adopt(context.Background(), web, setKind, adopted); err == nil {
		t.Errorf("adopting an owned revision succeeded")
	}

	client.ClearActions()
	if _, err := h.Release(context.Background(), web, adopted); err != nil {
		t.Fatal(err)
	}
	ref = patchBody(t, client)["metadata"].(map[string]any)["ownerReferences"].([]any)[0].(map[string]any)
	if ref["$patch"] != "delete" || ref["uid"] != "u1" {
		t.Errorf("release patch = %v", ref)
	}
	gone := revision("gone", 1, `{"d":"a"}`, nil, web)
	if got, err := h.Release(context.Background(), web, gone); err != nil || got != nil {
		t.Errorf("release of a missing revision = %v, %v; want nil, nil", got, err)
	}
}

func TestTemplatePatch(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptrTo[int64](12345678),
			Containers:                    []corev1.Container{{Name: "c", Image: "img"}},
		},
	}
	got, err := TemplatePatch(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img","name":"c","resources":{}}],"terminationGracePeriodSeconds":12345678}}}}`
	if string(got) != want {
		t.Errorf("TemplatePatch =\n%s\nwant\n%s", got, want)
	}
}

func ptrTo[T any](v T) *T { return &v }
