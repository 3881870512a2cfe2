// Package volumetesting holds fakes for the volume package's dependencies.
package volumetesting

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Mount is one mount the FakeMounter made.
type Mount struct {
	// Type is "tmpfs" or "bind".
	Type string
	// Source is the bind source, resolved when it was a /proc/self/fd path.
	Source string
	// Size is a tmpfs's size in bytes (0: none given).
	Size int64
}

// FakeMounter records mounts instead of making them: a "mounted" tmpfs is
// the plain directory underneath. It implements volume.Mounter and is safe
// for concurrent use.
type FakeMounter struct {
	mu     sync.Mutex
	mounts map[string]Mount
	// Unmounted lists the targets unmounted, in order.
	Unmounted []string
	// UnmountErr, when set, is returned by Unmount (nothing is unmounted).
	UnmountErr error
}

// NewFakeMounter returns a FakeMounter with nothing mounted.
func NewFakeMounter() *FakeMounter { return &FakeMounter{mounts: map[string]Mount{}} }

// MountTmpfs records a tmpfs on target.
func (f *FakeMounter) MountTmpfs(target string, sizeBytes int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounts[filepath.Clean(target)] = Mount{Type: "tmpfs", Size: sizeBytes}
	return nil
}

// BindMount records a bind mount of source on target.
func (f *FakeMounter) BindMount(source, target string) error {
	if strings.HasPrefix(source, "/proc/self/fd/") {
		if p, err := os.Readlink(source); err == nil {
			source = p
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounts[filepath.Clean(target)] = Mount{Type: "bind", Source: source}
	return nil
}

// Unmount forgets the mount on target.
func (f *FakeMounter) Unmount(target string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.UnmountErr != nil {
		return f.UnmountErr
	}
	delete(f.mounts, filepath.Clean(target))
	f.Unmounted = append(f.Unmounted, filepath.Clean(target))
	return nil
}

// IsMountPoint says whether something is recorded on path.
func (f *FakeMounter) IsMountPoint(path string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mounts[filepath.Clean(path)]
	return ok, nil
}

// MountPoints lists the recorded mount points at or under dir, sorted.
func (f *FakeMounter) MountPoints(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = filepath.Clean(dir)
	var out []string
	for p := range f.mounts {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Get returns the mount recorded on target.
func (f *FakeMounter) Get(target string) (Mount, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.mounts[filepath.Clean(target)]
	return m, ok
}
