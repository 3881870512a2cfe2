package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/cmd/containerd/command"
	// The daemon's plugins: CRI, overlayfs snapshotter, runc runtime, ...
	// (btrfs, devmapper and zfs are left out by the build tags).
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
)

// DaemonCommand is the hidden k1s subcommand the supervisor re-executes
// the k1s binary with to run containerd as a child process.
const DaemonCommand = "containerd"

// RunDaemon runs containerd's own command line with args (args[0] is the
// program name). It is what `k1s containerd ...` does.
func RunDaemon(ctx context.Context, args []string) error {
	if err := command.App().Run(ctx, args); err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	return nil
}
