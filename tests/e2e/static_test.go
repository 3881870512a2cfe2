package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// A static pod runs while the apiserver cannot start (no etcd answers at
// the datastore endpoint), as kubelet's static pods do; once k1s runs
// with a datastore, the same container is adopted and shows up as a
// mirror pod.
func TestStaticPodWithoutTheAPIServer(t *testing.T) {
	s := framework.NewNodeServer(t)
	// hostNetwork: without the apiserver the node has no pod CIDR yet, so
	// no pod network.
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  hostNetwork: true
  containers:
  - name: sleep
    image: k1s.local/busybox:1.36
    imagePullPolicy: Never
    command: [sh, -c, 'echo up; exec sleep 3600']
`
	dir := filepath.Join(s.DataDir, "agent", "pod-manifests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sleeper.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	args := s.Args
	s.Args = append(slices.Clone(args), "--datastore-endpoint", fmt.Sprintf("http://127.0.0.1:%d", framework.FreePort(t)))
	if err := s.StartProcess(); err != nil {
		t.Fatal(err)
	}
	name := "sleeper-" + framework.NodeName
	labels := map[string]string{"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.name": name}
	var ids []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		ids = framework.RunningContainers(t, labels)
		return len(ids) == 1, nil
	})
	if err != nil {
		t.Fatalf("the static pod's container is not running without the apiserver: %v (running: %q)\n%s", err, ids, framework.LastLine(s.Log()))
	}
	if err := s.WaitReady(time.Second); err == nil {
		t.Fatal("the apiserver answered /readyz with no datastore: the test proves nothing")
	}
	s.Kill()

	// With a datastore: the same container, and a mirror pod.
	s.Args = args
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	p := framework.WaitPod(t, s.Client(t), "default", name, 60*time.Second, "mirror pod running", framework.Running)
	if p.Annotations["kubernetes.io/config.mirror"] == "" {
		t.Errorf("pod %s is not a mirror pod: %v", name, p.Annotations)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ContainerID != "containerd://"+ids[0] {
		t.Errorf("container statuses %+v, want the container started without the apiserver, %s", p.Status.ContainerStatuses, ids[0])
	}
}
