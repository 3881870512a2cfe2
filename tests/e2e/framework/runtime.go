package framework

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeSocket is the CRI socket of the embedded containerd.
const RuntimeSocket = "/run/k1s/containerd/containerd.sock"

// runtimeClient connects to the embedded containerd's CRI; done closes
// the connection and ends ctx (10 s).
func runtimeClient(t testing.TB) (rs runtimeapi.RuntimeServiceClient, ctx context.Context, done func()) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+RuntimeSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connect to %s: %v", RuntimeSocket, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	return runtimeapi.NewRuntimeServiceClient(conn), ctx, func() { cancel(); conn.Close() }
}

// RuntimeObjects counts the pod sandboxes and the containers the container
// runtime holds (in any state) whose labels include every one of labels,
// e.g. {"io.kubernetes.pod.namespace": "ns"}: what is left of pods on the
// machine, independent of what the API says.
func RuntimeObjects(t testing.TB, labels map[string]string) (sandboxes, containers int) {
	t.Helper()
	rs, ctx, done := runtimeClient(t)
	defer done()
	sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: labels}})
	if err != nil {
		t.Fatalf("list pod sandboxes: %v", err)
	}
	cs, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: labels}})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return len(sbs.Items), len(cs.Containers)
}

// RunningContainers returns the ids of the running containers whose labels
// include every one of labels.
func RunningContainers(t testing.TB, labels map[string]string) []string {
	t.Helper()
	rs, ctx, done := runtimeClient(t)
	defer done()
	cs, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: labels,
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		// containerd not (yet) answering: nothing runs that we can see.
		return nil
	}
	var ids []string
	for _, c := range cs.Containers {
		ids = append(ids, c.Id)
	}
	return ids
}
