// Package lowwrite is the node's part of k1s's low-write mode (--low-write,
// for nodes on SD cards and eMMC): the pods' container logs go to a tmpfs
// of a fixed size (--low-write-log-size, default 64Mi) mounted on the pod
// log directory (/var/log/pods), so the logs cost no disk writes. The
// trade: the logs live in memory (up to the cap), are lost at reboot, and
// once the tmpfs is full new log lines are dropped until log rotation
// (--container-log-max-size, --container-log-max-files) frees room.
//
// The rest of the node already writes at upstream's minimum, with or
// without the mode: the Lease renewed every 10 s, the Node's status posted
// when it changes or every 5 minutes, pod status only on change, and no
// file of the data directory rewritten unless its content changes. The
// server's part (etcd's batched commits, the leader lease) is in server/.
package lowwrite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/containerd/killall"
)

// Defaults.
const (
	// DefaultLogSize is --low-write-log-size's default.
	DefaultLogSize = "64Mi"
	// DefaultPodLogsDir is where the pods' logs go (kubelet's
	// /var/log/pods).
	DefaultPodLogsDir = "/var/log/pods"
	// minLogSize is the smallest cap accepted: below it a single
	// container's log would not fit.
	minLogSize = 1 << 20
)

// ParseLogSize reads --low-write-log-size: a quantity of at least 1Mi.
func ParseLogSize(s string) (int64, error) {
	if s == "" {
		s = DefaultLogSize
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--low-write-log-size: %q is not a quantity (e.g. 64Mi): %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n < minLogSize {
		return 0, fmt.Errorf("--low-write-log-size: %q is below 1Mi", s)
	}
	return n, nil
}

// Machine is what EnsureLogTmpfs needs from the host; tests use a fake.
type Machine interface {
	// FSType returns the statfs magic number of the file system holding
	// path (which exists).
	FSType(path string) (int64, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// Entries counts the entries of dir.
	Entries(dir string) (int, error)
	// MountPoints returns every mount point of this mount namespace.
	MountPoints() ([]string, error)
	// MountTmpfs mounts a new tmpfs of sizeBytes on dir.
	MountTmpfs(dir string, sizeBytes int64) error
}

// EnsureLogTmpfs puts dir (the pod log directory) on a tmpfs of sizeBytes
// unless it is on a memory file system already (a k1s restart finds the
// tmpfs it mounted before: it outlives k1s like the containers).
//
// A tmpfs is mounted only over a directory that can be hidden safely: one
// that is empty, or whose logs belong to no running container
// (liveContainers reports 0: after a reboot or `k1s killall`, the stale
// logs are hidden under the mount, still on disk). With containers
// running and writing their logs there, dir stays on disk and the mode's
// log part waits for the next start without them. Nothing mounted under
// dir may be hidden either.
//
// It reports whether it mounted a tmpfs.
func EnsureLogTmpfs(logger klog.Logger, m Machine, dir string, sizeBytes int64, liveContainers func() (int, error)) (bool, error) {
	if err := m.MkdirAll(dir); err != nil {
		return false, fmt.Errorf("create the pod log directory %s: %w", dir, err)
	}
	t, err := m.FSType(dir)
	if err != nil {
		return false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	if t == unix.TMPFS_MAGIC || t == unix.RAMFS_MAGIC {
		logger.V(2).Info("Pod log directory is on a memory file system already", "dir", dir)
		return false, nil
	}
	mounts, err := m.MountPoints()
	if err != nil {
		return false, fmt.Errorf("list mounts: %w", err)
	}
	clean := filepath.Clean(dir)
	for _, mp := range mounts {
		if strings.HasPrefix(mp, clean+"/") {
			logger.Info("--low-write: something is mounted under the pod log directory: the logs stay on disk", "dir", dir, "mount", mp)
			return false, nil
		}
	}
	n, err := m.Entries(dir)
	if err != nil {
		return false, fmt.Errorf("read the pod log directory %s: %w", dir, err)
	}
	if n > 0 {
		live := 0
		if liveContainers != nil {
			if live, err = liveContainers(); err != nil {
				return false, fmt.Errorf("look for running containers: %w", err)
			}
		} else {
			live = -1 // unknown: an external runtime
		}
		if live != 0 {
			logger.Info("--low-write: containers may be logging to the pod log directory on disk; it stays there until the node starts without running containers (after a reboot or k1s killall)", "dir", dir, "running", live)
			return false, nil
		}
		logger.Info("--low-write: the pod log directory holds logs of containers no longer running; they stay on disk, hidden under the tmpfs", "dir", dir, "entries", n)
	}
	if err := m.MountTmpfs(dir, sizeBytes); err != nil {
		return false, fmt.Errorf("mount a tmpfs on the pod log directory %s (--low-write): %w", dir, err)
	}
	logger.Info("Pod logs go to a tmpfs (--low-write)", "dir", dir, "sizeBytes", sizeBytes)
	return true, nil
}

// HostMachine is Machine on this host.
func HostMachine() Machine { return hostMachine{} }

type hostMachine struct{}

func (hostMachine) FSType(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

func (hostMachine) MkdirAll(dir string) error { return mkdirAll(dir) }

func (hostMachine) Entries(dir string) (int, error) { return countEntries(dir) }

func (hostMachine) MountPoints() ([]string, error) { return MountPoints() }

func (hostMachine) MountTmpfs(dir string, sizeBytes int64) error {
	// Mode 0755 as kubelet's /var/log/pods; nosuid, nodev and noexec: it
	// holds only logs.
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, fmt.Sprintf("size=%d,mode=0755", sizeBytes)); err != nil {
		return err
	}
	// The marker tells k1s killall this tmpfs is k1s's to unmount.
	if err := os.WriteFile(filepath.Join(dir, killall.LowWriteMarker), nil, 0o600); err != nil {
		return errors.Join(fmt.Errorf("mark the pod log tmpfs: %w", err), unix.Unmount(dir, 0))
	}
	return nil
}
