package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// fileType names what is at a path in the words of the API's HostPathType.
func fileType(path string) (string, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("path %q does not exist", path)
	}
	if err != nil {
		return "", err
	}
	mode := info.Mode()
	switch {
	case mode.IsDir():
		return string(corev1.HostPathDirectory), nil
	case mode.IsRegular():
		return string(corev1.HostPathFile), nil
	case mode&fs.ModeSocket != 0:
		return string(corev1.HostPathSocket), nil
	case mode&fs.ModeCharDevice != 0:
		return string(corev1.HostPathCharDev), nil
	case mode&fs.ModeDevice != 0:
		return string(corev1.HostPathBlockDev), nil
	}
	return "", fmt.Errorf("path %q has an unknown file type %v", path, mode.Type())
}

// checkHostPathType checks that path is of type t, creating it for
// DirectoryOrCreate (mode 0755) and FileOrCreate (mode 0644).
func checkHostPathType(path string, t corev1.HostPathType) error {
	want := map[corev1.HostPathType]struct {
		typ, words string
	}{
		corev1.HostPathDirectoryOrCreate: {string(corev1.HostPathDirectory), "directory"},
		corev1.HostPathDirectory:         {string(corev1.HostPathDirectory), "directory"},
		corev1.HostPathFileOrCreate:      {string(corev1.HostPathFile), "file"},
		corev1.HostPathFile:              {string(corev1.HostPathFile), "file"},
		corev1.HostPathSocket:            {string(corev1.HostPathSocket), "socket file"},
		corev1.HostPathCharDev:           {string(corev1.HostPathCharDev), "character device"},
		corev1.HostPathBlockDev:          {string(corev1.HostPathBlockDev), "block device"},
	}
	w, ok := want[t]
	if !ok {
		return fmt.Errorf("%s is an invalid hostPath type", t)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		switch t {
		case corev1.HostPathDirectoryOrCreate:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("create hostPath directory: %w", err)
			}
		case corev1.HostPathFileOrCreate:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return fmt.Errorf("create hostPath file: %w", err)
			}
			_ = f.Close()
		}
	}
	got, err := fileType(path)
	if err != nil {
		return fmt.Errorf("hostPath type check failed, %s is not a %s, unable to determine its type: %w", path, w.words, err)
	}
	if got != w.typ {
		return fmt.Errorf("hostPath type check failed: %s is not a %s, it's a %s", path, w.words, got)
	}
	return nil
}
