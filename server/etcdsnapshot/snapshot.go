// Package etcdsnapshot keeps snapshots of the embedded etcd as k3s does:
// files named <name>-<node>-<unix time> (".zip" when compressed) in the
// snapshot directory (default <data-dir>/server/db/snapshots), taken on
// demand (`k1s etcd-snapshot save`) or on a cron schedule inside `k1s
// server` (Scheduler), listed, deleted and pruned to a retention count
// (the newest N of a name kept). A snapshot is etcd's own (its snapshot
// API, through go.etcd.io/etcd/client/v3/snapshot); restoring one is
// embed/etcd's Restore, run by `k1s server --cluster-reset
// --cluster-reset-restore-path`. Reflector keeps k3s's ETCDSnapshotFile
// objects in step with a server's directory.
package etcdsnapshot

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
)

// CompressedExtension ends the name of a compressed snapshot (k3s's).
const CompressedExtension = ".zip"

// Default names of snapshots (k3s's): scheduled ones (--etcd-snapshot-name)
// and on-demand ones (`etcd-snapshot save --name`).
const (
	DefaultScheduledName = "etcd-snapshot"
	DefaultOnDemandName  = "on-demand"
)

// DefaultDir is the snapshot directory of a data dir.
func DefaultDir(dataDir string) string {
	return filepath.Join(dataDir, "server", "db", "snapshots")
}

// FileName is the name of a snapshot taken at t by node (k3s's naming).
func FileName(name, node string, t time.Time, compressed bool) string {
	n := fmt.Sprintf("%s-%s-%d", name, node, t.Unix())
	if compressed {
		n += CompressedExtension
	}
	return n
}

