package images

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
)

// Options configure an Importer.
type Options struct {
	// Namespace is the containerd namespace. Default "k8s.io".
	Namespace string
	// Snapshotter is the snapshotter images are unpacked for. Default
	// "overlayfs", the CRI plugin's.
	Snapshotter string
	// StateFile remembers imported archives so unchanged ones are skipped.
	// Empty: every archive is imported every time.
	StateFile string
	// Timeout bounds connecting to containerd. Default 10 seconds.
	Timeout time.Duration
}

// New connects to the containerd at endpoint ("unix:///path.sock" or a
// socket path).
func New(endpoint string, opts Options) (*Importer, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Snapshotter == "" {
		opts.Snapshotter = "overlayfs"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	address := strings.TrimPrefix(endpoint, "unix://")
	client, err := containerd.New(address, containerd.WithDefaultNamespace(opts.Namespace), containerd.WithTimeout(opts.Timeout))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", endpoint, err)
	}
	return &Importer{
		store:     &containerdStore{client: client, snapshotter: opts.Snapshotter},
		stateFile: opts.StateFile,
	}, nil
}

// containerdStore imports through containerd's Go client.
type containerdStore struct {
	client      *containerd.Client
	snapshotter string
}

func (s *containerdStore) importArchive(ctx context.Context, r io.Reader, labels map[string]string) ([]string, error) {
	imgs, err := s.client.Import(ctx, r,
		containerd.WithImportPlatform(platforms.Default()),
		containerd.WithImageLabels(labels),
	)
	if err != nil {
		return nil, fmt.Errorf("import into containerd: %w", err)
	}
	names := make([]string, 0, len(imgs))
	for _, img := range imgs {
		image := containerd.NewImageWithPlatform(s.client, img, platforms.Default())
		unpacked, err := image.IsUnpacked(ctx, s.snapshotter)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Name, err)
		}
		if !unpacked {
			if err := image.Unpack(ctx, s.snapshotter); err != nil {
				return nil, fmt.Errorf("unpack image %s for %s: %w", img.Name, s.snapshotter, err)
			}
		}
		names = append(names, img.Name)
	}
	return names, nil
}

func (s *containerdStore) labels(ctx context.Context, name string) (map[string]string, bool, error) {
	img, err := s.client.ImageService().Get(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("look up image %s: %w", name, err)
	}
	return img.Labels, true, nil
}

func (s *containerdStore) unpin(ctx context.Context, name string) error {
	is := s.client.ImageService()
	img, err := is.Get(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up image %s: %w", name, err)
	}
	if _, pinned := img.Labels[PinnedLabel]; !pinned {
		return nil
	}
	delete(img.Labels, PinnedLabel)
	if _, err := is.Update(ctx, img, "labels."+PinnedLabel); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("unpin image %s: %w", name, err)
	}
	return nil
}

func (s *containerdStore) close() error { return s.client.Close() }
