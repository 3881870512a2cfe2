package containerd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/k1s/k1s/internal/images"
)

// BundledPauseArchive is the name the carried pause image is imported
// under (in logs and the import state file).
const BundledPauseArchive = "bundled:pause"

// ImportStateFile is where the import state of a containerd with root
// directory root is kept: it lives and dies with containerd's images.
func ImportStateFile(root string) string { return filepath.Join(root, "k1s-imported.json") }

// ImportImages imports the pause image carried in the k1s binary (pinned,
// so image GC never removes it) and then every image archive in imagesDir
// (*.tar, *.tar.gz, *.tar.zst: OCI layouts or `docker save` archives) into
// the "k8s.io" namespace of the containerd at endpoint, unpacked for
// snapshotter. Archives imported before, unchanged and with their images
// still present are skipped, as recorded in stateFile ("" records
// nothing). A failed archive does not stop the others; all failures are
// returned joined. Call it once containerd is ready and before the first
// pod sandbox is created.
func ImportImages(ctx context.Context, endpoint, snapshotter, imagesDir, stateFile string) ([]images.Result, error) {
	bundled, bundledErr := ImportBundledImages(ctx, endpoint, snapshotter, stateFile)
	airGap, airGapErr := ImportImageDir(ctx, endpoint, snapshotter, imagesDir, stateFile)
	return append(bundled, airGap...), errors.Join(bundledErr, airGapErr)
}

// ImportBundledImages imports the images carried in the k1s binary (the
// pause image, pinned so image GC never removes it): what a node needs
// before it can run any pod sandbox.
func ImportBundledImages(ctx context.Context, endpoint, snapshotter, stateFile string) ([]images.Result, error) {
	pause, err := PauseImageArchive()
	if err != nil {
		return nil, err
	}
	return importArchives(ctx, endpoint, snapshotter, stateFile, []images.Archive{images.BytesArchive(BundledPauseArchive, pause, true)}, "")
}

// ImportImageDir imports the image archives in imagesDir (the air-gap
// images) and unpins the images of archives removed from it.
func ImportImageDir(ctx context.Context, endpoint, snapshotter, imagesDir, stateFile string) ([]images.Result, error) {
	archives, err := images.DirArchives(imagesDir)
	if err != nil {
		// Nothing is unpinned after a failed listing.
		return nil, fmt.Errorf("import images: %w", err)
	}
	return importArchives(ctx, endpoint, snapshotter, stateFile, archives, imagesDir)
}

// importArchives imports archives and, when unpinDir is set, unpins the
// images of the archives once imported from unpinDir that are not among
// them.
func importArchives(ctx context.Context, endpoint, snapshotter, stateFile string, archives []images.Archive, unpinDir string) ([]images.Result, error) {
	imp, err := images.New(endpoint, images.Options{Snapshotter: snapshotter, StateFile: stateFile})
	if err != nil {
		return nil, err
	}
	defer imp.Close()
	var res []images.Result
	if len(archives) > 0 {
		res, err = imp.Import(ctx, archives...)
	}
	var unpinErr error
	if unpinDir != "" {
		unpinErr = imp.Unpin(ctx, unpinDir, archives)
	}
	if err := errors.Join(err, unpinErr); err != nil {
		return res, fmt.Errorf("import images: %w", err)
	}
	return res, nil
}

// ImportImages is the package's ImportImages for this containerd: its
// endpoint, snapshotter and images directory, with the import state kept
// beside its root.
func (c *Containerd) ImportImages(ctx context.Context) ([]images.Result, error) {
	return ImportImages(ctx, c.Endpoint(), c.cfg.Snapshotter, c.cfg.ImagesDir, ImportStateFile(c.cfg.Root))
}

// ImportBundledImages is ImportBundledImages for this containerd.
func (c *Containerd) ImportBundledImages(ctx context.Context) ([]images.Result, error) {
	return ImportBundledImages(ctx, c.Endpoint(), c.cfg.Snapshotter, ImportStateFile(c.cfg.Root))
}

// ImportImageDir is ImportImageDir for this containerd's images directory.
func (c *Containerd) ImportImageDir(ctx context.Context) ([]images.Result, error) {
	return ImportImageDir(ctx, c.Endpoint(), c.cfg.Snapshotter, c.cfg.ImagesDir, ImportStateFile(c.cfg.Root))
}
