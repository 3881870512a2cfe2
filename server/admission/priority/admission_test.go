package priority

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// newPlugin returns a plugin whose synced informer holds classes.
func newPlugin(t *testing.T, cfg Config, classes ...*schedulingv1.PriorityClass) *Plugin {
	t.Helper()
	objs := make([]runtime.Object, 0, len(classes))
	for _, c := range classes {
		objs = append(objs, c)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(factory, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func class(name string, value int32, globalDefault bool, policy *corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault, PreemptionPolicy: policy}
}

func podAttrs(pod, old *corev1.Pod, op admission.Operation) admission.Attributes {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	return admission.NewAttributesRecord(pod, oldObj, corev1.SchemeGroupVersion.WithKind("Pod"), pod.Namespace, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", op, nil, false, nil)
}

func TestAdmitPodCreate(t *testing.T) {
	never := ptr.To(corev1.PreemptNever)
	lower := ptr.To(corev1.PreemptLowerPriority)
	high := class("high", 1000, false, nil)
	neverClass := class("batch", 10, false, never)
	default1 := class("default1", 50, true, nil)
	default2 := class("default2", 20, true, never)

	tests := []struct {
		name       string
		cfg        Config
		classes    []*schedulingv1.PriorityClass
		namespace  string
		className  string
		priority   *int32
		policy     *corev1.PreemptionPolicy
		wantErr    string
		wantClass  string
		wantPrio   int32
		wantPolicy *corev1.PreemptionPolicy
	}{
		{name: "named class resolved", classes: []*schedulingv1.PriorityClass{high}, className: "high", wantClass: "high", wantPrio: 1000},
		{name: "class preemption policy copied", classes: []*schedulingv1.PriorityClass{neverClass}, className: "batch", wantClass: "batch", wantPrio: 10, wantPolicy: never},
		{name: "no class, no default: zero and PreemptLowerPriority", classes: []*schedulingv1.PriorityClass{high}, wantPrio: 0, wantPolicy: lower},
		{name: "no class: global default used", classes: []*schedulingv1.PriorityClass{high, default1}, wantClass: "default1", wantPrio: 50},
		{name: "several defaults: lowest value wins", classes: []*schedulingv1.PriorityClass{default1, default2}, wantClass: "default2", wantPrio: 20, wantPolicy: never},
		{name: "unknown class rejected", classes: []*schedulingv1.PriorityClass{high}, className: "nope", wantErr: "no PriorityClass with name nope was found"},
		{name: "matching explicit priority accepted", classes: []*schedulingv1.PriorityClass{high}, className: "high", priority: ptr.To[int32](1000), wantClass: "high", wantPrio: 1000},
		{
			name: "explicit priority differing rejected", classes: []*schedulingv1.PriorityClass{high}, className: "high", priority: ptr.To[int32](5),
			wantErr: "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name",
		},
		{
			name: "explicit priority without class or default rejected", priority: ptr.To[int32](7),
			wantErr: "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0",
		},
		{
			name: "explicit preemption policy differing rejected", classes: []*schedulingv1.PriorityClass{neverClass}, className: "batch", policy: lower,
			wantErr: "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never",
		},
		{name: "explicit policy kept when class has none", classes: []*schedulingv1.PriorityClass{high}, className: "high", policy: never, wantClass: "high", wantPrio: 1000, wantPolicy: never},
		{name: "system class allowed anywhere by default", classes: SystemPriorityClasses(), namespace: "apps", className: SystemClusterCritical, wantClass: SystemClusterCritical, wantPrio: 2000000000},
		{name: "node critical value", classes: SystemPriorityClasses(), className: SystemNodeCritical, wantClass: SystemNodeCritical, wantPrio: 2000001000},
		{
			name: "system class outside allowed namespaces rejected", cfg: Config{SystemCriticalNamespaces: []string{"kube-system"}},
			classes: SystemPriorityClasses(), namespace: "apps", className: SystemNodeCritical,
			wantErr: "pods with system-node-critical priorityClass is not permitted in apps namespace",
		},
		{
			name: "system class in allowed namespace", cfg: Config{SystemCriticalNamespaces: []string{"kube-system"}},
			classes: SystemPriorityClasses(), namespace: "kube-system", className: SystemClusterCritical,
			wantClass: SystemClusterCritical, wantPrio: SystemCriticalPriority,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.cfg, tc.classes...)
			ns := tc.namespace
			if ns == "" {
				ns = "default"
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
				Spec:       corev1.PodSpec{PriorityClassName: tc.className, Priority: tc.priority, PreemptionPolicy: tc.policy},
			}
			err := p.Admit(context.Background(), podAttrs(pod, nil, admission.Create), nil)
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want Forbidden containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if pod.Spec.PriorityClassName != tc.wantClass {
				t.Errorf("priorityClassName = %q, want %q", pod.Spec.PriorityClassName, tc.wantClass)
			}
			if pod.Spec.Priority == nil || *pod.Spec.Priority != tc.wantPrio {
				t.Errorf("priority = %v, want %d", ptr.Deref(pod.Spec.Priority, -1), tc.wantPrio)
			}
			if !equalPolicy(pod.Spec.PreemptionPolicy, tc.wantPolicy) {
				t.Errorf("preemptionPolicy = %v, want %v", pod.Spec.PreemptionPolicy, tc.wantPolicy)
			}
		})
	}
}

func equalPolicy(a, b *corev1.PreemptionPolicy) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestAdmitPodUpdateKeepsResolvedValues(t *testing.T) {
	p := newPlugin(t, Config{})
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PodSpec{PriorityClassName: "x", Priority: ptr.To[int32](42), PreemptionPolicy: ptr.To(corev1.PreemptNever)}}
	pod := old.DeepCopy()
	pod.Spec.Priority = nil
	pod.Spec.PreemptionPolicy = nil
	if err := p.Admit(context.Background(), podAttrs(pod, old, admission.Update), nil); err != nil {
		t.Fatalf("Admit update: %v", err)
	}
	if ptr.Deref(pod.Spec.Priority, -1) != 42 || !equalPolicy(pod.Spec.PreemptionPolicy, ptr.To(corev1.PreemptNever)) {
		t.Errorf("update lost resolved values: priority %v policy %v", pod.Spec.Priority, pod.Spec.PreemptionPolicy)
	}
	// An update naming an unknown class is not resolved again.
	pod.Spec.PriorityClassName = "unknown"
	if err := p.Admit(context.Background(), podAttrs(pod, old, admission.Update), nil); err != nil {
		t.Errorf("Admit update with unknown class: %v", err)
	}
}

