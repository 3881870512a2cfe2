// Command containerd-shim-runc-v2 is the runc shim k1s carries: a small
// executable of its own (one runs per pod, so its size is per-pod memory),
// built from the containerd module and embedded into the k1s binary.
package main

import (
	"context"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	"github.com/containerd/containerd/v2/pkg/shim"
)

func main() {
	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))
}
