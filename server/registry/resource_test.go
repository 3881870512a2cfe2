package registry

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/k1s/k1s/server/scheme"
)

// widget is a kind with a top-level field beside Spec and Status, which the
// generic strategy must treat like spec.
type widget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   widgetSpec
	Extra  string
	Status widgetStatus
}

type widgetSpec struct{ Size int }
type widgetStatus struct{ Ready bool }

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func newStrategy(r *Resource) *strategy {
	return &strategy{ObjectTyper: scheme.Scheme, r: r}
}

var podGVR = corev1.SchemeGroupVersion.WithResource("pods")

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name     string
		r        Resource
		obj      runtime.Object
		wantGen  int64
		wantStat any
	}{
		{
			name:     "status reset, generation 1",
			r:        Resource{Status: true},
			obj:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 9}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}},
			wantGen:  1,
			wantStat: corev1.PodStatus{},
		},
		{
			name:     "status reset even when the status subresource is not served",
			r:        Resource{},
			obj:      &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			wantGen:  1,
			wantStat: corev1.PodStatus{},
		},
		{
			name:     "KeepStatusOnCreate",
			r:        Resource{Status: true, KeepStatusOnCreate: true},
			obj:      &corev1.Node{Status: corev1.NodeStatus{Phase: corev1.NodeRunning}},
			wantGen:  1,
			wantStat: corev1.NodeStatus{Phase: corev1.NodeRunning},
		},
		{
			name:    "no spec: generation untouched",
			r:       Resource{},
			obj:     &corev1.ConfigMap{Data: map[string]string{"a": "b"}},
			wantGen: 0,
		},
		{
			name:     "custom kind with spec",
			r:        Resource{Status: true},
			obj:      &widget{Spec: widgetSpec{Size: 1}, Status: widgetStatus{Ready: true}},
			wantGen:  1,
			wantStat: widgetStatus{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hookSaw runtime.Object
			r := tt.r
			r.PrepareForCreate = func(_ context.Context, obj runtime.Object) { hookSaw = obj.DeepCopyObject() }
			newStrategy(&r).PrepareForCreate(context.Background(), tt.obj)
			m := tt.obj.(metav1.Object)
			if m.GetGeneration() != tt.wantGen {
				t.Errorf("generation = %d, want %d", m.GetGeneration(), tt.wantGen)
			}
			if tt.wantStat != nil {
				got := reflect.ValueOf(tt.obj).Elem().FieldByName("Status").Interface()
				if diff := cmp.Diff(tt.wantStat, got); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
			// The hook runs after the generic preparation.
			if diff := cmp.Diff(tt.obj, hookSaw, cmp.AllowUnexported(widget{})); diff != "" {
				t.Errorf("hook saw an object before preparation:\n%s", diff)
			}
		})
	}
}

func podWith(gen int64, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: gen, Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPrepareForUpdate(t *testing.T) {
	tests := []struct {
		name       string
		r          Resource
		old, obj   runtime.Object
		wantGen    int64
		wantStatus any
	}{
		{
			name:       "spec change bumps generation, served status is preserved",
			r:          Resource{Status: true},
			old:        podWith(3, nil),
			obj:        podWith(3, func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Phase = corev1.PodRunning }),
			wantGen:    4,
			wantStatus: corev1.PodStatus{Phase: corev1.PodPending},
		},
		{
			name:       "status is taken from the request when not served separately",
			r:          Resource{},
			old:        podWith(3, nil),
			obj:        podWith(3, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }),
			wantGen:    3,
			wantStatus: corev1.PodStatus{Phase: corev1.PodRunning},
		},
		{
			name:       "metadata-only change keeps generation",
			r:          Resource{Status: true},
			old:        podWith(3, nil),
			obj:        podWith(3, func(p *corev1.Pod) { p.Labels["b"] = "2"; p.Annotations = map[string]string{"x": "y"} }),
			wantGen:    3,
			wantStatus: corev1.PodStatus{Phase: corev1.PodPending},
		},
		{
			name:       "status-only change keeps generation",
			r:          Resource{},
			old:        podWith(3, nil),
			obj:        podWith(3, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			wantGen:    3,
			wantStatus: corev1.PodStatus{Phase: corev1.PodFailed},
		},
		{
			name: "semantically equal quantity keeps generation",
			r:    Resource{Status: true},
			old:  podWith(3, nil),
			obj: podWith(3, func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1000m")
			}),
			wantGen:    3,
			wantStatus: corev1.PodStatus{Phase: corev1.PodPending},
		},
		{
			name:       "non-spec top-level field bumps generation",
			r:          Resource{Status: true},
			old:        &widget{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Extra: "a", Status: widgetStatus{Ready: true}},
			obj:        &widget{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Extra: "b"},
			wantGen:    2,
			wantStatus: widgetStatus{Ready: true},
		},
		{
			name:    "kind without spec never gets a generation",
			r:       Resource{},
			old:     &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
			obj:     &corev1.ConfigMap{Data: map[string]string{"a": "2"}},
			wantGen: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hookCalled bool
			r := tt.r
			r.PrepareForUpdate = func(_ context.Context, obj, old runtime.Object) {
				hookCalled = obj == tt.obj && old == tt.old
			}
			oldCopy := tt.old.DeepCopyObject()
			newStrategy(&r).PrepareForUpdate(context.Background(), tt.obj, tt.old)
			if got := tt.obj.(metav1.Object).GetGeneration(); got != tt.wantGen {
				t.Errorf("generation = %d, want %d", got, tt.wantGen)
			}
			if tt.wantStatus != nil {
				got := reflect.ValueOf(tt.obj).Elem().FieldByName("Status").Interface()
				if diff := cmp.Diff(tt.wantStatus, got); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
			if !hookCalled {
				t.Errorf("PrepareForUpdate hook not called with obj and old")
			}
			if diff := cmp.Diff(oldCopy, tt.old, cmp.AllowUnexported(widget{})); diff != "" {
				t.Errorf("old object modified:\n%s", diff)
			}
		})
	}
}

