package kuberuntime

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestRestartKeepsDeadInstances(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keepAll bool
		want    int // containers after three restarts: the running one and the dead kept
	}{
		{name: "default: the newest dead instance", want: 2},
		{name: "container GC's limit: every dead instance", keepAll: true, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t, busybox)
			te.m.cfg.KeepAllDeadInstances = tc.keepAll
			pod := testPod(corev1.Container{Name: "app"})
			te.sync(t, pod)
			for i := 0; i < 3; i++ {
				id, _ := te.rt.ContainerNamed(t, "app")
				te.rt.Exit(t, id, 1)
				te.clock.Step(10 * time.Minute) // past any back-off
				te.sync(t, pod)
			}
			if got := len(te.rt.ContainerNames()); got != tc.want {
				t.Errorf("%d containers, want %d", got, tc.want)
			}
		})
	}
}
