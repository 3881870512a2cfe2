package daemonset

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

func TestNodeShouldRunDaemonPod(t *testing.T) {
	taint := func(key string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Effect: effect}
	}
	affinity := func(op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: values}}}},
		}}}
	}
	tests := []struct {
		name         string
		spec         func(*corev1.PodSpec)
		nodeLabels   map[string]string
		taints       []corev1.Taint
		wantRun      bool
		wantContinue bool
	}{
		{name: "plain node", wantRun: true, wantContinue: true},
		{
			name:       "nodeSelector matches",
			spec:       func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} },
			nodeLabels: map[string]string{"disk": "ssd"},
			wantRun:    true, wantContinue: true,
		},
		{
			name:       "nodeSelector does not match",
			spec:       func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} },
			nodeLabels: map[string]string{"disk": "hdd"},
		},
		{
			name:       "required node affinity matches",
			spec:       func(s *corev1.PodSpec) { s.Affinity = affinity(corev1.NodeSelectorOpIn, "a", "b") },
			nodeLabels: map[string]string{"zone": "b"},
			wantRun:    true, wantContinue: true,
		},
		{
			name:       "required node affinity does not match",
			spec:       func(s *corev1.PodSpec) { s.Affinity = affinity(corev1.NodeSelectorOpNotIn, "b") },
			nodeLabels: map[string]string{"zone": "b"},
		},
		{
			name: "template nodeName names another node",
			spec: func(s *corev1.PodSpec) { s.NodeName = "other" },
		},
		{
			name:    "template nodeName names this node",
			spec:    func(s *corev1.PodSpec) { s.NodeName = "n1" },
			wantRun: true, wantContinue: true,
		},
		{
			name:         "untolerated NoSchedule keeps new pods off but lets running ones stay",
			taints:       []corev1.Taint{taint("dedicated", corev1.TaintEffectNoSchedule)},
			wantContinue: true,
		},
		{
			name:   "untolerated NoExecute drives pods away",
			taints: []corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute)},
		},
		{
			name:    "PreferNoSchedule is ignored",
			taints:  []corev1.Taint{taint("dedicated", corev1.TaintEffectPreferNoSchedule)},
			wantRun: true, wantContinue: true,
		},
		{
			name: "taint tolerated by the template",
			spec: func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			},
			taints:  []corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute)},
			wantRun: true, wantContinue: true,
		},
		{
			name: "node problems are tolerated by every daemon pod",
			taints: []corev1.Taint{
				taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
				taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
				taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
			},
			// The not-ready and unreachable NoSchedule taints are not among
			// the daemon tolerations: running pods stay, no new ones start.
			wantContinue: true,
		},
		{
			name: "condition taints alone are tolerated",
			taints: []corev1.Taint{
				taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
				taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
				taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
				taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
			},
			wantRun: true, wantContinue: true,
		},
		{
			name:         "network-unavailable keeps pod-network pods off",
			taints:       []corev1.Taint{taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)},
			wantContinue: true,
		},
		{
			name:    "network-unavailable is tolerated by host-network pods",
			spec:    func(s *corev1.PodSpec) { s.HostNetwork = true },
			taints:  []corev1.Taint{taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)},
			wantRun: true, wantContinue: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS("ds")
			if tt.spec != nil {
				tt.spec(&ds.Spec.Template.Spec)
			}
			before := ds.DeepCopy()
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: tt.nodeLabels}, Spec: corev1.NodeSpec{Taints: tt.taints}}
			run, cont := NodeShouldRunDaemonPod(klog.Background(), n, ds)
			if run != tt.wantRun || cont != tt.wantContinue {
				t.Errorf("shouldRun, shouldContinueRunning = %v, %v; want %v, %v", run, cont, tt.wantRun, tt.wantContinue)
			}
			if !reflect.DeepEqual(before, ds) {
				t.Errorf("the DaemonSet was modified")
			}
		})
	}
}

func TestAddDaemonTolerations(t *testing.T) {
	spec := &corev1.PodSpec{Tolerations: []corev1.Toleration{
		{Key: "custom", Operator: corev1.TolerationOpExists},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}}
	addDaemonTolerations(spec)
	want := []corev1.Toleration{
		{Key: "custom", Operator: corev1.TolerationOpExists},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if !reflect.DeepEqual(spec.Tolerations, want) {
		t.Errorf("tolerations =\n%+v\nwant\n%+v", spec.Tolerations, want)
	}
	// Idempotent.
	addDaemonTolerations(spec)
	if !reflect.DeepEqual(spec.Tolerations, want) {
		t.Errorf("second call changed the tolerations: %+v", spec.Tolerations)
	}
	hn := &corev1.PodSpec{HostNetwork: true}
	addDaemonTolerations(hn)
	last := hn.Tolerations[len(hn.Tolerations)-1]
	if len(hn.Tolerations) != 7 || last.Key != corev1.TaintNodeNetworkUnavailable || last.Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("host-network tolerations = %+v, want the six plus network-unavailable", hn.Tolerations)
	}
}

func TestBindToNodeAndTargetNode(t *testing.T) {
	withTerms := &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}},
		}},
		PodAntiAffinity: &corev1.PodAntiAffinity{},
	}
	for _, in := range []*corev1.Affinity{nil, {}, withTerms} {
		got := bindToNode(in.DeepCopy(), "n7")
		terms := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		want := []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n7"}}}}}
		if !reflect.DeepEqual(terms, want) {
			t.Errorf("bindToNode(%v) terms = %+v, want %+v", in, terms, want)
		}
		if in == withTerms && got.PodAntiAffinity == nil {
			t.Errorf("bindToNode dropped the pod anti-affinity")
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: got}}
		if n, err := targetNode(pod); err != nil || n != "n7" {
			t.Errorf("targetNode = %q, %v; want n7", n, err)
		}
	}
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2", Affinity: bindToNode(nil, "n7")}}
	if n, _ := targetNode(bound); n != "n2" {
		t.Errorf("targetNode of a bound pod = %q, want its nodeName n2", n)
	}
	if _, err := targetNode(&corev1.Pod{}); err == nil {
		t.Errorf("targetNode of a pod with neither node name nor affinity succeeded")
	}
	two := &corev1.Pod{Spec: corev1.PodSpec{Affinity: bindToNode(nil, "a")}}
	two.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values = []string{"a", "b"}
	if _, err := targetNode(two); err == nil {
		t.Errorf("targetNode with two node names succeeded")
	}
}

func TestPodTemplate(t *testing.T) {
	ds := newDS("ds")
	ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "4"}
	tmpl := podTemplate(ds, "abc")
	if tmpl.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "abc" || tmpl.Labels[TemplateGenerationLabel] != "4" || tmpl.Labels["app"] != "ds" {
		t.Errorf("labels = %v", tmpl.Labels)
	}
	if len(tmpl.Spec.Tolerations) != 6 {
		t.Errorf("tolerations = %v, want the six daemon tolerations", tmpl.Spec.Tolerations)
	}
	if len(ds.Spec.Template.Spec.Tolerations) != 0 || len(ds.Spec.Template.Labels) != 1 {
		t.Errorf("the DaemonSet's template was modified")
	}
	gen := int64(4)
	for _, tt := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: "abc"}, true},
		{map[string]string{TemplateGenerationLabel: "4"}, true},
		{map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: "old", TemplateGenerationLabel: "3"}, false},
	} {
		if got := isPodUpdated(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}}, "abc", &gen); got != tt.want {
			t.Errorf("isPodUpdated(%v) = %v, want %v", tt.labels, got, tt.want)
		}
	}
}