func TestStatusStrategyPrepareForUpdate(t *testing.T) {
	deleted := metav1.Now()
	owners := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}
	old := podWith(2, func(p *corev1.Pod) {
		p.Spec.NodeName = "n1"
		p.OwnerReferences = owners
		p.DeletionTimestamp = &deleted
	})
	obj := podWith(2, func(p *corev1.Pod) {
		p.Spec.NodeName = "n2"
		p.Spec.Containers = nil
		p.Labels = map[string]string{"new": "label"}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.5"}
	})
	var hookSpec string
	r := &Resource{GVR: podGVR, Status: true, PrepareForStatusUpdate: func(_ context.Context, obj, _ runtime.Object) {
		hookSpec = obj.(*corev1.Pod).Spec.NodeName
	}}
	ss := &statusStrategy{strategy: newStrategy(r)}
	ss.PrepareForUpdate(context.Background(), obj, old)

	if diff := cmp.Diff(old.Spec, obj.Spec); diff != "" {
		t.Errorf("spec not restored from old (-old +got):\n%s", diff)
	}
	if diff := cmp.Diff(owners, obj.OwnerReferences); diff != "" {
		t.Errorf("ownerReferences not restored:\n%s", diff)
	}
	if obj.DeletionTimestamp == nil || !obj.DeletionTimestamp.Equal(&deleted) {
		t.Errorf("deletionTimestamp = %v, want %v", obj.DeletionTimestamp, deleted)
	}
	if obj.Status.Phase != corev1.PodRunning || obj.Status.PodIP != "10.42.0.5" {
		t.Errorf("status = %+v, want the request's", obj.Status)
	}
	if obj.Labels["new"] != "label" {
		t.Errorf("labels = %v, want the request's", obj.Labels)
	}
	if obj.Generation != 2 {
		t.Errorf("generation = %d, want 2", obj.Generation)
	}
	if hookSpec != "n1" {
		t.Errorf("status hook saw spec.nodeName %q, want the restored n1", hookSpec)
	}

	// Non-spec top-level fields are restored too.
	w := &widget{Extra: "new", Spec: widgetSpec{Size: 5}, Status: widgetStatus{Ready: true}}
	plain := &statusStrategy{strategy: newStrategy(&Resource{GVR: podGVR, Status: true})}
	plain.PrepareForUpdate(context.Background(), w, &widget{Extra: "old", Spec: widgetSpec{Size: 1}})
	if w.Extra != "old" || w.Spec.Size != 1 || !w.Status.Ready {
		t.Errorf("widget after status update = %+v", w)
	}
}

