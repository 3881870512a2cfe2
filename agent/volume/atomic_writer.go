package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

const (
	// dataLink is the symlink naming the current version of a volume's files.
	dataLink = "..data"
	// dataLinkTmp is the new symlink while it is renamed over dataLink.
	dataLinkTmp = "..data_tmp"
	// maxPathLen and maxNameLen bound a projected file's path.
	maxPathLen = 4096
	maxNameLen = 255
)

// file is one file of a volume's content.
type file struct {
	data []byte
	mode int32
	// uid, when set, owns the file (the API's user/defaultUser fields).
	uid *int64
}

// checkFilePath refuses a projected path that is empty, absolute, too long,
// climbs with "..", or starts with ".." (reserved for the writer's own names).
func checkFilePath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case len(p) > maxPathLen:
		return fmt.Errorf("invalid path: longer than %d characters", maxPathLen)
	}
	parts := strings.Split(p, "/")
	for _, part := range parts {
		if part == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(part) > maxNameLen {
			return fmt.Errorf("invalid path %q: a name is longer than %d characters", p, maxNameLen)
		}
	}
	if strings.HasPrefix(parts[0], "..") {
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	return nil
}

// atomicWrite makes dir show exactly the files of payload. The content goes
// into a new hidden directory "..<timestamp>.<random>", the "..data" symlink
// is swapped to it by a rename, and each top-level name of the payload is a
// symlink "name -> ..data/name"; names of the previous version that are gone
// are removed, and so is the previous directory. Nothing is written when the
// content and modes are unchanged. prepare, when set, runs on the volume
// directory once the new version is written and before it becomes visible
// (ownership changes). It reports whether a new version was written.
func atomicWrite(dir string, payload map[string]file, now time.Time, prepare func() error) (bool, error) {
	clean := make(map[string]file, len(payload))
	for p, f := range payload {
		if err := checkFilePath(p); err != nil {
			return false, err
		}
		clean[filepath.Clean(p)] = f
	}

	oldName, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s link: %w", dataLink, err)
	}
	var stale sets.Set[string]
	write := true
	if oldName != "" {
		oldDir := filepath.Join(dir, oldName)
		stale, err = pathsNotIn(oldDir, clean)
		if err != nil {
			return false, err
		}
		same, err := sameContent(oldDir, clean)
		if err != nil {
			return false, err
		}
		write = !same || stale.Len() > 0
	}

	if write {
		if err := writeVersion(dir, clean, now, prepare); err != nil {
			return false, err
		}
	}
	if err := linkVisibleNames(dir, clean); err != nil {
		return false, err
	}
	if !write {
		return false, nil
	}
	for _, p := range sets.List(stale) {
		if strings.Contains(p, "/") {
			continue // inside a removed top-level name, or kept by the new version
		}
		if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, fmt.Errorf("remove old name %q: %w", p, err)
		}
	}
	if oldName != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldName)); err != nil {
			return true, fmt.Errorf("remove previous version %s: %w", oldName, err)
		}
	}
	return true, nil
}

// writeVersion writes payload into a new timestamped directory and points
// "..data" at it.
func writeVersion(dir string, payload map[string]file, now time.Time, prepare func() error) error {
	tsDir, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("create version directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tsDir)
		}
	}()
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return fmt.Errorf("chmod version directory: %w", err)
	}
	for _, p := range sortedKeys(payload) {
		f := payload[p]
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create directory for %q: %w", p, err)
		}
		mode := fs.FileMode(f.mode) & fs.ModePerm
		if err := os.WriteFile(full, f.data, mode); err != nil {
			return fmt.Errorf("write %q: %w", p, err)
		}
		// The umask applied at creation; set the mode asked for.
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("chmod %q: %w", p, err)
		}
		if f.uid != nil {
			if err := os.Lchown(full, int(*f.uid), -1); err != nil {
				return fmt.Errorf("chown %q: %w", p, err)
			}
		}
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	tmpLink := filepath.Join(dir, dataLinkTmp)
	// A crash between symlink and rename leaves the temporary link behind.
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", dataLinkTmp, err)
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return fmt.Errorf("create %s link: %w", dataLinkTmp, err)
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataLink)); err != nil {
		_ = os.Remove(tmpLink)
		return fmt.Errorf("swap %s link: %w", dataLink, err)
	}
	ok = true
	return nil
}

// linkVisibleNames makes each top-level name of payload a symlink through
// "..data".
func linkVisibleNames(dir string, payload map[string]file) error {
	for _, p := range sortedKeys(payload) {
		top, _, _ := strings.Cut(p, "/")
		visible := filepath.Join(dir, top)
		if _, err := os.Lstat(visible); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat %q: %w", top, err)
		}
		if err := os.Symlink(filepath.Join(dataLink, top), visible); err != nil {
			return fmt.Errorf("link %q: %w", top, err)
		}
		if f := payload[p]; f.uid != nil {
			if err := os.Lchown(visible, int(*f.uid), -1); err != nil {
				return fmt.Errorf("chown link %q: %w", top, err)
			}
		}
	}
	return nil
}

// pathsNotIn lists the paths (files and directories, relative) of the
// version in oldDir that the new payload does not have.
func pathsNotIn(oldDir string, payload map[string]file) (sets.Set[string], error) {
	have := sets.New[string]()
	err := filepath.WalkDir(oldDir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(oldDir, p); rel != "." {
			have.Insert(rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return sets.New[string](), nil
	}
	if err != nil {
		return nil, fmt.Errorf("list previous version: %w", err)
	}
	want := sets.New[string]()
	for p := range payload {
		for ; p != "." && p != "/"; p = filepath.Dir(p) {
			want.Insert(p)
		}
	}
	return have.Difference(want), nil
}

// sameContent says whether every file of payload is in oldDir with the same
// bytes and mode.
func sameContent(oldDir string, payload map[string]file) (bool, error) {
	for p, f := range payload {
		full := filepath.Join(oldDir, p)
		info, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("stat %q: %w", p, err)
		}
		if !info.Mode().IsRegular() || info.Mode().Perm() != fs.FileMode(f.mode)&fs.ModePerm {
			return false, nil
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return false, fmt.Errorf("read %q: %w", p, err)
		}
		if !bytes.Equal(data, f.data) {
			return false, nil
		}
	}
	return true, nil
}

// hasContent says whether an atomic writer has populated dir.
func hasContent(dir string) bool {
	_, err := os.Readlink(filepath.Join(dir, dataLink))
	return err == nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
