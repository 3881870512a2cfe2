package images

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/archive/compression"
)

// fakeStore records imports; an archive's content is the list of image
// names it holds, one per line.
type fakeStore struct {
	images  map[string]map[string]string
	imports []string // the content of each import, in order
	failOn  string   // content that fails to import
}

func newFakeStore() *fakeStore { return &fakeStore{images: map[string]map[string]string{}} }

func (f *fakeStore) importArchive(_ context.Context, r io.Reader, labels map[string]string) ([]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	content := string(data)
	f.imports = append(f.imports, content)
	if content == f.failOn {
		return nil, errors.New("broken archive")
	}
	names := strings.Fields(content)
	for _, n := range names {
		f.images[n] = labels
	}
	return names, nil
}

func (f *fakeStore) labels(_ context.Context, name string) (map[string]string, bool, error) {
	l, ok := f.images[name]
	return l, ok, nil
}

func (f *fakeStore) unpin(_ context.Context, name string) error {
	if l, ok := f.images[name]; ok {
		c := map[string]string{}
		for k, v := range l {
			if k != PinnedLabel {
				c[k] = v
			}
		}
		f.images[name] = c
	}
	return nil
}

func (f *fakeStore) close() error { return nil }

// TestUnpinRemovedArchives: the images of a tarball removed from the
// directory lose their pin, unless a tarball still there holds them too;
// the bundled pause image and the remaining tarballs' images keep theirs.
func TestUnpinRemovedArchives(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	writeArchive(t, dir, "a.tar", "k1s.local/a:1 k1s.local/shared:1", compression.Uncompressed)
	bPath := writeArchive(t, dir, "b.tar", "k1s.local/b:1", compression.Uncompressed)
	cPath := writeArchive(t, dir, "c.tar", "k1s.local/c:1 k1s.local/shared:1", compression.Uncompressed)
	fs := newFakeStore()
	imp := &Importer{store: fs, stateFile: state}
	pause := BytesArchive("bundled:pause", []byte("k1s.local/pause:3.10"), true)
	if _, err := imp.Import(ctx, pause); err != nil {
		t.Fatal(err)
	}
	archives, err := DirArchives(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := imp.Import(ctx, archives...); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bPath, cPath} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if archives, err = DirArchives(dir); err != nil {
		t.Fatal(err)
	}
	if err := imp.Unpin(ctx, dir, archives); err != nil {
		t.Fatalf("Unpin: %v", err)
	}
	for img, want := range map[string]bool{
		"k1s.local/pause:3.10": true, "k1s.local/a:1": true, "k1s.local/shared:1": true,
		"k1s.local/b:1": false, "k1s.local/c:1": false,
	} {
		if got := fs.images[img][PinnedLabel] == "pinned"; got != want {
			t.Errorf("%s pinned = %v, want %v", img, got, want)
		}
	}
	// The removed archives are forgotten: put back, they are imported
	// (and pinned) again.
	writeArchive(t, dir, "b.tar", "k1s.local/b:1", compression.Uncompressed)
	archives, _ = DirArchives(dir)
	fs.imports = nil
	if _, err := imp.Import(ctx, archives...); err != nil {
		t.Fatal(err)
	}
	if want := []string{"k1s.local/b:1"}; !reflect.DeepEqual(fs.imports, want) {
		t.Errorf("imports after restoring b.tar = %q, want %q", fs.imports, want)
	}
	if fs.images["k1s.local/b:1"][PinnedLabel] != "pinned" {
		t.Errorf("b:1 not pinned again")
	}
}

