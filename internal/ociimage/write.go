package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	// go-digest hashes through crypto.SHA256, which this registers.
	_ "crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// AnnotationContainerdImageName is the index annotation containerd's
// importer takes an image's name from (before the OCI ref.name one).
const AnnotationContainerdImageName = "io.containerd.image.name"

// EntryType is the kind of a filesystem entry in the image.
type EntryType int

const (
	// File is a regular file, from Data or Source.
	File EntryType = iota
	// Dir is a directory.
	Dir
	// Symlink is a symbolic link to Target.
	Symlink
)

// Entry is one filesystem entry of the image's single layer. Parent
// directories that are not listed are added with mode 0755.
type Entry struct {
	// Path is the absolute, clean path inside the image ("/bin/sh").
	Path string
	// Type is File (default), Dir or Symlink.
	Type EntryType
	// Mode holds the permission bits. Default 0644 for files, 0755 for
	// directories; symlinks are always 0777.
	Mode fs.FileMode
	// Data is a file's content. Exclusive with Source.
	Data []byte
	// Source is a file on this machine to copy the content from (read when
	// the image is written). Exclusive with Data.
	Source string
	// Target is a symlink's target, absolute or relative.
	Target string
	// UID and GID own the entry. Default 0 (root).
	UID, GID int
}

// Config is the part of the OCI image config that says how to run it.
type Config struct {
	Entrypoint []string
	Cmd        []string
	// Env holds KEY=value pairs.
	Env        []string
	WorkingDir string
	User       string
	// ExposedPorts holds "port/proto" values ("8080/tcp").
	ExposedPorts []string
	Labels       map[string]string
	StopSignal   string
}

// Image is a single-layer image to write.
type Image struct {
	// Name is the full reference containerd names the image by
	// ("k1s.local/pause:3.10"). Required.
	Name string
	// OS is the platform OS. Default "linux".
	OS string
	// Architecture is the platform architecture. Default runtime.GOARCH.
	Architecture string
	// Created is the creation time recorded in the config and the mtime of
	// every layer entry. Default the Unix epoch, for reproducible digests.
	Created time.Time
	// Config says how to run the image.
	Config Config
	// Entries are the files of the image's one layer.
	Entries []Entry
}

func (img *Image) setDefaults() {
	if img.OS == "" {
		img.OS = "linux"
	}
	if img.Architecture == "" {
		img.Architecture = runtime.GOARCH
	}
	if img.Created.IsZero() {
		img.Created = time.Unix(0, 0)
	}
	img.Created = img.Created.UTC()
}

// Write writes img to w as an OCI image-layout tarball and returns the
// descriptor of its manifest.
func Write(w io.Writer, img Image) (ocispec.Descriptor, error) {
	img.setDefaults()
	if img.Name == "" {
		return ocispec.Descriptor{}, errors.New("image name must not be empty")
	}
	layer, diffID, err := buildLayer(img.Entries, img.Created)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("image %s: %w", img.Name, err)
	}
	layerDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageLayerGzip,
		Digest:    digest.FromBytes(layer),
		Size:      int64(len(layer)),
	}

	created := img.Created
	cfg := ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: img.Architecture, OS: img.OS},
		Config: ocispec.ImageConfig{
			User:       img.Config.User,
			Env:        img.Config.Env,
			Entrypoint: img.Config.Entrypoint,
			Cmd:        img.Config.Cmd,
			WorkingDir: img.Config.WorkingDir,
			Labels:     img.Config.Labels,
			StopSignal: img.Config.StopSignal,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{
			Created:   &created,
			CreatedBy: "k1s ociimage",
		}},
	}
	if len(img.Config.ExposedPorts) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range img.Config.ExposedPorts {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encode image config: %w", err)
	}
	cfgDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageConfig,
		Digest:    digest.FromBytes(cfgJSON),
		Size:      int64(len(cfgJSON)),
	}

	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	}
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encode image manifest: %w", err)
	}
	manifestDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest,
		Digest:    digest.FromBytes(manifestJSON),
		Size:      int64(len(manifestJSON)),
		Platform:  &ocispec.Platform{Architecture: img.Architecture, OS: img.OS},
		Annotations: map[string]string{
			ocispec.AnnotationRefName:     img.Name,
			AnnotationContainerdImageName: img.Name,
		},
	}

	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encode image index: %w", err)
	}
	layoutJSON, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encode oci-layout: %w", err)
	}

	blobs := map[digest.Digest][]byte{
		layerDesc.Digest:    layer,
		cfgDesc.Digest:      cfgJSON,
		manifestDesc.Digest: manifestJSON,
	}
	if err := writeLayout(w, img.Created, layoutJSON, indexJSON, blobs); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("write image %s: %w", img.Name, err)
	}
	return manifestDesc, nil
}

