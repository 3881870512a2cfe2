// Command containerd-shim-runc-v2 is the runc shim k1s carries: a small
// executable of its own (one runs per pod, so its size is per-pod memory),
// built from the containerd module and embedded into the k1s binary.
package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	"github.com/containerd/containerd/v2/pkg/shim"

	"github.com/k1s/k1s/internal/memtrim"
)

func main() {
	// A shim mostly waits: one P is plenty, and fewer Ps means fewer
	// threads, each with its own stacks. Memory profiling is also turned
	// off from the first allocation by GODEBUG=memprofilerate=0, which
	// the shims inherit from k1s's containerd; this covers a shim started
	// without it.
	runtime.GOMAXPROCS(1)
	runtime.MemProfileRate = 0
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

// trim keeps the heap tight and gives back memory: once the shim has
// started its first container, once the pod is up, then every 30 s (the
// CRI's stats calls churn the heap): freed heap, and executable pages
// touched once (they fault back in when used). Each pass is a full GC of
// a heap of about a megabyte.
func trim() {
	debug.SetGCPercent(25)
	time.Sleep(2 * time.Second)
	memtrim.TrimMapped()
	time.Sleep(18 * time.Second)
	for {
		memtrim.TrimMapped()
		time.Sleep(30 * time.Second)
	}
}
