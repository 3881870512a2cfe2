package nodestatus

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/k1s/k1s/internal/nodeautonomy"
)

// --edge-autonomy marks the Node at registration, new or existing; without
// it the marks are removed.
func TestRegisterMarksAutonomy(t *testing.T) {
	marked := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1",
			Labels:      map[string]string{nodeautonomy.Label: nodeautonomy.Value, "keep": "l"},
			Annotations: map[string]string{nodeautonomy.Annotation: nodeautonomy.Value, "keep": "a"}}}
	}
	tests := []struct {
		name     string
		autonomy bool
		existing *corev1.Node
		want     bool
	}{
		{"new node, autonomous", true, nil, true},
		{"new node, not autonomous", false, nil, false},
		{"existing unmarked node, autonomous", true, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, true},
		{"existing marked node, flag dropped", false, marked(), false},
		{"existing marked node, autonomous", true, marked(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.EdgeAutonomy = tt.autonomy
			var objs []kruntime.Object
			if tt.existing != nil {
				objs = append(objs, tt.existing)
			}
			m, client, _, _ := newTest(t, cfg, objs...)
			if err := m.register(context.Background()); err != nil {
				t.Fatal(err)
			}
			node, err := client.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeautonomy.IsAutonomous(node); got != tt.want {
				t.Errorf("autonomous = %v, want %v (annotations %v)", got, tt.want, node.Annotations)
			}
			if got := node.Labels[nodeautonomy.Label] == nodeautonomy.Value; got != tt.want {
				t.Errorf("label = %v, want %v", got, tt.want)
			}
			if tt.existing != nil && tt.existing.Labels["keep"] != "" && (node.Labels["keep"] != "l" || node.Annotations["keep"] != "a") {
				t.Errorf("other labels or annotations lost: %v %v", node.Labels, node.Annotations)
			}
		})
	}
}
