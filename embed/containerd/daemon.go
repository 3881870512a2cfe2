package containerd

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd/v2/cmd/containerd/command"
	// The daemon's plugins: CRI, overlayfs snapshotter, runc runtime, ...
	// (btrfs, devmapper and zfs are left out by the build tags).
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"

	"github.com/k1s/k1s/internal/memtrim"
)

// DaemonCommand is the hidden k1s subcommand the supervisor re-executes
// the k1s binary with to run containerd as a child process.
const DaemonCommand = "containerd"

// RunDaemon runs containerd's own command line with args (args[0] is the
// program name). It is what `k1s containerd ...` does.
//
// The process is the whole k1s binary, whose package initialisation
// touched pages containerd never uses again: they are given back a few
// seconds after start, and again once the first pods are up. They stay in
// the page cache: evicting them made the next pod start slower (its code
// read back from disk a page at a time) for no measurable memory gain.
func RunDaemon(ctx context.Context, args []string) error {
	trimCtx, stopTrim := context.WithCancel(ctx)
	defer stopTrim()
	go func() {
		for _, d := range []time.Duration{5 * time.Second, 30 * time.Second} {
			select {
			case <-time.After(d):
				memtrim.TrimMapped()
			case <-trimCtx.Done():
				return
			}
		}
	}()
	if err := command.App().Run(ctx, args); err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	return nil
}
