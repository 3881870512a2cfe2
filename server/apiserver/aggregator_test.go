package apiserver

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func TestBuiltInAPIServices(t *testing.T) {
	paths := []string{"/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/apis/autoscaling/v1", "/apis/autoscaling/v2",
		"/apis/new.k8s.io/v1", "/healthz", "/openapi/v2", "/apis/apiextensions.k8s.io/v1"}
	got := map[string]apiregistrationv1.APIServiceSpec{}
	for _, svc := range builtInAPIServices(paths, apiServicePriorities()) {
		got[svc.Name] = svc.Spec
	}
	want := map[string]apiregistrationv1.APIServiceSpec{
		"v1.":                     {Version: "v1", GroupPriorityMinimum: 18000, VersionPriority: 1},
		"v1.apps":                 {Group: "apps", Version: "v1", GroupPriorityMinimum: 17800, VersionPriority: 15},
		"v1.autoscaling":          {Group: "autoscaling", Version: "v1", GroupPriorityMinimum: 17500, VersionPriority: 15},
		"v2.autoscaling":          {Group: "autoscaling", Version: "v2", GroupPriorityMinimum: 17500, VersionPriority: 30},
		"v1.apiextensions.k8s.io": {Group: "apiextensions.k8s.io", Version: "v1", GroupPriorityMinimum: 16700, VersionPriority: 15},
		// Not in upstream's table: listed after the known groups.
		"v1.new.k8s.io": {Group: "new.k8s.io", Version: "v1", GroupPriorityMinimum: 15000, VersionPriority: 9},
	}
	if len(got) != len(want) {
		t.Errorf("APIServices %v, want %v", got, want)
	}
	for name, spec := range want {
		if !reflect.DeepEqual(got[name], spec) {
			t.Errorf("%s: %+v, want %+v", name, got[name], spec)
		}
	}
}

// registrations records what crdAPIServices hands the autoregister
// controller.
type registrations struct {
	want map[string]*apiregistrationv1.APIService
}

func (r *registrations) AddAPIServiceToSyncOnStart(in *apiregistrationv1.APIService) {
	r.want[in.Name] = in
}
func (r *registrations) AddAPIServiceToSync(in *apiregistrationv1.APIService) { r.want[in.Name] = in }
func (r *registrations) RemoveAPIServiceToSync(name string)                   { delete(r.want, name) }

type crdList []*apiextensionsv1.CustomResourceDefinition

func (l *crdList) List(labels.Selector) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return *l, nil
}

func TestCRDAPIServices(t *testing.T) {
	crd := func(group string, versions map[string]bool) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "x." + group}, Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group}}
		for v, served := range versions {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: served})
		}
		return c
	}
	crds := &crdList{
		crd("a.example.com", map[string]bool{"v1": true, "v1beta1": false}),
		crd("b.example.com", map[string]bool{"v1": true}),
	}
	reg := &registrations{want: map[string]*apiregistrationv1.APIService{}}
	c := &crdAPIServices{lister: crds, reg: reg, known: sets.New[string]()}
	c.sync()
	names := func() []string {
		var out []string
		for n := range reg.want {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"v1.a.example.com", "v1.b.example.com"}) {
		t.Fatalf("registered %v", got)
	}
	if s := reg.want["v1.a.example.com"].Spec; s.GroupPriorityMinimum != 1000 || s.VersionPriority != 100 || s.Service != nil {
		t.Errorf("CRD APIService spec %+v", s)
	}
	// b's CRD goes, a's v1beta1 is served.
	*crds = crdList{crd("a.example.com", map[string]bool{"v1": true, "v1beta1": true})}
	c.sync()
	if got := names(); !slices.Equal(got, []string{"v1.a.example.com", "v1beta1.a.example.com"}) {
		t.Errorf("after the change: %v", got)
	}
}

func TestWaitAvailable(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	informer := cache.NewSharedIndexInformer(source, &apiregistrationv1.APIService{}, 0, cache.Indexers{})
	w := waitAvailable(informer, []string{"v1.", "v1.apps"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Run(ctx.Done())

	svc := func(name string, status apiregistrationv1.ConditionStatus) *apiregistrationv1.APIService {
		return &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: apiregistrationv1.APIServiceStatus{
			Conditions: []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: status}},
		}}
	}
	source.Add(svc("v1.", apiregistrationv1.ConditionTrue))
	source.Add(svc("v1.apps", apiregistrationv1.ConditionFalse))
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(w.Pending(), []string{"v1.apps"}), nil
	}); err != nil {
		t.Fatalf("pending %v, want [v1.apps]", w.Pending())
	}
	select {
	case <-w.Done():
		t.Fatal("done while v1.apps is not Available")
	default:
	}
	source.Modify(svc("v1.apps", apiregistrationv1.ConditionTrue))
	select {
	case <-w.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("not done; pending %v", w.Pending())
	}
	// Nothing to wait for: done at once.
	select {
	case <-waitAvailable(informer, nil).Done():
	default:
		t.Error("a waiter for nothing is not done")
	}
}
