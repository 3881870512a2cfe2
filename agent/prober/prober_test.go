package prober

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// failingExec fails every command.
type failingExec struct{}

func (failingExec) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
	return nil, nil, errors.New("exit status 1")
}

// TestStartupFailureRestartsTheContainer: a startup probe that fails
// failureThreshold times marks the container for a restart (as a failed
// liveness probe does), and sidecars (restartable init containers) are
// probed like the pod's containers.
func TestStartupFailureRestartsTheContainer(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	m := New(failingExec{}, nil, clk)
	probe := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), StartupProbe: probe}},
			Containers:     []corev1.Container{{Name: "app"}},
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := map[string]string{"side": "c1", "app": "c2"}
	m.Sync(ctx, pod, "10.42.0.7", ids)
	for i := 0; i < 200 && !m.LivenessFailed(pod.UID, ids).Has("side"); i++ {
		// Let the worker reach its next wait, then move time on.
		for j := 0; j < 1000 && !clk.HasWaiters(); j++ {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
	}
	if !m.LivenessFailed(pod.UID, ids).Has("side") {
		t.Fatal("a sidecar whose startup probe keeps failing is never marked for restart")
	}
	if started, known := m.Started(pod.UID, "side", "c1"); !known || started {
		t.Errorf("Started = %v, %v; want false, known", started, known)
	}
	if m.LivenessFailed(pod.UID, map[string]string{"side": "c3"}).Has("side") {
		t.Error("the failure carries over to a new instance of the container")
	}
}
