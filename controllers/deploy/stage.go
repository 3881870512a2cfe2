package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

var templateVar = regexp.MustCompile(`%\{[A-Z0-9_]+\}%`)

// Stage writes the packaged manifests into dir, k3s's way: every start,
// with their %{NAME}% variables replaced from vars, over what is there,
// unless NAME is disabled (not written; the controller removes a copy a
// previous start wrote) or a NAME.skip file sits beside it (the operator
// keeps their own copy). A file whose content would not change is not
// rewritten, so its modification time tells when it last changed. A
// variable vars lacks is an error: a manifest is never written half-filled.
func Stage(dir string, packaged fs.FS, vars map[string]string, disabled map[string]bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the manifests folder: %w", err)
	}
	names, err := fs.Glob(packaged, "*")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var written []string
	var errs []error
	for _, name := range names {
		if !isManifest(name) || disabled[disableName(name)] {
			continue
		}
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path + ".skip"); err == nil {
			continue
		}
		content, err := fs.ReadFile(packaged, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("read packaged manifest %s: %w", name, err))
			continue
		}
		content, err = Expand(content, vars)
		if err != nil {
			errs = append(errs, fmt.Errorf("packaged manifest %s: %w", name, err))
			continue
		}
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			written = append(written, path)
			continue
		}
		if err := writeFileAtomic(path, content, 0o600); err != nil {
			errs = append(errs, fmt.Errorf("write manifest %s: %w", path, err))
			continue
		}
		written = append(written, path)
	}
	return written, errors.Join(errs...)
}

// Expand replaces every %{NAME}% of content with vars["NAME"]; a variable
// vars lacks is an error naming it.
func Expand(content []byte, vars map[string]string) ([]byte, error) {
	var missing []string
	out := templateVar.ReplaceAllFunc(content, func(m []byte) []byte {
		name := string(m[2 : len(m)-2])
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("no value for template variable(s) %v", missing)
	}
	return out, nil
}
