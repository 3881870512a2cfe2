package resourcequota

import (
	"context"
	k1squota "github.com/k1s/k1s/internal/quota"
	"github.com/k1s/k1s/internal/quota/quotatest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	quotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

const ns = "team"

func resourceQuota(name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

// newAdmission assembles the plugin over a fake API holding objs, with its
// informer synced.
func newAdmission(t *testing.T, limits *quotaapi.Configuration, objs ...runtime.Object) (admission.ValidationInterface, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	drained := make(chan struct{})
	plugin, err := NewAdmission(client, factory, k1squota.NewConfiguration(k1squota.NewRegistry(nil)), limits, drained)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		close(drained)
		factory.Shutdown()
	})
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v did not sync", typ)
		}
	}
	return plugin, client
}

func createPod(pod *corev1.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), ns, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

func smallPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "64Mi"))}},
	}
}

func TestAdmission(t *testing.T) {
	tests := []struct {
		name     string
		quotas   []*corev1.ResourceQuota
		attrs    admission.Attributes
		wantErr  string
		wantUsed map[string]corev1.ResourceList // quota name -> status.used written
	}{
		{
			name:    "pod count exceeded",
			quotas:  []*corev1.ResourceQuota{resourceQuota("compute", rl("pods", "1"), rl("pods", "1"))},
			attrs:   createPod(smallPod("p")),
			wantErr: "exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1",
		},
		{
			name:    "cpu limit exceeded",
			quotas:  []*corev1.ResourceQuota{resourceQuota("compute", rl("limits.cpu", "1", "pods", "10"), rl("limits.cpu", "900m", "pods", "3"))},
			attrs:   createPod(smallPod("p")),
			wantErr: "exceeded quota: compute, requested: limits.cpu=200m, used: limits.cpu=900m, limited: limits.cpu=1",
		},
		{
			name:     "within quota: usage charged",
			quotas:   []*corev1.ResourceQuota{resourceQuota("compute", rl("pods", "2", "requests.cpu", "1", "limits.memory", "1Gi"), rl("pods", "1", "requests.cpu", "100m", "limits.memory", "0"))},
			attrs:    createPod(smallPod("p")),
			wantUsed: map[string]corev1.ResourceList{"compute": rl("pods", "2", "requests.cpu", "200m", "limits.memory", "64Mi")},
		},
		{
			name:    "container without the limit a quota tracks",
			quotas:  []*corev1.ResourceQuota{resourceQuota("compute", rl("limits.cpu", "4"), rl("limits.cpu", "0"))},
			attrs:   createPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}),
			wantErr: "failed quota: compute: must specify limits.cpu for: a",
		},
		{
			name:    "quota without usage status",
			quotas:  []*corev1.ResourceQuota{resourceQuota("compute", rl("pods", "5"), nil)},
			attrs:   createPod(smallPod("p")),
			wantErr: "status unknown for quota: compute, resources: pods",
		},
		{
			name: "scoped quota not matching the pod is ignored",
			quotas: []*corev1.ResourceQuota{func() *corev1.ResourceQuota {
				q := resourceQuota("besteffort", rl("pods", "0"), rl("pods", "0"))
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
				return q
			}()},
			attrs: createPod(smallPod("p")),
		},
		{
			name:   "object count with legacy name",
			quotas: []*corev1.ResourceQuota{resourceQuota("objects", rl("configmaps", "2"), rl("configmaps", "2"))},
			attrs: admission.NewAttributesRecord(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}}, nil,
				corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, "c", corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, nil, false, nil),
			wantErr: "exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2",
		},
		{
			name:   "object count of a grouped resource",
			quotas: []*corev1.ResourceQuota{resourceQuota("objects", rl("count/deployments.apps", "3"), rl("count/deployments.apps", "1"))},
			attrs: admission.NewAttributesRecord(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns}}, nil,
				appsv1.SchemeGroupVersion.WithKind("Deployment"), ns, "d", appsv1.SchemeGroupVersion.WithResource("deployments"), "", admission.Create, nil, false, nil),
			wantUsed: map[string]corev1.ResourceList{"objects": rl("count/deployments.apps", "2")},
		},
		{
			name:   "resource admission has no evaluator for is counted",
			quotas: []*corev1.ResourceQuota{resourceQuota("objects", rl("count/widgets.example.com", "1"), rl("count/widgets.example.com", "1"))},
			attrs: admission.NewAttributesRecord(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}}, nil,
				schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, ns, "w",
				schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "", admission.Create, nil, false, nil),
			wantErr: "exceeded quota: objects, requested: count/widgets.example.com=1",
		},
		{
			name:   "services node ports",
			quotas: []*corev1.ResourceQuota{resourceQuota("net", rl("services.nodeports", "1"), rl("services.nodeports", "0"))},
			attrs: admission.NewAttributesRecord(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}}, nil,
				corev1.SchemeGroupVersion.WithKind("Service"), ns, "s", corev1.SchemeGroupVersion.WithResource("services"), "", admission.Create, nil, false, nil),
			wantErr: "exceeded quota: net, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1",
		},
		{
			name:    "quota whose scope selector cannot be evaluated: a pod it could cover is forbidden, naming it",
			quotas:  []*corev1.ResourceQuota{badSelectorQuota(corev1.ScopeSelectorOpNotIn)},
			attrs:   createPod(smallPod("p")),
			wantErr: `resource quota "bad-selector" cannot be evaluated, fix or delete it: spec.scopeSelector.matchExpressions.values[0]: Invalid value: "not a label value!"`,
		},
		{
			name:   "quota whose scope selector cannot be evaluated: a pod it cannot cover is admitted",
			quotas: []*corev1.ResourceQuota{badSelectorQuota(corev1.ScopeSelectorOpIn)},
			attrs:  createPod(smallPod("p")),
		},
		{
			name:   "events are ignored",
			quotas: []*corev1.ResourceQuota{resourceQuota("objects", rl("count/events", "0"), rl("count/events", "0"))},
			attrs: admission.NewAttributesRecord(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns}}, nil,
				corev1.SchemeGroupVersion.WithKind("Event"), ns, "e", corev1.SchemeGroupVersion.WithResource("events"), "", admission.Create, nil, false, nil),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := make([]runtime.Object, 0, len(tc.quotas))
			for _, q := range tc.quotas {
				objs = append(objs, q)
			}
			plugin, client := newAdmission(t, nil, objs...)
			client.ClearActions()
			err := plugin.Validate(context.Background(), tc.attrs, nil)
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want Forbidden containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			for name, want := range tc.wantUsed {
				got, err := client.CoreV1().ResourceQuotas(ns).Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				assertUsage(t, got.Status.Used, want)
			}
			if len(tc.wantUsed) == 0 {
				for _, a := range client.Actions() {
					if a.GetVerb() == "update" {
						t.Errorf("unexpected quota write: %v", a)
					}
				}
			}
		})
	}
}

