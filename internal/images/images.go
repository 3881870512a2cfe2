// Package images imports image tarballs into containerd without a
// registry: OCI image layouts and `docker save` archives, plain or
// compressed with gzip or zstd, into the CRI's "k8s.io" namespace, unpacked
// for the CRI's snapshotter so a pod can start from them at once.
//
// An Importer remembers what it imported in a small state file, so a k1s
// restart skips archives that did not change and whose images are still
// there. `k1s images import` and the node agent's start-up use it.
package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/pkg/archive/compression"
	"k8s.io/klog/v2"
)

const (
	// DefaultNamespace is the containerd namespace the CRI plugin uses.
	DefaultNamespace = "k8s.io"
	// PinnedLabel marks an image the CRI plugin's image GC must keep.
	PinnedLabel = "io.cri-containerd.pinned"
	// pinnedValue is PinnedLabel's value for a pinned image.
	pinnedValue = "pinned"
	// managedLabel marks an image as one the CRI plugin manages, as its
	// own pulls do.
	managedLabel = "io.cri-containerd.image"
)

// Archive is an image tarball to import.
type Archive struct {
	// Name identifies the archive in logs and in the state file: its path,
	// or a name like "bundled:pause".
	Name string
	// Key changes whenever the content does (size and mtime of a file, the
	// digest of data in memory). An archive whose Key was imported before
	// is skipped while its images still exist.
	Key string
	// Open returns the archive's bytes, possibly gzip or zstd compressed.
	Open func() (io.ReadCloser, error)
	// Pin labels the imported images so image GC never removes them.
	Pin bool
}

// FileArchive returns the archive at path, keyed by its size and mtime.
func FileArchive(path string) (Archive, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Archive{}, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return Archive{}, fmt.Errorf("image archive: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Archive{}, fmt.Errorf("image archive %s is not a regular file", abs)
	}
	return Archive{
		Name: abs,
		Key:  "size=" + strconv.FormatInt(st.Size(), 10) + ",mtime=" + strconv.FormatInt(st.ModTime().UnixNano(), 10),
		Open: func() (io.ReadCloser, error) { return os.Open(abs) },
	}, nil
}

// BytesArchive returns an archive held in memory, keyed by its digest.
func BytesArchive(name string, data []byte, pin bool) Archive {
	sum := sha256.Sum256(data)
	return Archive{
		Name: name,
		Key:  "sha256:" + hex.EncodeToString(sum[:]),
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		Pin:  pin,
	}
}

// archiveSuffixes are the file names DirArchives picks up.
var archiveSuffixes = []string{".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"}

