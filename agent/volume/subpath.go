package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// prepareSubPath makes subPath of the volume at volumePath mountable and
// returns the path to hand to the runtime. A missing subPath is created as
// directories (with the volume root's mode). The subPath may go through
// symlinks only while it stays inside the volume. Because a container can
// swap a directory of its volume for a symlink between this check and the
// runtime's mount, the checked path is opened without following any link
// and that open file is bind-mounted on target (under the pod's
// volume-subpaths directory), which is what the runtime mounts.
func (m *manager) prepareSubPath(volumePath, subPath, target string) (string, error) {
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return "", fmt.Errorf("resolve volume path: %w", err)
	}
	full := filepath.Join(base, subPath)
	if _, err := os.Stat(full); errors.Is(err, fs.ErrNotExist) {
		info, err := os.Stat(base)
		if err != nil {
			return "", err
		}
		if err := safeMkdirAll(base, subPath, info.Mode().Perm()); err != nil {
			return "", err
		}
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("resolve subPath: %w", err)
	}
	rel, err := within(base, resolved)
	if err != nil {
		return "", err
	}
	fd, err := openNoFollow(base, rel, unix.O_PATH)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("stat subPath: %w", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return "", fmt.Errorf("subPath %s changed into a symlink", resolved)
	}
	if err := m.prepareBindTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return "", err
	}
	if err := m.mounter.BindMount(fmt.Sprintf("/proc/self/fd/%d", fd), target); err != nil {
		return "", err
	}
	return target, nil
}

// within returns p relative to base, refusing a p outside base.
func within(base, p string) (string, error) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("subPath resolves to %s, outside the volume %s", p, base)
	}
	return rel, nil
}

// prepareBindTarget makes target an unmounted directory or empty file.
func (m *manager) prepareBindTarget(target string, dir bool) error {
	if mounted, err := m.mounter.IsMountPoint(target); err == nil && mounted {
		if err := m.mounter.Unmount(target); err != nil {
			return err
		}
	}
	if info, err := os.Lstat(target); err == nil && info.IsDir() != dir {
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("replace subPath target: %w", err)
		}
	}
	if dir {
		return os.MkdirAll(target, 0o750)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640)
	if err != nil {
		return fmt.Errorf("create subPath target: %w", err)
	}
	return f.Close()
}

// openNoFollow opens rel under base one component at a time, refusing to
// follow any symlink, and returns the file descriptor (opened with flags
// for the last component). base must itself be free of symlinks.
func openNoFollow(base, rel string, flags int) (int, error) {
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open volume %s: %w", base, err)
	}
	if rel == "." || rel == "" {
		return fd, nil
	}
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		fl := unix.O_PATH | unix.O_DIRECTORY
		if i == len(parts)-1 {
			fl = flags
		}
		next, err := unix.Openat(fd, part, fl|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open %s inside the volume without following links: %w", filepath.Join(parts[:i+1]...), err)
		}
		fd = next
	}
	return fd, nil
}

// safeMkdirAll creates the missing directories of subPath under base with
// mode perm. The existing part may go through symlinks that stay inside
// base; the new directories are created relative to opened descriptors, so
// a symlink swapped in meanwhile is never followed.
func safeMkdirAll(base, subPath string, perm fs.FileMode) error {
	parts := strings.Split(filepath.Clean(subPath), "/")
	existing := base
	n := 0
	for ; n < len(parts); n++ {
		next := filepath.Join(existing, parts[n])
		if _, err := os.Lstat(next); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			return err
		}
		existing = next
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("resolve subPath: %w", err)
	}
	rel, err := within(base, resolved)
	if err != nil {
		return err
	}
	fd, err := openNoFollow(base, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for _, part := range parts[n:] {
		if err := unix.Mkdirat(fd, part, uint32(perm)); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create subPath directory %s: %w", part, err)
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open new subPath directory %s: %w", part, err)
		}
		unix.Close(fd)
		fd = next
		// The umask applied at creation.
		if err := unix.Fchmod(fd, uint32(perm)); err != nil {
			return fmt.Errorf("chmod subPath directory %s: %w", part, err)
		}
	}
	return nil
}
