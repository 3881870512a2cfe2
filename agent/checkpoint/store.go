package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Kinds the checkpoint keeps.
const (
	Pods           = "pods"
	ConfigMaps     = "configmaps"
	Secrets        = "secrets"
	Tokens         = "tokens"
	Services       = "services"
	EndpointSlices = "endpointslices"
	Nodes          = "nodes"
)

// DefaultMaxBytes bounds the whole checkpoint: 64 MiB.
const DefaultMaxBytes = 64 << 20

// listedMarker, in a kind's directory, says a full list of the kind was
// kept once: an empty directory then means "none", not "never listed".
const listedMarker = ".listed"

// ErrFull is returned when keeping an object would pass Config.MaxBytes.
var ErrFull = errors.New("checkpoint full")

// Config configures the store.
type Config struct {
	// Dir holds the checkpoint (<data-dir>/agent/checkpoint). Required.
	Dir string
	// MaxBytes bounds the size of all files together. Default
	// DefaultMaxBytes.
	MaxBytes int64
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("checkpoint: no directory")
	}
	if c.MaxBytes < 0 {
		return fmt.Errorf("checkpoint: max bytes %d must not be negative", c.MaxBytes)
	}
	return nil
}

type fileState struct {
	size int64
	sum  [sha256.Size]byte
}

// Store is the on-disk checkpoint. Safe for concurrent use.
type Store struct {
	cfg Config

	mu     sync.Mutex
	files  map[string]fileState // by kind/file name
	total  int64
	writes int // files written or removed, for tests and metrics

	// offline is set by any list that found the apiservers unreachable
	// (or by MarkUnreachable) and cleared by any that succeeded.
	offline atomic.Bool
	// localPods is the node's view of its own pods (SetLocalPods).
	localPods atomic.Pointer[LocalPodFunc]
}

// MarkUnreachable says the apiservers did not answer just now (the node's
// start-up found so): the informers' first lists then wait for them only
// briefly before the checkpoint answers.
func (s *Store) MarkUnreachable() { s.offline.Store(true) }

// New opens (creating) the checkpoint directory and indexes what it holds.
func New(cfg Config) (*Store, error) {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create checkpoint directory: %w", err)
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	s := &Store{cfg: cfg, files: map[string]fileState{}}
	kinds, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint directory: %w", err)
	}
	for _, k := range kinds {
		if !k.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(cfg.Dir, k.Name()))
		if err != nil {
			return nil, fmt.Errorf("read checkpoint directory: %w", err)
		}
		for _, e := range entries {
			path := filepath.Join(cfg.Dir, k.Name(), e.Name())
			if strings.HasPrefix(e.Name(), ".tmp-") {
				_ = os.Remove(path) // a write cut short
				continue
			}
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read checkpoint: %w", err)
			}
			s.files[k.Name()+"/"+e.Name()] = fileState{size: int64(len(data)), sum: sha256.Sum256(data)}
			s.total += int64(len(data))
		}
	}
	return s, nil
}

// fileName is an object's file in its kind's directory: namespace_name
// (names and namespaces hold no '_' or '/'); cluster-scoped objects have
// an empty namespace.
func fileName(namespace, name string) (string, error) {
	for _, p := range []string{namespace, name} {
		if strings.ContainsAny(p, "/_\x00") || p == "." || p == ".." {
			return "", fmt.Errorf("checkpoint: invalid object name %q/%q", namespace, name)
		}
	}
	if name == "" {
		return "", errors.New("checkpoint: object without a name")
	}
	return namespace + "_" + name + ".json", nil
}

// Put keeps v (encoded as JSON) as kind's namespace/name. It writes
// nothing when the file already holds the same bytes; written says
// whether it wrote.
func (s *Store) Put(kind, namespace, name string, v any) (written bool, err error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Errorf("checkpoint %s %s/%s: %w", kind, namespace, name, err)
	}
	file, err := fileName(namespace, name)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putLocked(kind, file, data)
}

func (s *Store) putLocked(kind, file string, data []byte) (bool, error) {
	key := kind + "/" + file
	sum := sha256.Sum256(data)
	old, had := s.files[key]
	if had && old.sum == sum && old.size == int64(len(data)) {
		return false, nil
	}
	if s.total-old.size+int64(len(data)) > s.cfg.MaxBytes {
		return false, fmt.Errorf("%w: %s %s needs %d bytes beyond the bound of %d", ErrFull, kind, file, s.total-old.size+int64(len(data))-s.cfg.MaxBytes, s.cfg.MaxBytes)
	}
	dir := filepath.Join(s.cfg.Dir, kind)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	if err := writeAtomic(dir, file, data); err != nil {
		return false, fmt.Errorf("checkpoint %s: %w", key, err)
	}
	s.files[key] = fileState{size: int64(len(data)), sum: sum}
	s.total += int64(len(data)) - old.size
	s.writes++
	return true, nil
}

