package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func testImage(t *testing.T) Image {
	src := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(src, []byte("#!binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Image{
		Name:         "k1s.local/test:1",
		Architecture: "amd64",
		Config: Config{
			Entrypoint:   []string{"/bin/prog"},
			Cmd:          []string{"--serve"},
			Env:          []string{"PATH=/bin", "A=b"},
			WorkingDir:   "/work",
			User:         "65534:65534",
			ExposedPorts: []string{"8080/tcp"},
			StopSignal:   "SIGTERM",
		},
		Entries: []Entry{
			{Path: "/bin/prog", Source: src, Mode: 0o755},
			{Path: "/bin/sh", Type: Symlink, Target: "prog"},
			{Path: "/etc/motd", Data: []byte("hello\n")},
			{Path: "/tmp", Type: Dir, Mode: 0o777 | fs.ModeSticky},
			{Path: "/usr/bin/su", Data: []byte("x"), Mode: 0o755 | fs.ModeSetuid},
			{Path: "/work", Type: Dir, UID: 65534, GID: 65534},
		},
	}
}

func writeImage(t *testing.T, img Image) ([]byte, ocispec.Descriptor) {
	t.Helper()
	var buf bytes.Buffer
	desc, err := Write(&buf, img)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes(), desc
}

func TestWriteReadRoundTrip(t *testing.T) {
	data, desc := writeImage(t, testImage(t))
	layout, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(layout.Index.Manifests) != 1 || layout.Index.Manifests[0].Digest != desc.Digest {
		t.Fatalf("index manifests = %+v, want the one written (%s)", layout.Index.Manifests, desc.Digest)
	}
	md := layout.Index.Manifests[0]
	for _, key := range []string{ocispec.AnnotationRefName, AnnotationContainerdImageName} {
		if got := md.Annotations[key]; got != "k1s.local/test:1" {
			t.Errorf("annotation %s = %q, want the full name", key, got)
		}
	}
	if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != "amd64" {
		t.Errorf("platform = %+v", md.Platform)
	}
	if layout.Index.MediaType != ocispec.MediaTypeImageIndex || layout.Index.SchemaVersion != 2 {
		t.Errorf("index media type/schema = %q/%d", layout.Index.MediaType, layout.Index.SchemaVersion)
	}
	if len(layout.Blobs) != 3 {
		t.Errorf("%d blobs, want 3 (manifest, config, layer)", len(layout.Blobs))
	}

	imgs, err := layout.Images()
	if err != nil {
		t.Fatalf("Images: %v", err)
	}
	if len(imgs) != 1 {
		t.Fatalf("%d images", len(imgs))
	}
	img := imgs[0]
	if img.Name != "k1s.local/test:1" {
		t.Errorf("name = %q", img.Name)
	}
	wantCfg := ocispec.ImageConfig{
		User: "65534:65534", Env: []string{"PATH=/bin", "A=b"}, Entrypoint: []string{"/bin/prog"},
		Cmd: []string{"--serve"}, WorkingDir: "/work", StopSignal: "SIGTERM",
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
	}
	if !reflect.DeepEqual(img.Config.Config, wantCfg) {
		t.Errorf("config = %+v, want %+v", img.Config.Config, wantCfg)
	}
	if img.Config.OS != "linux" || img.Config.Architecture != "amd64" || img.Config.RootFS.Type != "layers" {
		t.Errorf("config platform/rootfs = %s/%s/%s", img.Config.OS, img.Config.Architecture, img.Config.RootFS.Type)
	}
	if img.Config.Created == nil || !img.Config.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created = %v, want the epoch", img.Config.Created)
	}
	if img.Manifest.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip {
		t.Errorf("layer media type = %q", img.Manifest.Layers[0].MediaType)
	}

	type file struct {
		typ  byte
		mode int64
		uid  int
		link string
		data string
	}
	got := map[string]file{}
	var order []string
	for _, f := range img.Files {
		got[f.Path] = file{f.Typeflag, f.Mode, f.UID, f.Linkname, string(f.Data)}
		order = append(order, f.Path)
	}
	want := map[string]file{
		"bin/":       {tar.TypeDir, 0o755, 0, "", ""},
		"bin/prog":   {tar.TypeReg, 0o755, 0, "", "#!binary"},
		"bin/sh":     {tar.TypeSymlink, 0o777, 0, "prog", ""},
		"etc/":       {tar.TypeDir, 0o755, 0, "", ""},
		"etc/motd":   {tar.TypeReg, 0o644, 0, "", "hello\n"},
		"tmp/":       {tar.TypeDir, 0o1777, 0, "", ""},
		"usr/":       {tar.TypeDir, 0o755, 0, "", ""},
		"usr/bin/":   {tar.TypeDir, 0o755, 0, "", ""},
		"usr/bin/su": {tar.TypeReg, 0o4755, 0, "", "x"},
		"work/":      {tar.TypeDir, 0o755, 65534, "", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer files:\n got %+v\nwant %+v", got, want)
	}
	wantOrder := []string{"bin/", "bin/prog", "bin/sh", "etc/", "etc/motd", "tmp/", "usr/", "usr/bin/", "usr/bin/su", "work/"}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("layer order = %v, want %v", order, wantOrder)
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	img := testImage(t)
	a, da := writeImage(t, img)
	// Entries in another order give the same bytes.
	img.Entries[0], img.Entries[4] = img.Entries[4], img.Entries[0]
	b, db := writeImage(t, img)
	if !bytes.Equal(a, b) || da.Digest != db.Digest {
		t.Errorf("two writes of the same image differ (%s vs %s)", da.Digest, db.Digest)
	}
	img.Name = "k1s.local/test:2"
	_, dc := writeImage(t, img)
	if dc.Digest != da.Digest {
		t.Errorf("the name changed the manifest digest; it must only be an index annotation")
	}
}

func TestWriteOuterLayout(t *testing.T) {
	data, desc := writeImage(t, testImage(t))
	tr := tar.NewReader(bytes.NewReader(data))
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Name == "oci-layout" {
			b, _ := io.ReadAll(tr)
			if string(b) != `{"imageLayoutVersion":"1.0.0"}` {
				t.Errorf("oci-layout = %s", b)
			}
		}
	}
	if names[0] != "oci-layout" || names[len(names)-1] != "index.json" {
		t.Errorf("entries = %v, want oci-layout first and index.json last", names)
	}
	if !contains(names, "blobs/sha256/"+desc.Digest.Encoded()) {
		t.Errorf("entries %v lack the manifest blob", names)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestWriteRejects(t *testing.T) {
	cases := []struct {
		name    string
		img     Image
		wantErr string
	}{
		{"no name", Image{}, "image name must not be empty"},
		{"relative path", Image{Name: "x", Entries: []Entry{{Path: "bin/sh"}}}, `entry "bin/sh": path must be absolute`},
		{"unclean path", Image{Name: "x", Entries: []Entry{{Path: "/bin/../sh"}}}, `entry "/bin/../sh": path must be absolute, clean`},
		{"root", Image{Name: "x", Entries: []Entry{{Path: "/", Type: Dir}}}, `entry "/": path must be absolute, clean and not /`},
		{"duplicate", Image{Name: "x", Entries: []Entry{{Path: "/a"}, {Path: "/a"}}}, "entry /a: listed twice"},
		{"data and source", Image{Name: "x", Entries: []Entry{{Path: "/a", Data: []byte("x"), Source: "/etc/hostname"}}}, "entry /a: Data and Source are exclusive"},
		{"symlink without target", Image{Name: "x", Entries: []Entry{{Path: "/a", Type: Symlink}}}, "entry /a: symlink without a target"},
		{"file as parent", Image{Name: "x", Entries: []Entry{{Path: "/a"}, {Path: "/a/b"}}}, "entry /a/b: parent /a is not a directory"},
		{"missing source", Image{Name: "x", Entries: []Entry{{Path: "/a", Source: "/nonexistent/k1s"}}}, "entry /a: open /nonexistent/k1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(io.Discard, tc.img)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// rewrite returns the layout tarball with fn applied to each regular file.
func rewrite(t *testing.T, data []byte, fn func(name string, b []byte) []byte) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if hdr.Typeflag == tar.TypeReg {
			b = fn(hdr.Name, b)
			if b == nil {
				continue
			}
			hdr.Size = int64(len(b))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	tw.Close()
	return out.Bytes()
}

func TestReadRejectsBrokenLayouts(t *testing.T) {
	data, desc := writeImage(t, testImage(t))
	cases := []struct {
		name    string
		fn      func(name string, b []byte) []byte
		wantErr string // from Read, or from Images when prefixed "images: "
	}{
		{"no oci-layout", func(n string, b []byte) []byte {
			if n == "oci-layout" {
				return nil
			}
			return b
		}, "no oci-layout file"},
		{"wrong layout version", func(n string, b []byte) []byte {
			if n == "oci-layout" {
				return []byte(`{"imageLayoutVersion":"2.0.0"}`)
			}
			return b
		}, `unsupported layout version "2.0.0"`},
		{"no index", func(n string, b []byte) []byte {
			if n == "index.json" {
				return nil
			}
			return b
		}, "no index.json"},
		{"corrupt blob", func(n string, b []byte) []byte {
			if n == "blobs/sha256/"+desc.Digest.Encoded() {
				return append(b, ' ')
			}
			return b
		}, "content digest is"},
		{"missing manifest", func(n string, b []byte) []byte {
			if n == "blobs/sha256/"+desc.Digest.Encoded() {
				return nil
			}
			return b
		}, "images: manifest of \"k1s.local/test:1\": blob " + desc.Digest.String() + " (application/vnd.oci.image.manifest.v1+json) is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Read(bytes.NewReader(rewrite(t, data, tc.fn)))
			if want, ok := strings.CutPrefix(tc.wantErr, "images: "); ok {
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				_, err = l.Images()
				if err == nil || err.Error() != want {
					t.Fatalf("Images err = %v, want %q", err, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Read err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestImagesChecksDiffID(t *testing.T) {
	data, _ := writeImage(t, testImage(t))
	l, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// Replace the config's diff ID with a wrong one and store the config
	// under its new digest.
	var m ocispec.Manifest
	for d, b := range l.Blobs {
		if d == l.Index.Manifests[0].Digest {
			json.Unmarshal(b, &m)
		}
	}
	var cfg ocispec.Image
	json.Unmarshal(l.Blobs[m.Config.Digest], &cfg)
	cfg.RootFS.DiffIDs[0] = digest.FromString("other")
	cb, _ := json.Marshal(cfg)
	m.Config.Digest, m.Config.Size = digest.FromBytes(cb), int64(len(cb))
	l.Blobs[m.Config.Digest] = cb
	mb, _ := json.Marshal(m)
	l.Index.Manifests[0].Digest, l.Index.Manifests[0].Size = digest.FromBytes(mb), int64(len(mb))
	l.Blobs[l.Index.Manifests[0].Digest] = mb
	_, err = l.Images()
	if err == nil || !strings.Contains(err.Error(), "uncompressed digest") {
		t.Fatalf("err = %v, want a diff ID mismatch", err)
	}
}