func TestValidatePriorityClass(t *testing.T) {
	existingDefault := class("existing", 100, true, nil)
	tests := []struct {
		name     string
		existing []*schedulingv1.PriorityClass
		op       admission.Operation
		in       *schedulingv1.PriorityClass
		wantErr  string
	}{
		{name: "first default", existing: []*schedulingv1.PriorityClass{class("a", 1, false, nil)}, op: admission.Create, in: class("d", 5, true, nil)},
		{name: "second default on create", existing: []*schedulingv1.PriorityClass{existingDefault}, op: admission.Create, in: class("d", 5, true, nil),
			wantErr: "PriorityClass existing is already marked as default. Only one default can exist"},
		{name: "non-default next to default", existing: []*schedulingv1.PriorityClass{existingDefault}, op: admission.Create, in: class("d", 5, false, nil)},
		{name: "update of the default itself", existing: []*schedulingv1.PriorityClass{existingDefault}, op: admission.Update, in: class("existing", 100, true, nil)},
		{name: "update marking another default", existing: []*schedulingv1.PriorityClass{existingDefault, class("other", 1, false, nil)}, op: admission.Update, in: class("other", 1, true, nil),
			wantErr: "PriorityClass existing is already marked as default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, Config{}, tc.existing...)
			var old runtime.Object
			if tc.op == admission.Update {
				old = tc.in.DeepCopy()
			}
			a := admission.NewAttributesRecord(tc.in, old, schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), "", tc.in.Name,
				schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), "", tc.op, nil, false, nil)
			err := p.Validate(context.Background(), a, nil)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tc.wantErr != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want Forbidden containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSystemPriorityClasses(t *testing.T) {
	got := map[string]int32{}
	for _, pc := range SystemPriorityClasses() {
		got[pc.Name] = pc.Value
		if pc.GlobalDefault {
			t.Errorf("%s is globalDefault", pc.Name)
		}
	}
	want := map[string]int32{"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
	if len(got) != len(want) || got["system-cluster-critical"] != want["system-cluster-critical"] || got["system-node-critical"] != want["system-node-critical"] {
		t.Errorf("SystemPriorityClasses = %v, want %v", got, want)
	}
	// Callers get copies.
	SystemPriorityClasses()[0].Value = 1
	if SystemPriorityClasses()[0].Value == 1 {
		t.Error("SystemPriorityClasses returns shared objects")
	}
}

func TestIsKnownSystemPriorityClass(t *testing.T) {
	tests := []struct {
		name    string
		value   int32
		def     bool
		want    bool
		wantErr string
	}{
		{name: SystemNodeCritical, value: 2000001000, want: true},
		{name: SystemClusterCritical, value: 2000000000, want: true},
		{name: SystemClusterCritical, value: 5, wantErr: "value of system-cluster-critical PriorityClass must be 2000000000"},
		{name: SystemNodeCritical, value: 2000001000, def: true, wantErr: "globalDefault of system-node-critical PriorityClass must be false"},
		{name: "system-other", value: 1, wantErr: "system-other is not a known system priority class"},
	}
	for _, tc := range tests {
		got, err := IsKnownSystemPriorityClass(tc.name, tc.value, tc.def)
		if got != tc.want {
			t.Errorf("%s/%d: got %v, want %v", tc.name, tc.value, got, tc.want)
		}
		if (tc.wantErr == "") != (err == nil) || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("%s/%d: error %v, want %q", tc.name, tc.value, err, tc.wantErr)
		}
	}
}

func TestIgnoresOtherRequests(t *testing.T) {
	p := newPlugin(t, Config{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{PriorityClassName: "unknown"}}
	status := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), "default", "p",
		corev1.SchemeGroupVersion.WithResource("pods"), "status", admission.Create, nil, false, nil)
	if err := p.Admit(context.Background(), status, nil); err != nil {
		t.Errorf("subresource: %v", err)
	}
	if pod.Spec.Priority != nil {
		t.Error("subresource request resolved priority")
	}
}