// ValidateName checks a snapshot's base name (flag names the flag).
func ValidateName(flag, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: must not be empty", flag)
	case strings.ContainsAny(name, `/\`) || name == "." || name == "..":
		return fmt.Errorf("%s: %q must be a file name, not a path", flag, name)
	}
	return nil
}

// File is a snapshot in the snapshot directory.
type File struct {
	// Name is the file's name; Path its path.
	Name, Path string
	// CreatedAt is the time in its name, else the file's modification time.
	CreatedAt time.Time
	Size      int64
	// Compressed: a zip archive holding the snapshot.
	Compressed bool
}

func fileOf(dir string, info fs.FileInfo) File {
	base, compressed := strings.CutSuffix(info.Name(), CompressedExtension)
	created := info.ModTime()
	if i := strings.LastIndexByte(base, '-'); i >= 0 {
		if sec, err := strconv.ParseInt(base[i+1:], 10, 64); err == nil {
			created = time.Unix(sec, 0)
		}
	}
	return File{Name: info.Name(), Path: filepath.Join(dir, info.Name()), CreatedAt: created, Size: info.Size(), Compressed: compressed}
}

// List returns the snapshots in dir, newest first. A missing dir holds none.
func List(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots in %s: %w", dir, err)
	}
	var out []File
	for _, e := range entries {
		// A snapshot being written is <name>.part (etcd's library);
		// one being compressed, .<name> then <name>.zip.tmp.
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || strings.HasSuffix(e.Name(), ".part") || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileOf(dir, info))
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(files []File) {
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].CreatedAt.Equal(files[j].CreatedAt) {
			return files[i].CreatedAt.After(files[j].CreatedAt)
		}
		return files[i].Name > files[j].Name
	})
}

// Delete removes the named snapshots from dir. Every name is tried; the
// error joins those that failed (a missing one included).
func Delete(dir string, names []string) (deleted []string, err error) {
	var errs []error
	for _, n := range names {
		if err := ValidateName("snapshot name", n); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("snapshot %s not found in %s", n, dir))
			} else {
				errs = append(errs, fmt.Errorf("delete snapshot %s: %w", n, err))
			}
			continue
		}
		deleted = append(deleted, n)
	}
	return deleted, errors.Join(errs...)
}

// Prune keeps the newest retention snapshots in dir whose names start
// with prefix and removes the older ones, returning their names (k3s's
// retention). A retention below 1 keeps everything.
func Prune(dir, prefix string, retention int) ([]string, error) {
	if retention < 1 {
		return nil, nil
	}
	all, err := List(dir)
	if err != nil {
		return nil, err
	}
	var matching []File
	for _, f := range all {
		if strings.HasPrefix(f.Name, prefix) {
			matching = append(matching, f)
		}
	}
	if len(matching) <= retention {
		return nil, nil
	}
	var deleted []string
	for _, f := range matching[retention:] {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return deleted, fmt.Errorf("prune snapshot %s: %w", f.Name, err)
		}
		deleted = append(deleted, f.Name)
	}
	return deleted, nil
}

// Etcd is how a snapshot reaches etcd: one member's client URL and the
// client certificate it accepts.
type Etcd struct {
	Endpoint                  string
	CAFile, CertFile, KeyFile string
}

// SaveFunc writes a snapshot of etcd's database to path.
type SaveFunc func(ctx context.Context, path string) error

// SaveFrom is the SaveFunc of a member: etcd's snapshot library (its
// Maintenance.Snapshot stream, the sha256 trailer checked, written to
// a .part file renamed when complete).
func SaveFrom(e Etcd) SaveFunc {
	return func(ctx context.Context, path string) error {
		tlsCfg, err := transport.TLSInfo{CertFile: e.CertFile, KeyFile: e.KeyFile, TrustedCAFile: e.CAFile}.ClientConfig()
		if err != nil {
			return fmt.Errorf("etcd client certificate: %w", err)
		}
		cfg := clientv3.Config{Endpoints: []string{e.Endpoint}, TLS: tlsCfg, DialTimeout: 10 * time.Second}
		if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
			return fmt.Errorf("snapshot etcd at %s: %w", e.Endpoint, err)
		}
		return nil
	}
}

// Options describe one snapshot.
type Options struct {
	// Dir is the snapshot directory; Name, NodeName its name's parts.
	Dir, Name, NodeName string
	// Compress zips the snapshot.
	Compress bool
}

// Take saves a snapshot with save into o.Dir (created when missing) at
// time now and returns it. A failed snapshot leaves no file behind.
func Take(ctx context.Context, save SaveFunc, o Options, now time.Time) (File, error) {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return File{}, fmt.Errorf("snapshot directory: %w", err)
	}
	name := FileName(o.Name, o.NodeName, now, false)
	path := filepath.Join(o.Dir, name)
	if _, err := os.Stat(path); err == nil {
		return File{}, fmt.Errorf("snapshot %s already exists", path)
	}
	if o.Compress {
		if _, err := os.Stat(path + CompressedExtension); err == nil {
			return File{}, fmt.Errorf("snapshot %s already exists", path+CompressedExtension)
		}
	}
	// A snapshot to compress is saved under a hidden name first, so that
	// no uncompressed snapshot ever shows in the directory.
	raw := path
	if o.Compress {
		raw = filepath.Join(o.Dir, "."+name)
	}
	if err := save(ctx, raw); err != nil {
		os.Remove(raw)
		return File{}, err
	}
	if o.Compress {
		zipped, err := compress(raw, path+CompressedExtension, name, now)
		os.Remove(raw)
		if err != nil {
			return File{}, err
		}
		path = zipped
	}
	info, err := os.Stat(path)
	if err != nil {
		return File{}, err
	}
	return fileOf(o.Dir, info), nil
}

// compress zips the snapshot at path into out (one entry, named name,
// deflated, as k3s's), through a temporary file.
func compress(path, out, name string, now time.Time) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("compress snapshot: %w", err)
	}
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("compress snapshot %s: %w", name, err)
	}
	zw := zip.NewWriter(f)
	hdr, err := zip.FileInfoHeader(info)
	if err != nil {
		return fail(err)
	}
	hdr.Name, hdr.Method, hdr.Modified = name, zip.Deflate, now
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return fail(err)
	}
	if _, err := io.Copy(w, in); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return out, nil
}

// Uncompressed returns the path of the snapshot database of path: path
// itself, or, for a .zip, its one entry extracted into dir (done removes
// it).
func Uncompressed(path, dir string) (db string, done func(), err error) {
	if !strings.HasSuffix(path, CompressedExtension) {
		return path, func() {}, nil
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return "", nil, fmt.Errorf("open compressed snapshot %s: %w", path, err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		return "", nil, fmt.Errorf("compressed snapshot %s holds %d files, want 1", path, len(zr.File))
	}
	src, err := zr.File[0].Open()
	if err != nil {
		return "", nil, fmt.Errorf("read compressed snapshot %s: %w", path, err)
	}
	defer src.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp(dir, ".restore-*")
	if err != nil {
		return "", nil, err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", nil, fmt.Errorf("decompress snapshot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", nil, err
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}