// writeAtomic writes dir/file through a temporary file: fsync, rename,
// fsync of dir. Readers see the old content or the new, never a part.
func writeAtomic(dir, file string, data []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-"+file+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Delete removes kind's namespace/name; removing what is not there is no
// error.
func (s *Store) Delete(kind, namespace, name string) error {
	file, err := fileName(namespace, name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.removeLocked(kind, file); err != nil {
		return err
	}
	return syncDir(filepath.Join(s.cfg.Dir, kind))
}

func (s *Store) removeLocked(kind, file string) error {
	key := kind + "/" + file
	old, had := s.files[key]
	if !had {
		return nil
	}
	if err := os.Remove(filepath.Join(s.cfg.Dir, kind, file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	delete(s.files, key)
	s.total -= old.size
	s.writes++
	return nil
}

// Object is one object of a Replace.
type Object struct {
	Namespace, Name string
	Value           any
}

// Replace makes objs the whole of kind: changed objects are written, the
// others left alone, objects not in objs removed, and kind is marked
// listed. Objects past the bound are left out (the error says which);
// the rest is kept.
func (s *Store) Replace(kind string, objs []Object) error {
	type enc struct {
		file string
		data []byte
	}
	var errs []error
	want := make([]enc, 0, len(objs))
	keep := map[string]bool{}
	for _, o := range objs {
		file, err := fileName(o.Namespace, o.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		data, err := json.Marshal(o.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %s %s: %w", kind, file, err))
			continue
		}
		want = append(want, enc{file, data})
		keep[file] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Removals first, so that the space they free counts for the writes.
	removed := false
	for key := range s.files {
		k, file, _ := strings.Cut(key, "/")
		if k == kind && !keep[file] {
			if err := s.removeLocked(kind, file); err != nil {
				errs = append(errs, err)
			}
			removed = true
		}
	}
	dir := filepath.Join(s.cfg.Dir, kind)
	if removed {
		if err := syncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, w := range want {
		if _, err := s.putLocked(kind, w.file, w.data); err != nil {
			errs = append(errs, err)
		}
	}
	marker := filepath.Join(dir, listedMarker)
	if _, err := os.Stat(marker); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			errs = append(errs, err)
		} else if err := writeAtomic(dir, listedMarker, nil); err != nil {
			errs = append(errs, err)
		} else {
			s.writes++
		}
	}
	return errors.Join(errs...)
}

// Listed reports whether a full list of kind was kept once.
func (s *Store) Listed(kind string) bool {
	_, err := os.Stat(filepath.Join(s.cfg.Dir, kind, listedMarker))
	return err == nil
}

// Get decodes kind's namespace/name into v; ok is false when it is not
// kept.
func (s *Store) Get(kind, namespace, name string, v any) (ok bool, err error) {
	file, err := fileName(namespace, name)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	_, had := s.files[kind+"/"+file]
	s.mu.Unlock()
	if !had {
		return false, nil
	}
	data, err := os.ReadFile(filepath.Join(s.cfg.Dir, kind, file))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("checkpoint %s %s: %w", kind, file, err)
	}
	return true, nil
}

// List returns the raw JSON of every kept object of kind, in file order.
func (s *Store) List(kind string) ([][]byte, error) {
	s.mu.Lock()
	var files []string
	for key := range s.files {
		if k, file, _ := strings.Cut(key, "/"); k == kind {
			files = append(files, file)
		}
	}
	s.mu.Unlock()
	sort.Strings(files)
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(s.cfg.Dir, kind, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		out = append(out, bytes.Clone(data))
	}
	return out, nil
}

// Names returns the namespace/name of every kept object of kind.
func (s *Store) Names(kind string) [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][2]string
	for key := range s.files {
		k, file, _ := strings.Cut(key, "/")
		if k != kind {
			continue
		}
		ns, name, _ := strings.Cut(strings.TrimSuffix(file, ".json"), "_")
		out = append(out, [2]string{ns, name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+"/"+out[i][1] < out[j][0]+"/"+out[j][1] })
	return out
}

// Size returns the bytes the checkpoint's objects take.
func (s *Store) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Writes returns how many files the store wrote or removed since New.
func (s *Store) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}