// badSelectorQuota is a pods quota whose scope selector holds a value that
// is no label value (validation refuses it; this one is already stored).
func badSelectorQuota(op corev1.ScopeSelectorOperator) *corev1.ResourceQuota {
	q := resourceQuota("bad-selector", rl("pods", "10"), rl("pods", "0"))
	q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: []string{"not a label value!"},
	}}}
	return q
}

func TestAdmissionLimitedPriorityClass(t *testing.T) {
	limits := &quotaapi.Configuration{LimitedResources: []quotaapi.LimitedResource{LimitPriorityClasses("system-node-critical")}}
	critical := smallPod("c")
	critical.Spec.PriorityClassName = "system-node-critical"

	// No quota covers the class: rejected.
	plugin, _ := newAdmission(t, limits)
	err := plugin.Validate(context.Background(), createPod(critical), nil)
	if err == nil || !strings.Contains(err.Error(), "insufficient quota to match these scopes") {
		t.Fatalf("error = %v, want insufficient quota to match these scopes", err)
	}
	// Other pods are unaffected.
	if err := plugin.Validate(context.Background(), createPod(smallPod("p")), nil); err != nil {
		t.Fatalf("ordinary pod: %v", err)
	}

	// A quota selecting the class admits it.
	covering := resourceQuota("critical", rl("pods", "10"), rl("pods", "0"))
	covering.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"system-node-critical"},
	}}}
	plugin, _ = newAdmission(t, limits, covering)
	if err := plugin.Validate(context.Background(), createPod(critical), nil); err != nil {
		t.Fatalf("covered critical pod: %v", err)
	}
}

func TestNewAdmissionValidatesArguments(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	cfg := k1squota.NewConfiguration(k1squota.NewRegistry(nil))
	drained := make(chan struct{})
	defer close(drained)
	if _, err := NewAdmission(client, factory, cfg, nil, nil); err == nil {
		t.Error("NewAdmission without drained channel succeeded")
	}
	bad := &quotaapi.Configuration{LimitedResources: []quotaapi.LimitedResource{{Resource: ""}}}
	if _, err := NewAdmission(client, factory, cfg, bad, drained); err == nil {
		t.Error("NewAdmission with an invalid limited resource succeeded")
	}
}

var (
	rl          = quotatest.RL
	container   = quotatest.Container
	assertUsage = quotatest.AssertUsage
)