// writeLayout writes the outer tarball: oci-layout, the blobs, index.json.
func writeLayout(w io.Writer, mtime time.Time, layoutJSON, indexJSON []byte, blobs map[digest.Digest][]byte) error {
	tw := tar.NewWriter(w)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime})
	}
	file := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := file(ocispec.ImageLayoutFile, layoutJSON); err != nil {
		return err
	}
	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	digests := make([]digest.Digest, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Slice(digests, func(i, j int) bool { return digests[i] < digests[j] })
	for _, d := range digests {
		if err := file("blobs/sha256/"+d.Encoded(), blobs[d]); err != nil {
			return err
		}
	}
	if err := file("index.json", indexJSON); err != nil {
		return err
	}
	return tw.Close()
}

// buildLayer returns the gzip-compressed layer tar and the digest of the
// uncompressed tar (the diff ID).
func buildLayer(entries []Entry, mtime time.Time) ([]byte, digest.Digest, error) {
	all, err := normalize(entries)
	if err != nil {
		return nil, "", err
	}
	var compressed bytes.Buffer
	zw, err := gzip.NewWriterLevel(&compressed, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	diff := digest.Canonical.Digester()
	tw := tar.NewWriter(io.MultiWriter(zw, diff.Hash()))
	for _, e := range all {
		name := strings.TrimPrefix(e.Path, "/")
		hdr := &tar.Header{Name: name, ModTime: mtime, Uid: e.UID, Gid: e.GID, Mode: int64(e.Mode.Perm())}
		var data []byte
		switch e.Type {
		case Dir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case Symlink:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.Target
			hdr.Mode = 0o777
		default:
			hdr.Typeflag = tar.TypeReg
			data = e.Data
			if e.Source != "" {
				if data, err = os.ReadFile(e.Source); err != nil {
					return nil, "", fmt.Errorf("entry %s: %w", e.Path, err)
				}
			}
			hdr.Size = int64(len(data))
		}
		if e.Mode&fs.ModeSetuid != 0 {
			hdr.Mode |= 0o4000
		}
		if e.Mode&fs.ModeSetgid != 0 {
			hdr.Mode |= 0o2000
		}
		if e.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", fmt.Errorf("entry %s: %w", e.Path, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, "", fmt.Errorf("entry %s: %w", e.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return compressed.Bytes(), diff.Digest(), nil
}

// normalize validates entries, applies default modes, adds missing parent
// directories and sorts the result so parents come before children.
func normalize(entries []Entry) ([]Entry, error) {
	byPath := map[string]Entry{}
	var errs []error
	for _, e := range entries {
		if !path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path || e.Path == "/" {
			errs = append(errs, fmt.Errorf("entry %q: path must be absolute, clean and not /", e.Path))
			continue
		}
		if _, dup := byPath[e.Path]; dup {
			errs = append(errs, fmt.Errorf("entry %s: listed twice", e.Path))
			continue
		}
		switch e.Type {
		case File:
			if e.Source != "" && e.Data != nil {
				errs = append(errs, fmt.Errorf("entry %s: Data and Source are exclusive", e.Path))
			}
			if e.Mode.Perm() == 0 {
				e.Mode |= 0o644
			}
		case Dir:
			if e.Mode.Perm() == 0 {
				e.Mode |= 0o755
			}
		case Symlink:
			if e.Target == "" {
				errs = append(errs, fmt.Errorf("entry %s: symlink without a target", e.Path))
			}
		default:
			errs = append(errs, fmt.Errorf("entry %s: unknown type %d", e.Path, e.Type))
		}
		byPath[e.Path] = e
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if parent, ok := byPath[dir]; ok {
				if parent.Type != Dir {
					errs = append(errs, fmt.Errorf("entry %s: parent %s is not a directory", p, dir))
				}
				continue
			}
			byPath[dir] = Entry{Path: dir, Type: Dir, Mode: 0o755}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	// A path sorts before every path it is a prefix of, so each directory
	// comes before its contents.
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
