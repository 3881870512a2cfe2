package containerd

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// The files `make build` puts in assets/ before compiling k1s: the runc
// shim and the pause image. assets/README keeps the directory non-empty
// so k1s compiles without them.
//
//go:embed assets
var assets embed.FS

const (
	// ShimName is the runc shim's executable name; containerd looks it up
	// in PATH for the io.containerd.runc.v2 runtime.
	ShimName = "containerd-shim-runc-v2"
	// pauseArchive is the pause image tarball in assets/.
	pauseArchive = "pause.tar"
)

// bundledExecutables are the assets extracted into the bin directory.
var bundledExecutables = []string{ShimName}

// errNoShim is returned when the k1s binary carries no shim.
var errNoShim = errors.New("k1s was built without the containerd shim: build it with make build")

// bundle is the set of executables carried in the binary.
type bundle struct {
	files map[string][]byte
	// hash is the first 12 hex digits of the sha256 over the names and
	// contents, naming the directory they are extracted to.
	hash string
}

// loadBundle reads the bundled executables from fsys (the assets
// directory's contents).
func loadBundle(fsys fs.FS) (*bundle, error) {
	b := &bundle{files: map[string][]byte{}}
	for _, name := range bundledExecutables {
		data, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			if name == ShimName {
				return nil, errNoShim
			}
			return nil, fmt.Errorf("k1s was built without %s: build it with make build", name)
		}
		if err != nil {
			return nil, fmt.Errorf("read bundled %s: %w", name, err)
		}
		b.files[name] = data
	}
	h := sha256.New()
	for _, name := range sortedKeys(b.files) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b.files[name])))
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(n[:])
		h.Write(b.files[name])
	}
	b.hash = hex.EncodeToString(h.Sum(nil))[:12]
	return b, nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// bundled is where the shim and the pause image are read from: the
// embedded assets directory (tests may point it elsewhere).
var bundled = embeddedAssets()

// embeddedAssets returns the assets directory embedded in the binary.
func embeddedAssets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		// fs.Sub fails only for an invalid path; "assets" is valid.
		return assets
	}
	return sub
}

// PauseImageArchive returns the pause image tarball carried in the k1s
// binary (an OCI image layout naming DefaultSandboxImage).
func PauseImageArchive() ([]byte, error) {
	data, err := fs.ReadFile(bundled, pauseArchive)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("k1s was built without the pause image: build it with make build")
	}
	if err != nil {
		return nil, fmt.Errorf("read bundled pause image: %w", err)
	}
	return data, nil
}

// extract writes the bundle to <dataDir>/data/<hash>/bin unless it is
// there already, and returns that bin directory. The directory appears
// whole or not at all: files are written to a temporary directory that is
// renamed into place.
func (b *bundle) extract(dataDir string) (string, error) {
	parent := filepath.Join(dataDir, "data")
	dir := filepath.Join(parent, b.hash)
	bin := filepath.Join(dir, "bin")
	if b.present(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s (check --data-dir): %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".extract-"+b.hash+"-")
	if err != nil {
		return "", fmt.Errorf("extract bundled executables: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("extract bundled executables: %w", err)
	}
	if err := os.Mkdir(filepath.Join(tmp, "bin"), 0o755); err != nil {
		return "", fmt.Errorf("extract bundled executables: %w", err)
	}
	for name, data := range b.files {
		if err := writeSynced(filepath.Join(tmp, "bin", name), data, 0o755); err != nil {
			return "", fmt.Errorf("extract %s: %w", name, err)
		}
	}
	// A directory left incomplete by hand would block the rename; one
	// that is complete was just extracted by another k1s process.
	if _, err := os.Stat(dir); err == nil {
		if b.present(bin) {
			return bin, nil
		}
		if err := os.RemoveAll(dir); err != nil {
			if b.present(bin) {
				return bin, nil
			}
			return "", fmt.Errorf("replace incomplete %s: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another k1s process may have extracted the same bundle first.
		if b.present(bin) {
			return bin, nil
		}
		return "", fmt.Errorf("extract bundled executables to %s: %w", dir, err)
	}
	return bin, nil
}

// present reports whether bin holds every bundled file with the right size.
func (b *bundle) present(bin string) bool {
	for name, data := range b.files {
		st, err := os.Stat(filepath.Join(bin, name))
		if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(data)) || st.Mode().Perm()&0o100 == 0 {
			return false
		}
	}
	return true
}

func writeSynced(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