func writeArchive(t *testing.T, dir, name, content string, comp compression.Compression) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := compression.CompressStream(&buf, comp)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(content))
	w.Close()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDirArchives(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.tar", "a.tar.gz", "c.tar.zst", "d.tgz", "notes.txt", ".hidden.tar", "e.tar.bz2"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	os.Mkdir(filepath.Join(dir, "sub.tar"), 0o755)
	got, err := DirArchives(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range got {
		names = append(names, filepath.Base(a.Name))
	}
	want := []string{"a.tar.gz", "b.tar", "c.tar.zst", "d.tgz"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("archives = %v, want %v", names, want)
	}
	if none, err := DirArchives(filepath.Join(dir, "missing")); err != nil || len(none) != 0 {
		t.Errorf("missing dir: %v, %v; want none and no error", none, err)
	}
}

func TestImportSkipsWhatWasImported(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	writeArchive(t, dir, "plain.tar", "k1s.local/a:1", compression.Uncompressed)
	writeArchive(t, dir, "gz.tar.gz", "k1s.local/b:1 k1s.local/b:latest", compression.Gzip)
	writeArchive(t, dir, "zst.tar.zst", "k1s.local/c:1", compression.Zstd)
	pause := BytesArchive("bundled:pause", []byte("k1s.local/pause:3.10"), true)

	fs := newFakeStore()
	imp := &Importer{store: fs, stateFile: state}
	archives := func() []Archive {
		a, err := DirArchives(dir)
		if err != nil {
			t.Fatal(err)
		}
		return append([]Archive{pause}, a...)
	}

	res, err := imp.Import(ctx, archives()...)
	if err != nil {
		t.Fatalf("first import: %v", err)
	}
	// Every archive was decompressed and imported, the pause image pinned.
	wantImports := []string{"k1s.local/pause:3.10", "k1s.local/b:1 k1s.local/b:latest", "k1s.local/a:1", "k1s.local/c:1"}
	if !reflect.DeepEqual(fs.imports, wantImports) {
		t.Fatalf("imports = %q, want %q", fs.imports, wantImports)
	}
	if fs.images["k1s.local/pause:3.10"][PinnedLabel] != "pinned" {
		t.Errorf("pause labels = %v, want it pinned", fs.images["k1s.local/pause:3.10"])
	}
	if fs.images["k1s.local/a:1"][PinnedLabel] != "pinned" {
		t.Errorf("a:1 labels = %v, want it pinned: air-gap images are", fs.images["k1s.local/a:1"])
	}
	if fs.images["k1s.local/a:1"][managedLabel] != "managed" {
		t.Errorf("a:1 labels = %v, want the CRI managed label", fs.images["k1s.local/a:1"])
	}
	for _, r := range res {
		if r.Skipped {
			t.Errorf("first import skipped %s", r.Archive)
		}
	}

	// A second start with the same files imports nothing.
	fs.imports = nil
	imp = &Importer{store: fs, stateFile: state}
	res, err = imp.Import(ctx, archives()...)
	if err != nil {
		t.Fatalf("second import: %v", err)
	}
	if len(fs.imports) != 0 {
		t.Errorf("second import re-imported %q", fs.imports)
	}
	if len(res) != 4 || !res[1].Skipped || !reflect.DeepEqual(res[1].Images, []string{"k1s.local/b:1", "k1s.local/b:latest"}) {
		t.Errorf("second results = %+v, want all skipped with their images", res)
	}

	// A changed file, a removed image and a lost pin are imported again.
	time.Sleep(10 * time.Millisecond)
	writeArchive(t, dir, "plain.tar", "k1s.local/a:2", compression.Uncompressed)
	delete(fs.images, "k1s.local/c:1")
	delete(fs.images["k1s.local/pause:3.10"], PinnedLabel)
	if _, err := imp.Import(ctx, archives()...); err != nil {
		t.Fatalf("third import: %v", err)
	}
	wantImports = []string{"k1s.local/pause:3.10", "k1s.local/a:2", "k1s.local/c:1"}
	if !reflect.DeepEqual(fs.imports, wantImports) {
		t.Errorf("third imports = %q, want %q", fs.imports, wantImports)
	}
}

func TestImportCarriesOnPastFailures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	writeArchive(t, dir, "a.tar", "broken", compression.Uncompressed)
	writeArchive(t, dir, "b.tar", "k1s.local/b:1", compression.Uncompressed)
	writeArchive(t, dir, "c.tar", "", compression.Uncompressed)
	fs := newFakeStore()
	fs.failOn = "broken"
	imp := &Importer{store: fs, stateFile: state}
	archives, _ := DirArchives(dir)
	res, err := imp.Import(ctx, archives...)
	if err == nil {
		t.Fatal("no error for a broken and an empty archive")
	}
	for _, want := range []string{"a.tar: broken archive", "c.tar: the archive names no image"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(res) != 1 || res[0].Images[0] != "k1s.local/b:1" {
		t.Errorf("results = %+v, want b imported", res)
	}
	// Failed archives are not remembered: the next run tries them again.
	fs.imports, fs.failOn = nil, ""
	if _, err := imp.Import(ctx, archives...); err == nil || !strings.Contains(err.Error(), "c.tar") {
		t.Fatalf("err = %v, want c.tar to fail again", err)
	}
	if !reflect.DeepEqual(fs.imports, []string{"broken", ""}) {
		t.Errorf("imports = %q, want a.tar and c.tar retried, b.tar skipped", fs.imports)
	}
}

func TestImportWithoutStateFileAlwaysImports(t *testing.T) {
	fs := newFakeStore()
	imp := &Importer{store: fs}
	a := BytesArchive("x", []byte("k1s.local/x:1"), false)
	for range 2 {
		if _, err := imp.Import(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if len(fs.imports) != 2 {
		t.Errorf("imports = %q, want two", fs.imports)
	}
}

func TestImportCorruptStateImportsAgain(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(state, []byte("{not json"), 0o600)
	fs := newFakeStore()
	imp := &Importer{store: fs, stateFile: state}
	if _, err := imp.Import(context.Background(), BytesArchive("x", []byte("k1s.local/x:1"), false)); err != nil {
		t.Fatal(err)
	}
	if len(fs.imports) != 1 {
		t.Fatalf("imports = %q", fs.imports)
	}
	data, _ := os.ReadFile(state)
	if !strings.Contains(string(data), `"k1s.local/x:1"`) {
		t.Errorf("state not rewritten: %s", data)
	}
}

func TestFileArchiveKeyChangesWithContent(t *testing.T) {
	dir := t.TempDir()
	p := writeArchive(t, dir, "a.tar", "one", compression.Uncompressed)
	a1, err := FileArchive(p)
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, time.Now(), time.Now().Add(time.Hour))
	a2, _ := FileArchive(p)
	if a1.Key == a2.Key {
		t.Errorf("key %q did not change with the mtime", a1.Key)
	}
	if _, err := FileArchive(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: err = %v", err)
	}
	if BytesArchive("p", []byte("a"), false).Key == BytesArchive("p", []byte("b"), false).Key {
		t.Error("bytes archives with different content share a key")
	}
}
