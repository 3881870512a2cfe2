package nodeautonomy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvictingTaints(t *testing.T) {
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	other := corev1.Taint{Key: "example.com/x", Effect: corev1.TaintEffectNoExecute}
	all := []corev1.Taint{unreachable, notReady, other}
	tests := []struct {
		name string
		node *corev1.Node
		want int
	}{
		{"nil node", nil, 3},
		{"no annotation", &corev1.Node{}, 3},
		{"false", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: "false"}}}, 3},
		{"label only", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{Label: Value}}}, 3},
		{"autonomous", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: Value}}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EvictingTaints(tc.node, all)
			if len(got) != tc.want {
				t.Fatalf("EvictingTaints = %v, want %d taints", got, tc.want)
			}
			if tc.want == 1 && got[0].Key != other.Key {
				t.Errorf("kept %v, want the operator's taint", got)
			}
		})
	}
}
