package volume

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mounter performs the few mount operations the manager needs. Paths are
// absolute.
type Mounter interface {
	// MountTmpfs mounts a new tmpfs on target, of sizeBytes when positive.
	MountTmpfs(target string, sizeBytes int64) error
	// BindMount bind-mounts source (a file or directory, possibly a
	// /proc/self/fd/N path) on target.
	BindMount(source, target string) error
	// Unmount unmounts target.
	Unmount(target string) error
	// IsMountPoint says whether path is the root of a mount.
	IsMountPoint(path string) (bool, error)
	// MountPoints lists the mount points at or under dir.
	MountPoints(dir string) ([]string, error)
}

// SystemMounter is the Mounter of the running system (mount(2), umount(2)
// and /proc/self/mountinfo). It needs CAP_SYS_ADMIN.
type SystemMounter struct{}

// MountTmpfs implements Mounter.
func (SystemMounter) MountTmpfs(target string, sizeBytes int64) error {
	data := ""
	if sizeBytes > 0 {
		data = "size=" + strconv.FormatInt(sizeBytes, 10)
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, data); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", target, err)
	}
	return nil
}

// BindMount implements Mounter.
func (SystemMounter) BindMount(source, target string) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", source, target, err)
	}
	return nil
}

// Unmount implements Mounter. A path that is not mounted is not an error.
func (m SystemMounter) Unmount(target string) error {
	err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		if mounted, merr := m.IsMountPoint(target); merr == nil && !mounted {
			return nil
		}
	}
	return fmt.Errorf("unmount %s: %w", target, err)
}

// IsMountPoint implements Mounter, with statx's mount-root attribute and
// /proc/self/mountinfo when the kernel does not report it.
func (m SystemMounter) IsMountPoint(path string) (bool, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx)
	if err != nil {
		return false, fmt.Errorf("statx %s: %w", path, err)
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	points, err := m.MountPoints(path)
	if err != nil {
		return false, err
	}
	clean := filepath.Clean(path)
	for _, p := range points {
		if p == clean {
			return true, nil
		}
	}
	return false, nil
}

// MountPoints implements Mounter.
func (SystemMounter) MountPoints(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountPoints(bufio.NewScanner(f), filepath.Clean(dir))
}

// parseMountPoints returns the mount points of a mountinfo listing that are
// dir or under it, each once.
func parseMountPoints(sc *bufio.Scanner, dir string) ([]string, error) {
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	seen := map[string]bool{}
	var out []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if (p == dir || strings.HasPrefix(p, dir+"/")) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMountPath decodes the \NNN octal escapes of mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
