package deploy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifestFile is one file of the manifests folder the controller acts on.
type manifestFile struct {
	path    string
	modTime time.Time
	size    int64
	// disabled: its base name is in --disable; the file is removed and
	// what it created is deleted.
	disabled bool
}

// isManifest reports whether a file name is one the folder applies:
// .yaml, .yml or .json (any case), and not a dotfile.
func isManifest(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

// addonName is the Addon a file is tracked as (k3s's rule): its base name
// up to the first dot, "traefik.yaml" → "traefik".
func addonName(path string) string {
	name, _, _ := strings.Cut(filepath.Base(path), ".")
	return strings.ToLower(name)
}

// disableName is the name --disable matches a file by: its base name
// without the extension, "local-storage.yaml" → "local-storage".
func disableName(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// listFiles walks dir (and its sub-directories) and returns the manifests
// to act on, sorted by path: NAME.skip beside NAME keeps NAME out
// (unless NAME is disabled, which wins, as in k3s), and any other file is
// ignored. A missing dir holds nothing.
func listFiles(dir string, disabled map[string]bool) ([]manifestFile, error) {
	type entry struct {
		path string
		info fs.FileInfo
	}
	var entries []entry
	skips := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".skip") {
			skips[strings.TrimSuffix(path, ".skip")] = true
			return nil
		}
		if !isManifest(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		entries = append(entries, entry{path: path, info: info})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list manifests in %s: %w", dir, err)
	}
	var out []manifestFile
	for _, e := range entries {
		off := disabled[disableName(e.path)]
		if skips[e.path] && !off {
			continue
		}
		out = append(out, manifestFile{path: e.path, modTime: e.info.ModTime(), size: e.info.Size(), disabled: off})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// checksum is the hex SHA-256 of a file's content, the Addon's spec.checksum.
func checksum(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// parseObjects reads every document of a YAML or JSON file (several YAML
// documents separated by ---; a kind: List's items are taken one by one).
// Empty documents are skipped. An object without apiVersion, kind or
// metadata.name is an error naming the document.
func parseObjects(content []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if isEmptyDocument(raw) {
			continue
		}
		js, err := utilyaml.ToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		items := []*unstructured.Unstructured{obj}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", doc, err)
			}
			items = items[:0]
			for i := range list.Items {
				items = append(items, &list.Items[i])
			}
		}
		for _, o := range items {
			if o.GetAPIVersion() == "" || o.GetKind() == "" {
				return nil, fmt.Errorf("document %d: apiVersion and kind are required", doc)
			}
			if o.GetName() == "" {
				return nil, fmt.Errorf("document %d: %s has no metadata.name", doc, o.GetKind())
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// isEmptyDocument: only blank lines, comments and separators.
func isEmptyDocument(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) == 0 || l[0] == '#' || string(l) == "---" {
			continue
		}
		return false
	}
	return true
}

// applyOrder puts Namespaces and CustomResourceDefinitions first, so that
// a file creating a namespace and objects in it applies in one pass;
// otherwise the file's order is kept.
func applyOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	first := func(o *unstructured.Unstructured) bool {
		gk := o.GroupVersionKind().GroupKind()
		return (gk.Group == "" && gk.Kind == "Namespace") || (gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition")
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if first(o) {
			out = append(out, o)
		}
	}
	for _, o := range objs {
		if !first(o) {
			out = append(out, o)
		}
	}
	return out
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so the controller never reads a half-written manifest.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
