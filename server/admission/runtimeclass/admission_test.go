package runtimeclass

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// newPlugin returns a plugin whose synced informer holds inInformer and
// whose client also knows onlyInClient.
func newPlugin(t *testing.T, inInformer []*nodev1.RuntimeClass, onlyInClient ...*nodev1.RuntimeClass) *Plugin {
	t.Helper()
	var objs []runtime.Object
	for _, c := range inInformer {
		objs = append(objs, c)
	}
	informerClient := fake.NewClientset(objs...)
	for _, c := range onlyInClient {
		objs = append(objs, c)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(informerClient, 0)
	p, err := New(client, factory)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func attrs(pod *corev1.Pod, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "p",
		corev1.SchemeGroupVersion.WithResource("pods"), subresource, admission.Create, nil, false, nil)
}

var overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")}

func TestAdmit(t *testing.T) {
	withOverhead := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: overhead}}
	scheduled := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Handler: "runc", Scheduling: &nodev1.Scheduling{
		NodeSelector: map[string]string{"gpu": "true"},
		Tolerations: []corev1.Toleration{
			{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "yes"},
		},
	}}
	plain := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"}
	late := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Handler: "runc", Overhead: &nodev1.Overhead{PodFixed: overhead}}
	p := newPlugin(t, []*nodev1.RuntimeClass{withOverhead, scheduled, plain}, late)

	tests := []struct {
		name      string
		pod       corev1.PodSpec
		wantErr   string
		check     func(t *testing.T, s corev1.PodSpec)
		forbidden bool
	}{
		{name: "no class", pod: corev1.PodSpec{}, check: func(t *testing.T, s corev1.PodSpec) {
			if s.Overhead != nil || s.NodeSelector != nil {
				t.Errorf("spec changed: %+v", s)
			}
		}},
		{name: "overhead set", pod: corev1.PodSpec{RuntimeClassName: ptr.To("kata")}, check: func(t *testing.T, s corev1.PodSpec) {
			if q := s.Overhead[corev1.ResourceCPU]; q.Cmp(resource.MustParse("10m")) != 0 {
				t.Errorf("overhead = %v", s.Overhead)
			}
		}},
		{name: "class read from the apiserver when the informer lags", pod: corev1.PodSpec{RuntimeClassName: ptr.To("late")}, check: func(t *testing.T, s corev1.PodSpec) {
			if len(s.Overhead) != 2 {
				t.Errorf("overhead = %v", s.Overhead)
			}
		}},
		{name: "same overhead given", pod: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Overhead: overhead.DeepCopy()}},
		{name: "other overhead given", pod: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			wantErr: "doesn't match", forbidden: true},
		{name: "scheduling merged", pod: corev1.PodSpec{RuntimeClassName: ptr.To("gpu"), NodeSelector: map[string]string{"zone": "a"},
			Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}},
			check: func(t *testing.T, s corev1.PodSpec) {
				if s.NodeSelector["gpu"] != "true" || s.NodeSelector["zone"] != "a" {
					t.Errorf("nodeSelector = %v", s.NodeSelector)
				}
				// spot=yes is covered by the pod's spot Exists.
				if len(s.Tolerations) != 2 || s.Tolerations[0].Key != "spot" || s.Tolerations[1].Key != "gpu" {
					t.Errorf("tolerations = %+v", s.Tolerations)
				}
			}},
		{name: "scheduling conflict", pod: corev1.PodSpec{RuntimeClassName: ptr.To("gpu"), NodeSelector: map[string]string{"gpu": "false"}},
			wantErr: "conflict", forbidden: true},
		{name: "class without overhead or scheduling", pod: corev1.PodSpec{RuntimeClassName: ptr.To("plain")}, check: func(t *testing.T, s corev1.PodSpec) {
			if s.Overhead != nil || s.NodeSelector != nil || s.Tolerations != nil {
				t.Errorf("spec changed: %+v", s)
			}
		}},
		{name: "missing class", pod: corev1.PodSpec{RuntimeClassName: ptr.To("nope")}, wantErr: `RuntimeClass "nope" not found`, forbidden: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: tc.pod}
			err := p.Admit(context.Background(), attrs(pod, ""), nil)
			if err == nil {
				err = p.Validate(context.Background(), attrs(pod, ""), nil)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if tc.forbidden && !apierrors.IsForbidden(err) {
					t.Errorf("err %v is not Forbidden", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, pod.Spec)
			}
		})
	}
}

func TestValidateOverheadWithoutClass(t *testing.T) {
	p := newPlugin(t, nil)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Overhead: overhead.DeepCopy()}}
	if err := p.Validate(context.Background(), attrs(pod, ""), nil); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("overhead without a class: err = %v", err)
	}
	// Subresources are not this plugin's.
	if err := p.Validate(context.Background(), attrs(pod, "status"), nil); err != nil {
		t.Errorf("status subresource: %v", err)
	}
}

func TestMergeTolerations(t *testing.T) {
	sec := func(s int64) *int64 { return &s }
	tests := []struct {
		name          string
		first, second []corev1.Toleration
		want          []string
	}{
		{name: "disjoint", first: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}, second: []corev1.Toleration{{Key: "b", Operator: corev1.TolerationOpExists}}, want: []string{"a", "b"}},
		{name: "duplicate", first: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}, second: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}, want: []string{"a"}},
		{name: "wildcard covers all", first: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpEqual, Value: "x"}}, second: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, want: []string{""}},
		{name: "shorter tolerationSeconds is covered", first: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: sec(10)}},
			second: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: sec(60)}}, want: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeTolerations(tc.first, tc.second)
			var keys []string
			for _, tol := range got {
				keys = append(keys, tol.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tc.want, ",") {
				t.Errorf("merged keys = %q, want %q (%+v)", keys, tc.want, got)
			}
		})
	}
}
