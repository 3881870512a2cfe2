package nodelifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/nodeautonomy"
)

// TestAutonomousNode runs the whole controller (taint manager included)
// on a fake clock: node n1 (marked or not) and control node n3 (never
// marked) stop heartbeating while n2 stays alive. Both go Unknown, get the
// unreachable taints and have their pods marked not ready; n3's pod is
// evicted after its tolerationSeconds, n1's only when n1 is not autonomous.
func TestAutonomousNode(t *testing.T) {
	tolerate300 := []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}
	tests := []struct {
		name        string
		annotations map[string]string
		tolerations []corev1.Toleration
		wantEvicted bool
	}{
		{"unmarked, default toleration: evicted after 300s", nil, tolerate300, true},
		{"unmarked, no toleration: evicted", nil, nil, true},
		{"marker false: evicted as upstream", map[string]string{nodeautonomy.Annotation: "false"}, tolerate300, true},
		{"label only: evicted (the annotation decides)", nil, tolerate300, true},
		{"autonomous, default toleration: kept", map[string]string{nodeautonomy.Annotation: "true"}, tolerate300, false},
		{"autonomous, no toleration: kept", map[string]string{nodeautonomy.Annotation: "true"}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n1 := readyNode("n1", "", corev1.ConditionTrue, t0)
			n1.Annotations = tc.annotations
			if tc.name == "label only: evicted (the annotation decides)" {
				n1.Labels[nodeautonomy.Label] = nodeautonomy.Value
			}
			p1, p3 := readyPod("p1", "n1"), readyPod("p3", "n3")
			p1.Spec.Tolerations, p3.Spec.Tolerations = tc.tolerations, tc.tolerations
			cfg := DefaultConfig()
			cfg.NodeEvictionRate = 100
			client := fake.NewClientset(n1, nodeLease("n1", t0), p1,
				readyNode("n2", "", corev1.ConditionTrue, t0), nodeLease("n2", t0),
				readyNode("n3", "", corev1.ConditionTrue, t0), nodeLease("n3", t0), p3)
			factory := informers.NewSharedInformerFactory(client, 0)
			clk := clocktesting.NewFakeClock(t0)
			c, err := New(cfg, client, factory, func(string) record.EventRecorder { return record.NewFakeRecorder(1000) }, clk)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			factory.Start(ctx.Done())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run = %v", err)
				}
				factory.Shutdown()
			}()
			waitFor := func(what string, cond func() bool) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !cond() {
					if time.Now().After(deadline) {
						t.Fatalf("timed out waiting for %s", what)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			// step advances the clock, n2 renewing its lease as it goes.
			step := func(d time.Duration) {
				clk.Step(d)
				l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n2", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				now := metav1.NewMicroTime(clk.Now())
				l.Spec.RenewTime = &now
				if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			getNode := func(name string) *corev1.Node {
				n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			podGone := func(name string) bool {
				_, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}
			waitFor("first pass", func() bool { return c.health.get("n1") != nil && c.health.get("n3") != nil })
			for range 11 {
				step(5 * time.Second)
			}
			// Heartbeats stopped: Unknown and tainted whether autonomous or not.
			for _, name := range []string{"n1", "n3"} {
				waitFor(name+" Unknown and tainted", func() bool {
					step(100 * time.Millisecond)
					n := getNode(name)
					return readyStatus(n) == corev1.ConditionUnknown &&
						strings.Contains(taintKeys(n), "node.kubernetes.io/unreachable:NoExecute") &&
						strings.Contains(taintKeys(n), "node.kubernetes.io/unreachable:NoSchedule")
				})
			}
			// Its pods leave Service endpoints: Ready=False (unless evicted at once).
			if !tc.wantEvicted || tc.tolerations != nil {
				waitFor("p1 not ready", func() bool {
					p, err := client.CoreV1().Pods("ns").Get(ctx, "p1", metav1.GetOptions{})
					return err == nil && p.Status.Conditions[0].Status == corev1.ConditionFalse
				})
			}
			for range 62 {
				step(5 * time.Second)
			}
			// The control node's pod is evicted after its toleration.
			waitFor("p3 evicted", func() bool { return podGone("p3") })
			if tc.wantEvicted {
				waitFor("p1 evicted", func() bool { return podGone("p1") })
				return
			}
			time.Sleep(200 * time.Millisecond)
			p, err := client.CoreV1().Pods("ns").Get(ctx, "p1", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("pod of the autonomous node: %v", err)
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.DisruptionTarget {
					t.Errorf("pod of the autonomous node marked for deletion: %+v", cond)
				}
			}
			if readyStatus(getNode("n1")) != corev1.ConditionUnknown {
				t.Errorf("n1 Ready = %s", readyStatus(getNode("n1")))
			}
		})
	}
}
