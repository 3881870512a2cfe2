// Command containerd-shim-runc-v2 is the runc shim k1s carries: a small
// executable of its own (one runs per pod, so its size is per-pod memory),
// built from the containerd module and embedded into the k1s binary.
package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
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
	server := isServer(os.Args[1:])
	if server && os.Getenv("GOMAXPROCS") != "1" {
		reexecWithOneProc()
	}
	runtime.GOMAXPROCS(1)
	runtime.MemProfileRate = 0
	if server {
		go trim()
	}
	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))
}

// reexecWithOneProc replaces the process with itself, GOMAXPROCS=1 in
// its environment. containerd's shim manager starts the server with
// GOMAXPROCS=4, and a runtime that starts with four processors makes
// threads for them during package initialisation that it never ends,
// each with its own stacks. The pid, the inherited descriptors (the
// listening socket) and the arguments stay; only a failed exec goes on
// as before.
func reexecWithOneProc() {
	self, err := os.Executable()
	if err != nil {
		return
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(self, os.Args, append(env, "GOMAXPROCS=1"))
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
// a heap of about a megabyte. The tighter GC target is set only after the
// first two seconds: from the start it made the shim collect every few
// hundred kilobytes while it set its pod up (a quarter of Go's 4 MB
// minimum heap target), ~8% of the CPU that shims, runc and CNI use in a
// 30-pod burst, and it left slightly more memory behind.
func trim() {
	time.Sleep(2 * time.Second)
	debug.SetGCPercent(25)
	memtrim.TrimMapped()
	time.Sleep(18 * time.Second)
	for {
		memtrim.TrimMapped()
		time.Sleep(30 * time.Second)
	}
}