func TestValidateDispatch(t *testing.T) {
	errCreate := field.ErrorList{field.Required(field.NewPath("spec", "create"), "")}
	errUpdate := field.ErrorList{field.Required(field.NewPath("spec", "update"), "")}
	errStatus := field.ErrorList{field.Required(field.NewPath("status", "x"), "")}
	full := &Resource{
		Validate:             func(context.Context, runtime.Object) field.ErrorList { return errCreate },
		ValidateUpdate:       func(context.Context, runtime.Object, runtime.Object) field.ErrorList { return errUpdate },
		ValidateStatusUpdate: func(context.Context, runtime.Object, runtime.Object) field.ErrorList { return errStatus },
	}
	ctx := context.Background()
	pod := &corev1.Pod{}
	tests := []struct {
		name string
		got  field.ErrorList
		want field.ErrorList
	}{
		{"create", newStrategy(full).Validate(ctx, pod), errCreate},
		{"update", newStrategy(full).ValidateUpdate(ctx, pod, pod), errUpdate},
		{"status update", (&statusStrategy{newStrategy(full)}).ValidateUpdate(ctx, pod, pod), errStatus},
		{"create without hook", newStrategy(&Resource{}).Validate(ctx, pod), nil},
		{"update without hook", newStrategy(&Resource{}).ValidateUpdate(ctx, pod, pod), nil},
		{"status update without hook", (&statusStrategy{newStrategy(&Resource{ValidateUpdate: full.ValidateUpdate})}).ValidateUpdate(ctx, pod, pod), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrategyFlags(t *testing.T) {
	graceful := func(_ context.Context, _ runtime.Object, o *metav1.DeleteOptions) bool { return o != nil }
	tests := []struct {
		name                                      string
		r                                         Resource
		namespaced, createOnUpdate, unconditional bool
		graceful                                  bool
	}{
		{"defaults", Resource{}, false, false, true, false},
		{"namespaced, create on update", Resource{Namespaced: true, AllowCreateOnUpdate: true}, true, true, true, false},
		{"conditional updates only", Resource{DisallowUnconditionalUpd: true}, false, false, false, false},
		{"graceful delete hook", Resource{GracefulDelete: graceful}, false, false, true, true},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStrategy(&tt.r)
			if s.NamespaceScoped() != tt.namespaced {
				t.Errorf("NamespaceScoped = %v", s.NamespaceScoped())
			}
			if s.AllowCreateOnUpdate(ctx) != tt.createOnUpdate {
				t.Errorf("AllowCreateOnUpdate = %v", s.AllowCreateOnUpdate(ctx))
			}
			if s.AllowUnconditionalUpdate(ctx) != tt.unconditional {
				t.Errorf("AllowUnconditionalUpdate = %v", s.AllowUnconditionalUpdate(ctx))
			}
			if got := s.CheckGracefulDelete(ctx, &corev1.Pod{}, &metav1.DeleteOptions{}); got != tt.graceful {
				t.Errorf("CheckGracefulDelete = %v, want %v", got, tt.graceful)
			}
		})
	}
}

func TestGetResetFields(t *testing.T) {
	appsGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	tests := []struct {
		name   string
		r      Resource
		status bool // the status strategy instead of the main one
		want   map[fieldpath.APIVersion]*fieldpath.Set
	}{
		{"no status subresource", Resource{GVR: podGVR}, false, nil},
		{"main strategy resets status", Resource{GVR: podGVR, Status: true}, false,
			map[fieldpath.APIVersion]*fieldpath.Set{"v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}},
		{"group version of another group", Resource{GVR: appsGVR, Status: true}, false,
			map[fieldpath.APIVersion]*fieldpath.Set{"apps/v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}},
		{"status strategy resets spec and protected metadata", Resource{GVR: appsGVR, Status: true}, true,
			map[fieldpath.APIVersion]*fieldpath.Set{"apps/v1": fieldpath.NewSet(
				fieldpath.MakePathOrDie("spec"),
				fieldpath.MakePathOrDie("metadata", "deletionTimestamp"),
				fieldpath.MakePathOrDie("metadata", "ownerReferences"),
			)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[fieldpath.APIVersion]*fieldpath.Set
			if tt.status {
				got = (&statusStrategy{newStrategy(&tt.r)}).GetResetFields()
			} else {
				got = newStrategy(&tt.r).GetResetFields()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("GetResetFields = %v, want %v", got, tt.want)
			}
			for v, set := range tt.want {
				if got[v] == nil || !got[v].Equals(set) {
					t.Errorf("reset fields of %s = %v, want %v", v, got[v], set)
				}
			}
		})
	}
}

func TestAttrs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Unschedulable: true}}
	podFields := func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.nodeName": obj.(*corev1.Pod).Spec.NodeName}
	}
	tests := []struct {
		name       string
		r          Resource
		obj        runtime.Object
		wantLabels labels.Set
		wantFields fields.Set
	}{
		{"namespaced with fields", Resource{Namespaced: true, Fields: podFields}, pod,
			labels.Set{"app": "x"}, fields.Set{"metadata.name": "p", "metadata.namespace": "ns", "spec.nodeName": "n1"}},
		{"namespaced without fields", Resource{Namespaced: true}, pod,
			labels.Set{"app": "x"}, fields.Set{"metadata.name": "p", "metadata.namespace": "ns"}},
		{"cluster-scoped has no namespace field", Resource{Fields: func(runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": "true"}
		}}, node, labels.Set{}, fields.Set{"metadata.name": "n1", "spec.unschedulable": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, f, err := tt.r.attrs(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if !labels.Equals(l, tt.wantLabels) {
				t.Errorf("labels = %v, want %v", l, tt.wantLabels)
			}
			if diff := cmp.Diff(tt.wantFields, f); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := (&Resource{}).attrs(&metav1.Status{}); err == nil {
		t.Errorf("attrs of an object without metadata = nil error")
	}
}

func TestPredicate(t *testing.T) {
	r := &Resource{
		Namespaced: true,
		Fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.nodeName": obj.(*corev1.Pod).Spec.NodeName}
		},
		TriggerFuncs: storage.IndexerFuncs{"spec.nodeName": func(runtime.Object) string { return "" }},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	tests := []struct {
		label, field string
		match        bool
	}{
		{"", "spec.nodeName=n1", true},
		{"", "spec.nodeName=n2", false},
		{"app=x", "metadata.namespace=ns", true},
		{"app=y", "", false},
		{"", "metadata.name=p,spec.nodeName=n1", true},
	}
	for _, tt := range tests {
		ls, err := labels.Parse(tt.label)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := fields.ParseSelector(tt.field)
		if err != nil {
			t.Fatal(err)
		}
		p := r.predicate(ls, fs)
		if !slices.Equal(p.IndexFields, []string{"spec.nodeName"}) {
			t.Errorf("IndexFields = %v", p.IndexFields)
		}
		got, err := p.Matches(pod)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.match {
			t.Errorf("labels %q fields %q: match = %v, want %v", tt.label, tt.field, got, tt.match)
		}
	}
}

func TestSingularName(t *testing.T) {
	for in, want := range map[string]string{"Pod": "pod", "CertificateSigningRequest": "certificatesigningrequest", "x": "x"} {
		if got := singularName(in); got != want {
			t.Errorf("singularName(%s) = %s, want %s", in, got, want)
		}
	}
}

// memStorage is just enough of storage.Interface for Store.Update.
type memStorage struct {
	storage.Interface
	mu   sync.Mutex
	objs map[string]runtime.Object
	rv   uint64
}

func (m *memStorage) Versioner() storage.Versioner { return storage.APIObjectVersioner{} }

func (m *memStorage) put(key string, obj runtime.Object) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rv++
	obj = obj.DeepCopyObject()
	_ = m.Versioner().UpdateObject(obj, m.rv)
	m.objs[key] = obj
}

func (m *memStorage) get(key string) runtime.Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.objs[key].DeepCopyObject()
}

func (m *memStorage) GuaranteedUpdate(_ context.Context, key string, dest runtime.Object, _ bool, pre *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	m.mu.Lock()
	cur, ok := m.objs[key]
	rv := m.rv
	m.mu.Unlock()
	if !ok {
		return storage.NewKeyNotFoundError(key, 0)
	}
	existing := cur.DeepCopyObject()
	if err := pre.Check(key, existing); err != nil {
		return err
	}
	out, _, err := tryUpdate(existing, storage.ResponseMeta{ResourceVersion: rv})
	if err != nil {
		return err
	}
	m.put(key, out)
	reflect.ValueOf(dest).Elem().Set(reflect.ValueOf(m.get(key)).Elem())
	return nil
}

func newMemStore(r *Resource, update rest.RESTUpdateStrategy) (*genericregistry.Store, *memStorage) {
	mem := &memStorage{objs: map[string]runtime.Object{}}
	st := newStrategy(r)
	s := &genericregistry.Store{
		NewFunc:                  r.New,
		NewListFunc:              r.NewList,
		DefaultQualifiedResource: r.GroupResource(),
		KeyFunc:                  func(_ context.Context, name string) (string, error) { return "/" + r.GVR.Resource + "/" + name, nil },
		CreateStrategy:           st,
		UpdateStrategy:           update,
		DeleteStrategy:           st,
		ResetFieldsStrategy:      st,
		Storage:                  genericregistry.DryRunnableStorage{Storage: mem},
	}
	if update == nil {
		s.UpdateStrategy = st
	}
	return s, mem
}

var csrResource = &Resource{
	GVR:     certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"),
	Kind:    "CertificateSigningRequest",
	New:     func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
	NewList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
	Status:  true,
}

func clusterCtx() context.Context {
	return genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
}

func TestNewUpdateSubresource(t *testing.T) {
	store, mem := newMemStore(csrResource, nil)
	mainStrategy := store.UpdateStrategy
	old := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr1", UID: "u1"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kube-apiserver-client", Username: "alice"},
	}
	mem.put("/certificatesigningrequests/csr1", old)

	var prepared, validated int
	prepare := func(_ context.Context, obj, old runtime.Object) {
		prepared++
		// Keep only the conditions from the request, as approval does.
		csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
		conds := csr.Status.Conditions
		*csr = *oldCSR.DeepCopy()
		csr.Status.Conditions = conds
	}
	validate := func(_ context.Context, obj, _ runtime.Object) field.ErrorList {
		validated++
		for i, c := range obj.(*certificatesv1.CertificateSigningRequest).Status.Conditions {
			if c.Reason == "" {
				return field.ErrorList{field.Required(field.NewPath("status", "conditions").Index(i).Child("reason"), "")}
			}
		}
		return nil
	}
	sub := NewUpdateSubresource(store, prepare, validate)
	if store.UpdateStrategy != mainStrategy {
		t.Fatalf("NewUpdateSubresource changed the main store's strategy")
	}
	if sub.GetResetFields() != nil {
		t.Errorf("subresource reset fields = %v, want none", sub.GetResetFields())
	}

	update := func(mutate func(*certificatesv1.CertificateSigningRequest)) (runtime.Object, error) {
		obj := mem.get("/certificatesigningrequests/csr1").(*certificatesv1.CertificateSigningRequest)
		mutate(obj)
		out, created, err := sub.Update(clusterCtx(), "csr1", rest.DefaultUpdatedObjectInfo(obj), nil, nil, true, &metav1.UpdateOptions{})
		if created {
			t.Errorf("subresource update created an object")
		}
		return out, err
	}

	out, err := update(func(c *certificatesv1.CertificateSigningRequest) {
		c.Spec.Username = "mallory"
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "OK"}}
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	got := out.(*certificatesv1.CertificateSigningRequest)
	if got.Spec.Username != "alice" || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "OK" {
		t.Errorf("stored %+v: want the old spec and the new condition", got)
	}
	if prepared != 1 || validated != 1 {
		t.Errorf("prepare ran %d times, validate %d times, want 1 each", prepared, validated)
	}

	_, err = update(func(c *certificatesv1.CertificateSigningRequest) {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
	})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("Update with a failing validation = %v, want Invalid", err)
	}
	if stored := mem.get("/certificatesigningrequests/csr1").(*certificatesv1.CertificateSigningRequest); len(stored.Status.Conditions) != 1 {
		t.Errorf("rejected update was stored: %+v", stored.Status.Conditions)
	}
}

