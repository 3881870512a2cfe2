package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Layout is an OCI image layout read back from a tarball, every blob
// checked against its digest.
type Layout struct {
	Index ocispec.Index
	Blobs map[digest.Digest][]byte
}

// LayerFile is one entry of an image layer.
type LayerFile struct {
	// Path is the entry's name in the layer tar ("bin/sh", "etc/").
	Path     string
	Typeflag byte
	Mode     int64
	UID, GID int
	Linkname string
	Data     []byte
}

// ImageInfo is one named image of a Layout.
type ImageInfo struct {
	Name           string
	ManifestDigest digest.Digest
	Manifest       ocispec.Manifest
	Config         ocispec.Image
	// Files lists the entries of all layers, in order.
	Files []LayerFile
}

// Read reads an OCI image-layout tarball (uncompressed). It checks the
// oci-layout version and that every blob's content matches its name.
func Read(r io.Reader) (*Layout, error) {
	l := &Layout{Blobs: map[digest.Digest][]byte{}}
	var sawLayout, sawIndex bool
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read layout tar: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", hdr.Name, err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		switch {
		case name == ocispec.ImageLayoutFile:
			var lay ocispec.ImageLayout
			if err := json.Unmarshal(data, &lay); err != nil {
				return nil, fmt.Errorf("decode %s: %w", name, err)
			}
			if lay.Version != ocispec.ImageLayoutVersion {
				return nil, fmt.Errorf("%s: unsupported layout version %q", name, lay.Version)
			}
			sawLayout = true
		case name == "index.json":
			if err := json.Unmarshal(data, &l.Index); err != nil {
				return nil, fmt.Errorf("decode index.json: %w", err)
			}
			sawIndex = true
		case strings.HasPrefix(name, "blobs/"):
			alg, enc, ok := strings.Cut(strings.TrimPrefix(name, "blobs/"), "/")
			if !ok {
				return nil, fmt.Errorf("blob %s: not blobs/<algorithm>/<hex>", name)
			}
			d := digest.NewDigestFromEncoded(digest.Algorithm(alg), enc)
			if err := d.Validate(); err != nil {
				return nil, fmt.Errorf("blob %s: %w", name, err)
			}
			if got := d.Algorithm().FromBytes(data); got != d {
				return nil, fmt.Errorf("blob %s: content digest is %s", name, got)
			}
			l.Blobs[d] = data
		}
	}
	if !sawLayout {
		return nil, errors.New("not an OCI image layout: no oci-layout file")
	}
	if !sawIndex {
		return nil, errors.New("not an OCI image layout: no index.json")
	}
	return l, nil
}

// blob returns the content of desc, checking its size.
func (l *Layout) blob(desc ocispec.Descriptor) ([]byte, error) {
	data, ok := l.Blobs[desc.Digest]
	if !ok {
		return nil, fmt.Errorf("blob %s (%s) is missing", desc.Digest, desc.MediaType)
	}
	if int64(len(data)) != desc.Size {
		return nil, fmt.Errorf("blob %s: size %d, descriptor says %d", desc.Digest, len(data), desc.Size)
	}
	return data, nil
}

// Images resolves every manifest of the index: its name (containerd's
// annotation, else the OCI ref.name one), config and layer files. It checks
// that each layer's uncompressed digest matches the config's diff IDs.
func (l *Layout) Images() ([]ImageInfo, error) {
	var out []ImageInfo
	for _, md := range l.Index.Manifests {
		info := ImageInfo{ManifestDigest: md.Digest, Name: md.Annotations[AnnotationContainerdImageName]}
		if info.Name == "" {
			info.Name = md.Annotations[ocispec.AnnotationRefName]
		}
		data, err := l.blob(md)
		if err != nil {
			return nil, fmt.Errorf("manifest of %q: %w", info.Name, err)
		}
		if err := json.Unmarshal(data, &info.Manifest); err != nil {
			return nil, fmt.Errorf("decode manifest %s: %w", md.Digest, err)
		}
		if data, err = l.blob(info.Manifest.Config); err != nil {
			return nil, fmt.Errorf("config of %q: %w", info.Name, err)
		}
		if err := json.Unmarshal(data, &info.Config); err != nil {
			return nil, fmt.Errorf("decode config %s: %w", info.Manifest.Config.Digest, err)
		}
		if len(info.Config.RootFS.DiffIDs) != len(info.Manifest.Layers) {
			return nil, fmt.Errorf("image %q: %d layers but %d diff IDs", info.Name, len(info.Manifest.Layers), len(info.Config.RootFS.DiffIDs))
		}
		for i, ld := range info.Manifest.Layers {
			data, err := l.blob(ld)
			if err != nil {
				return nil, fmt.Errorf("layer of %q: %w", info.Name, err)
			}
			files, diffID, err := readLayer(data, ld.MediaType)
			if err != nil {
				return nil, fmt.Errorf("layer %s of %q: %w", ld.Digest, info.Name, err)
			}
			if diffID != info.Config.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("layer %s of %q: uncompressed digest %s, config says %s", ld.Digest, info.Name, diffID, info.Config.RootFS.DiffIDs[i])
			}
			info.Files = append(info.Files, files...)
		}
		out = append(out, info)
	}
	return out, nil
}

func readLayer(data []byte, mediaType string) ([]LayerFile, digest.Digest, error) {
	var r io.Reader = bytes.NewReader(data)
	switch mediaType {
	case ocispec.MediaTypeImageLayerGzip, "application/vnd.docker.image.rootfs.diff.tar.gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, "", err
		}
		defer zr.Close()
		r = zr
	case ocispec.MediaTypeImageLayer:
	default:
		return nil, "", fmt.Errorf("unsupported layer media type %q", mediaType)
	}
	diff := digest.Canonical.Digester()
	tr := tar.NewReader(io.TeeReader(r, diff.Hash()))
	var files []LayerFile
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			return nil, "", err
		}
		files = append(files, LayerFile{
			Path: hdr.Name, Typeflag: hdr.Typeflag, Mode: hdr.Mode,
			UID: hdr.Uid, GID: hdr.Gid, Linkname: hdr.Linkname, Data: content,
		})
	}
	// The digest covers the whole stream, including the end-of-archive
	// padding tar.Reader stops before.
	if _, err := io.Copy(io.Discard, io.TeeReader(r, diff.Hash())); err != nil {
		return nil, "", err
	}
	return files, diff.Digest(), nil
}
