package agent

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent/lowwrite"
	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/embed/containerd/killall"
)

// ensureLowWriteLogs puts the pod log directory on a tmpfs under
// --low-write, before the runtime (re)starts any container. With the
// embedded containerd, the logs of a directory on disk may be hidden when
// no shim is running; with an external runtime only an empty directory
// is mounted over.
func (n *Node) ensureLowWriteLogs(ctx context.Context) error {
	flags := n.cfg.Agent.NodeFlags
	if !flags.LowWrite {
		return nil
	}
	size, err := lowwrite.ParseLogSize(flags.LowWriteLogSize)
	if err != nil {
		return err
	}
	var live func() (int, error)
	if n.cfg.Containerd != nil {
		state := n.cfg.Containerd.State
		if state == "" {
			state = containerd.DefaultState
		}
		live = func() (int, error) {
			shims, err := killall.NewSystem(nil).Shims(state)
			count := 0
			for _, s := range shims {
				if s.Pid > 0 {
					count++
				}
			}
			return count, err
		}
	}
	_, err = lowwrite.EnsureLogTmpfs(klog.FromContext(ctx), lowwrite.HostMachine(), lowwrite.DefaultPodLogsDir, size, live)
	return err
}
