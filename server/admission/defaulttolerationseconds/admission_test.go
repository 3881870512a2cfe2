package defaulttolerationseconds

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

func podAttrs(obj runtime.Object, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "p",
		corev1.SchemeGroupVersion.WithResource("pods"), subresource, admission.Create, &metav1.CreateOptions{}, false, nil)
}

func notReady(s int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(s)}
}

func unreachable(s int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(s)}
}

func TestAdmit(t *testing.T) {
	noSchedule := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		cfg    Config
		in     []corev1.Toleration
		expect []corev1.Toleration
	}{
		{
			name:   "none present: both added with defaults",
			cfg:    DefaultConfig(),
			expect: []corev1.Toleration{notReady(300), unreachable(300)},
		},
		{
			name:   "configured seconds",
			cfg:    Config{NotReadyTolerationSeconds: 60, UnreachableTolerationSeconds: 120},
			expect: []corev1.Toleration{notReady(60), unreachable(120)},
		},
		{
			name:   "not-ready already tolerated keeps user seconds",
			cfg:    DefaultConfig(),
			in:     []corev1.Toleration{notReady(10)},
			expect: []corev1.Toleration{notReady(10), unreachable(300)},
		},
		{
			name:   "both already tolerated: untouched",
			cfg:    DefaultConfig(),
			in:     []corev1.Toleration{unreachable(5), notReady(7)},
			expect: []corev1.Toleration{unreachable(5), notReady(7)},
		},
		{
			name:   "NoSchedule toleration does not count",
			cfg:    DefaultConfig(),
			in:     []corev1.Toleration{noSchedule},
			expect: []corev1.Toleration{noSchedule, notReady(300), unreachable(300)},
		},
		{
			name:   "tolerate-everything toleration covers both",
			cfg:    DefaultConfig(),
			in:     []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			expect: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		{
			name:   "empty key with NoExecute covers both",
			cfg:    DefaultConfig(),
			in:     []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			expect: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
		{
			name:   "key with empty effect covers that key only",
			cfg:    DefaultConfig(),
			in:     []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}},
			expect: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}, notReady(300)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Tolerations: tc.in}}
			if err := p.Admit(context.Background(), podAttrs(pod, ""), nil); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec.Tolerations, tc.expect) {
				t.Errorf("tolerations = %+v, want %+v", pod.Spec.Tolerations, tc.expect)
			}
		})
	}
}

func TestAdmitIgnoresOthers(t *testing.T) {
	p, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if err := p.Admit(context.Background(), podAttrs(pod, "status"), nil); err != nil {
		t.Fatalf("Admit subresource: %v", err)
	}
	if len(pod.Spec.Tolerations) != 0 {
		t.Errorf("subresource request changed tolerations: %+v", pod.Spec.Tolerations)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	a := admission.NewAttributesRecord(svc, nil, corev1.SchemeGroupVersion.WithKind("Service"), "ns", "s",
		corev1.SchemeGroupVersion.WithResource("services"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := p.Admit(context.Background(), a, nil); err != nil {
		t.Errorf("Admit service: %v", err)
	}

	// A pods request carrying a non-pod object is a bad request.
	if err := p.Admit(context.Background(), podAttrs(svc, ""), nil); !apierrors.IsBadRequest(err) {
		t.Errorf("Admit wrong type: got %v, want BadRequest", err)
	}
}

func TestAddedTolerationsAreNotShared(t *testing.T) {
	p, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
	for _, pod := range []*corev1.Pod{a, b} {
		if err := p.Admit(context.Background(), podAttrs(pod, ""), nil); err != nil {
			t.Fatal(err)
		}
	}
	*a.Spec.Tolerations[0].TolerationSeconds = 1
	if got := *b.Spec.Tolerations[0].TolerationSeconds; got != 300 {
		t.Errorf("pods share tolerationSeconds: b has %d after changing a", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg     Config
		wantErr string
	}{
		{cfg: DefaultConfig()},
		{cfg: Config{}},
		{cfg: Config{NotReadyTolerationSeconds: -1}, wantErr: "--default-not-ready-toleration-seconds must not be negative, got -1"},
		{cfg: Config{UnreachableTolerationSeconds: -2}, wantErr: "--default-unreachable-toleration-seconds must not be negative, got -2"},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tc.cfg, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.wantErr)
		}
		if _, err := New(tc.cfg); (err != nil) != (tc.wantErr != "") {
			t.Errorf("New(%+v) error %v", tc.cfg, err)
		}
	}
}
