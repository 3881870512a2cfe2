package containerd

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
)

func testAssets(shim string) fstest.MapFS {
	return fstest.MapFS{
		ShimName:     &fstest.MapFile{Data: []byte(shim), Mode: 0o755},
		"README":     &fstest.MapFile{Data: []byte("readme")},
		pauseArchive: &fstest.MapFile{Data: []byte("tar")},
	}
}

func TestLoadBundle(t *testing.T) {
	if _, err := loadBundle(fstest.MapFS{"README": &fstest.MapFile{}}); !errors.Is(err, errNoShim) {
		t.Fatalf("no shim: err = %v, want errNoShim", err)
	}
	if errNoShim.Error() != "k1s was built without the containerd shim: build it with make build" {
		t.Errorf("message = %q", errNoShim)
	}
	a, err := loadBundle(testAssets("shim v1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := loadBundle(testAssets("shim v1"))
	c, _ := loadBundle(testAssets("shim v2"))
	if len(a.hash) != 12 || a.hash != b.hash || a.hash == c.hash {
		t.Errorf("hashes %q %q %q: want 12 hex digits, equal for equal content only", a.hash, b.hash, c.hash)
	}
	if len(a.files) != 1 {
		t.Errorf("bundle files = %v, want only the shim (the pause image is imported, not extracted)", a.files)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func TestExtractIsIdempotent(t *testing.T) {
	dataDir := t.TempDir()
	b, err := loadBundle(testAssets("shim v1"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := b.extract(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if bin != filepath.Join(dataDir, "data", b.hash, "bin") {
		t.Errorf("bin dir = %s", bin)
	}
	shim := filepath.Join(bin, ShimName)
	data, err := os.ReadFile(shim)
	if err != nil || string(data) != "shim v1" {
		t.Fatalf("extracted shim = %q, %v", data, err)
	}
	if st, _ := os.Stat(shim); st.Mode().Perm() != 0o755 {
		t.Errorf("shim mode = %v, want 0755", st.Mode())
	}
	ino := inode(t, shim)

	// A second start leaves the files alone.
	if bin2, err := b.extract(dataDir); err != nil || bin2 != bin {
		t.Fatalf("second extract = %s, %v", bin2, err)
	}
	if inode(t, shim) != ino {
		t.Error("the second extract rewrote the shim")
	}

	// A truncated file (by hand) is replaced.
	os.WriteFile(shim, []byte("short"), 0o755)
	if _, err := b.extract(dataDir); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(shim); string(data) != "shim v1" {
		t.Errorf("damaged shim not replaced: %q", data)
	}

	// Another k1s version extracts beside, leaving no temporary directory.
	c, _ := loadBundle(testAssets("shim v2"))
	if _, err := c.extract(dataDir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "data"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("data dir holds %v, want the two bundles only", names)
	}
}

func TestExtractConcurrently(t *testing.T) {
	dataDir := t.TempDir()
	b, _ := loadBundle(testAssets("shim"))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.extract(dataDir)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent extract: %v", err)
		}
	}
	if !b.present(filepath.Join(dataDir, "data", b.hash, "bin")) {
		t.Error("bundle not present after concurrent extraction")
	}
}

func TestRunWithoutShimFailsClearly(t *testing.T) {
	c, err := New(Config{DataDir: t.TempDir(), State: "/run/k1s-none/containerd", Executable: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	c.assets = fstest.MapFS{"README": &fstest.MapFile{}}
	if err := c.Run(t.Context()); !errors.Is(err, errNoShim) {
		t.Fatalf("Run = %v, want the missing shim error", err)
	}
}

func TestPauseImageArchive(t *testing.T) {
	old := bundled
	t.Cleanup(func() { bundled = old })
	bundled = testAssets("s")
	if data, err := PauseImageArchive(); err != nil || string(data) != "tar" {
		t.Errorf("PauseImageArchive = %q, %v", data, err)
	}
	bundled = fstest.MapFS{}
	if _, err := PauseImageArchive(); err == nil || err.Error() != "k1s was built without the pause image: build it with make build" {
		t.Errorf("missing pause image: %v", err)
	}
}
