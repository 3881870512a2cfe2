package framework

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CgroupRoot is the --cgroup-root an extra node of a multi-node test
// passes: nodes on one machine share /sys/fs/cgroup, so each keeps its
// pod cgroups in a tree of its own.
func CgroupRoot(nodeName string) string { return "/k1s-" + nodeName }

// RemoveCgroupTree removes the cgroup root (and everything below it) from
// every hierarchy, once the node's containers are gone; a cgroup that
// still holds processes is reported, not forced.
func RemoveCgroupTree(t testing.TB, root string) {
	t.Helper()
	mounts := []string{"/sys/fs/cgroup"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		entries, _ := os.ReadDir("/sys/fs/cgroup")
		mounts = nil
		for _, e := range entries {
			if e.IsDir() {
				mounts = append(mounts, filepath.Join("/sys/fs/cgroup", e.Name()))
			}
		}
	}
	for _, m := range mounts {
		if err := rmdirTree(filepath.Join(m, root)); err != nil {
			t.Logf("cgroup %s under %s left: %v", root, m, err)
		}
	}
}

func rmdirTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