func TestStatusRESTUpdate(t *testing.T) {
	r := &Resource{GVR: podGVR, Kind: "Pod", Namespaced: true, Status: true,
		New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} }}
	ss := &statusStrategy{strategy: newStrategy(r)}
	store, mem := newMemStore(r, ss)
	store.ResetFieldsStrategy = ss
	mem.put("/pods/p", podWith(1, func(p *corev1.Pod) { p.UID = "u" }))
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	status := NewStatusREST(store)
	if got := status.GetResetFields()["v1"]; got == nil || !got.Has(fieldpath.MakePathOrDie("spec")) {
		t.Errorf("status reset fields = %v, want spec", got)
	}
	obj := mem.get("/pods/p").(*corev1.Pod)
	obj.Spec.NodeName = "sneaky"
	obj.Status.Phase = corev1.PodRunning
	out, _, err := status.Update(ctx, "p", rest.DefaultUpdatedObjectInfo(obj), nil, nil, true, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status Update: %v", err)
	}
	got := out.(*corev1.Pod)
	if got.Spec.NodeName != "" || got.Status.Phase != corev1.PodRunning || got.Generation != 1 {
		t.Errorf("after status update: nodeName %q phase %q generation %d; want \"\", Running, 1", got.Spec.NodeName, got.Status.Phase, got.Generation)
	}
	// Subresources never create, even when asked to.
	missing := podWith(0, func(p *corev1.Pod) { p.Name = "missing" })
	if _, _, err := status.Update(ctx, "missing", rest.DefaultUpdatedObjectInfo(missing), nil, nil, true, &metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("status Update of a missing pod = %v, want NotFound", err)
	}
}
