// Command containerd-shim-runc-v2 is the runc shim k1s carries: a small
// executable of its own (one runs per pod, so its size is per-pod memory),
// built from the containerd module and embedded into the k1s binary.
package main

import (
	"context"
	"os"
	"runtime/debug"
	"time"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	"github.com/containerd/containerd/v2/pkg/shim"

	"github.com/k1s/k1s/internal/memtrim"
)

func main() {
	if isServer(os.Args[1:]) {
		go trim()
	}
	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))
}

// isServer reports whether this is the long-running shim: containerd
// runs the short-lived `start` and `delete` actions with the action as
// the last argument, and the server with none.
func isServer(args []string) bool {
	if len(args) == 0 {
		return true
	}
	last := args[len(args)-1]
	return last != "start" && last != "delete"
}

// trim gives back the memory only start-up needed, once the shim has
// started its first container and again once the pod is up: executable
// pages touched once (they fault back in when used) and freed heap.
func trim() {
	debug.SetGCPercent(50)
	for _, d := range []time.Duration{2 * time.Second, 20 * time.Second} {
		time.Sleep(d)
		memtrim.Trim()
	}
}
