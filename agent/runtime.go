package agent

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/internal/images"
)

// embeddedRuntime runs the embedded containerd and imports the images
// carried in the binary (the pause image) before it reports ready, so the
// node can register and set up its network; the air-gap image tarballs
// are imported next, and the agent starts no pod before that is done
// (imported), so a pod never finds its air-gap image missing.
type embeddedRuntime struct {
	c        *containerd.Containerd
	ready    chan struct{}
	imported chan struct{}
}

func newEmbeddedRuntime(cfg containerd.Config) (*embeddedRuntime, error) {
	c, err := containerd.New(cfg)
	if err != nil {
		return nil, err
	}
	return &embeddedRuntime{c: c, ready: make(chan struct{}), imported: make(chan struct{})}, nil
}

func (r *embeddedRuntime) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.c.Run(ctx) }()
	select {
	case <-r.c.Ready():
	case err := <-done:
		return err
	}
	logger := klog.FromContext(ctx)
	report := func(results []images.Result, err error) {
		if err != nil {
			// A bad tarball must not stop the node: report it and go on.
			logger.Error(err, "Some images could not be imported")
		}
		for _, res := range results {
			logger.V(2).Info("Image archive", "result", fmt.Sprintf("%+v", res))
		}
	}
	report(r.c.ImportBundledImages(ctx))
	close(r.ready)
	report(r.c.ImportImageDir(ctx))
	close(r.imported)
	return <-done
}