// DirArchives lists the image archives in dir (*.tar, *.tar.gz, *.tgz,
// *.tar.zst), sorted by name, each to be pinned: as k3s's air-gap
// images, what a node was given as files it may not be able to pull
// again, so image GC keeps them. A missing dir has none.
func DirArchives(dir string) ([]Archive, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list image archives: %w", err)
	}
	var out []Archive
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !hasArchiveSuffix(e.Name()) {
			continue
		}
		a, err := FileArchive(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		a.Pin = true
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func hasArchiveSuffix(name string) bool {
	for _, s := range archiveSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// Result is the outcome of importing one archive.
type Result struct {
	Archive string
	// Images are the names the archive's images were stored under.
	Images []string
	// Skipped is true when the archive was imported before and its images
	// are still present.
	Skipped bool
}

// store is the image store imports go to: containerd, or a fake in tests.
type store interface {
	// importArchive imports an uncompressed archive, labels its images,
	// unpacks them and returns their names.
	importArchive(ctx context.Context, r io.Reader, labels map[string]string) ([]string, error)
	// labels returns an image's labels; ok is false when it does not exist.
	labels(ctx context.Context, name string) (labels map[string]string, ok bool, err error)
	// unpin removes an image's pin label; a missing image is no error.
	unpin(ctx context.Context, name string) error
	close() error
}

// Importer imports archives into one image store. Not safe for concurrent
// use.
type Importer struct {
	store     store
	stateFile string
}

// Close releases the connection to containerd.
func (i *Importer) Close() error { return i.store.close() }

// record is what the state file remembers of one archive.
type record struct {
	Key    string   `json:"key"`
	Images []string `json:"images"`
}

// Import imports each archive that changed since its last import or whose
// images are gone, in order. It carries on past a failed archive and
// returns every failure joined.
func (i *Importer) Import(ctx context.Context, archives ...Archive) ([]Result, error) {
	logger := klog.FromContext(ctx)
	state := i.loadState(logger)
	var (
		results []Result
		errs    []error
		changed bool
	)
	for _, a := range archives {
		if rec, ok := state[a.Name]; ok && rec.Key == a.Key {
			present, err := i.present(ctx, rec.Images, a.Pin)
			if err != nil {
				errs = append(errs, fmt.Errorf("import %s: %w", a.Name, err))
				continue
			}
			if present {
				logger.V(4).Info("Image archive imported before", "archive", a.Name, "images", rec.Images)
				results = append(results, Result{Archive: a.Name, Images: rec.Images, Skipped: true})
				continue
			}
		}
		names, err := i.importOne(ctx, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("import %s: %w", a.Name, err))
			continue
		}
		logger.V(2).Info("Imported image archive", "archive", a.Name, "images", names)
		state[a.Name] = record{Key: a.Key, Images: names}
		changed = true
		results = append(results, Result{Archive: a.Name, Images: names})
	}
	if changed {
		if err := i.saveState(state); err != nil {
			errs = append(errs, err)
		}
	}
	return results, errors.Join(errs...)
}

// Unpin drops the pin from the images of archives once imported from dir
// that are no longer among current (the archives now in dir), unless an
// archive still there holds the same image name, and forgets those
// archives: images whose tarball was removed become image GC's to take,
// as k3s's. An image already gone is no error.
func (i *Importer) Unpin(ctx context.Context, dir string, current []Archive) error {
	logger := klog.FromContext(ctx)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("unpin images of removed archives: %w", err)
	}
	state := i.loadState(logger)
	kept := map[string]bool{}
	names := map[string]bool{}
	for _, a := range current {
		names[a.Name] = true
		for _, img := range state[a.Name].Images {
			kept[img] = true
		}
	}
	var errs []error
	changed := false
	for name, rec := range state {
		if filepath.Dir(name) != abs || names[name] {
			continue
		}
		failed := false
		for _, img := range rec.Images {
			if kept[img] {
				continue
			}
			if err := i.store.unpin(ctx, img); err != nil {
				errs = append(errs, fmt.Errorf("unpin %s (its archive %s is gone): %w", img, name, err))
				failed = true
				continue
			}
			logger.V(2).Info("Unpinned image whose archive was removed", "image", img, "archive", name)
		}
		if !failed {
			delete(state, name)
			changed = true
		}
	}
	if changed {
		if err := i.saveState(state); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// present reports whether every image exists (and is pinned if pin).
func (i *Importer) present(ctx context.Context, names []string, pin bool) (bool, error) {
	if len(names) == 0 {
		return false, nil
	}
	for _, n := range names {
		labels, ok, err := i.store.labels(ctx, n)
		if err != nil {
			return false, err
		}
		if !ok || (pin && labels[PinnedLabel] != pinnedValue) {
			return false, nil
		}
	}
	return true, nil
}

func (i *Importer) importOne(ctx context.Context, a Archive) ([]string, error) {
	rc, err := a.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Plain tar, gzip and zstd are told apart by their first bytes.
	dr, err := compression.DecompressStream(rc)
	if err != nil {
		return nil, fmt.Errorf("read archive: %w", err)
	}
	defer dr.Close()
	labels := map[string]string{managedLabel: "managed"}
	if a.Pin {
		labels[PinnedLabel] = pinnedValue
	}
	names, err := i.store.importArchive(ctx, dr, labels)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("the archive names no image (an OCI layout needs the io.containerd.image.name or org.opencontainers.image.ref.name annotation, a docker archive RepoTags)")
	}
	return names, nil
}

func (i *Importer) loadState(logger klog.Logger) map[string]record {
	state := map[string]record{}
	if i.stateFile == "" {
		return state
	}
	data, err := os.ReadFile(i.stateFile)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			logger.Error(err, "Reading the image import state failed; importing every archive again", "path", i.stateFile)
		}
		return state
	}
	if err := json.Unmarshal(data, &state); err != nil {
		logger.Error(err, "Image import state is corrupt; importing every archive again", "path", i.stateFile)
		return map[string]record{}
	}
	return state
}

func (i *Importer) saveState(state map[string]record) error {
	if i.stateFile == "" {
		return nil
	}
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return fmt.Errorf("encode image import state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(i.stateFile), 0o700); err != nil {
		return fmt.Errorf("save image import state: %w", err)
	}
	tmp := i.stateFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("save image import state: %w", err)
	}
	if err := os.Rename(tmp, i.stateFile); err != nil {
		return fmt.Errorf("save image import state: %w", err)
	}
	return nil
}
