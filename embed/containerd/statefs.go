package containerd

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/containerd/killall"
)

// StateFS is what ensureStateTmpfs needs from the machine; tests use a
// fake.
type StateFS interface {
	// FSType returns the statfs magic number of the file system holding
	// path.
	FSType(path string) (int64, error)
	// MountPoints returns every mount point of this mount namespace.
	MountPoints() ([]string, error)
	// LiveShims counts the shims still answering on their sockets among
	// the task bundles under state.
	LiveShims(state string) (int, error)
	// MountTmpfs mounts a new tmpfs on dir.
	MountTmpfs(dir string) error
}

// ensureStateTmpfs puts the state directory on a tmpfs of its own when it
// is not on a memory file system already.
//
// containerd's state (runc's container state, the shims' sockets and
// pid files, each container's I/O FIFOs and bundle directory) is meant to
// live in memory and go with a reboot: on most machines /run is a tmpfs.
// Where it is not (some VMs and minimal images keep /run on the root
// disk), every pod started creates and deletes dozens of inodes on disk.
// That costs disk writes (an SD card's wear) and CPU: measured on such a
// VM, a 30-pod burst took 15–40% longer with the state on its ext4 root.
//
// A tmpfs is mounted only over a state directory with nothing in use
// under it (no mount under it, no shim answering); otherwise, when k1s
// restarts while pods run with their state on disk, the state stays where
// it is, since hiding it would cut containerd off from the running pods.
// The tmpfs outlives k1s, like the containers, until `k1s killall` or a
// reboot.
//
// It reports whether it mounted a tmpfs. A failure to mount is returned:
// the caller may go on with the state on disk.
func ensureStateTmpfs(logger klog.Logger, state string, fs StateFS) (bool, error) {
	t, err := fs.FSType(state)
	if err != nil {
		return false, fmt.Errorf("statfs %s: %w", state, err)
	}
	if t == unix.TMPFS_MAGIC || t == unix.RAMFS_MAGIC {
		return false, nil
	}
	mounts, err := fs.MountPoints()
	if err != nil {
		return false, fmt.Errorf("list mounts: %w", err)
	}
	clean := filepath.Clean(state)
	for _, m := range mounts {
		if m == clean || strings.HasPrefix(m, clean+"/") {
			logger.Info("containerd's state directory is not on a tmpfs, and something is mounted under it: it stays on disk", "state", state, "mount", m)
			return false, nil
		}
	}
	live, err := fs.LiveShims(state)
	if err != nil {
		return false, fmt.Errorf("look for running shims: %w", err)
	}
	if live > 0 {
		logger.Info("containerd's state directory is not on a tmpfs, and pods are running from it: it stays on disk until they stop", "state", state, "shims", live)
		return false, nil
	}
	if err := fs.MountTmpfs(state); err != nil {
		return false, fmt.Errorf("mount a tmpfs on %s: %w", state, err)
	}
	logger.V(2).Info("Mounted a tmpfs for containerd's state", "state", state)
	return true, nil
}

// machineStateFS is StateFS on this machine.
type machineStateFS struct{ sys killall.System }

func newMachineStateFS() StateFS { return machineStateFS{sys: killall.NewSystem(nil)} }

func (m machineStateFS) FSType(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

func (m machineStateFS) MountPoints() ([]string, error) { return m.sys.MountPoints() }

func (m machineStateFS) LiveShims(state string) (int, error) {
	shims, err := m.sys.Shims(state)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range shims {
		if s.Pid > 0 {
			n++
		}
	}
	return n, nil
}

func (m machineStateFS) MountTmpfs(dir string) error {
	// Mode 0711 as the directory k1s creates; nosuid and nodev as
	// systemd's /run.
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0711")
}
