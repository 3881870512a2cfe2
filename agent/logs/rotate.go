package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config is the container log rotation policy.
type Config struct {
	// MaxSize is the size (a resource quantity such as "10Mi") a running
	// container's log may reach before it is rotated
	// (--container-log-max-size). A negative size turns rotation off.
	// Default "10Mi".
	MaxSize string
	// MaxFiles is how many files, the live one included, are kept per
	// container (--container-log-max-files). At least 2. Default 5.
	MaxFiles int
	// Interval is how often the container logs are checked. Default 10s.
	Interval time.Duration
}

func (c *Config) setDefaults() {
	if c.MaxSize == "" {
		c.MaxSize = "10Mi"
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = 5
	}
	if c.Interval == 0 {
		c.Interval = 10 * time.Second
	}
}

// Validate reports configuration errors naming the flag. Empty and zero
// fields are valid: they take their defaults.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if _, err := c.maxBytes(); err != nil {
		errs = append(errs, fmt.Errorf("--container-log-max-size: %w", err))
	}
	if c.MaxFiles < 2 {
		errs = append(errs, fmt.Errorf("--container-log-max-files: %d is too few, at least 2 files are kept", c.MaxFiles))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("container log check interval %v must be positive", c.Interval))
	}
	return errors.Join(errs...)
}

func (c Config) maxBytes() (int64, error) {
	q, err := resource.ParseQuantity(c.MaxSize)
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity: %w", c.MaxSize, err)
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number of bytes", c.MaxSize)
	}
	return n, nil
}

// Runtime is the part of the CRI runtime service the Manager uses. Safe for
// concurrent use.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Suffixes of files made by rotation.
const (
	// rotatedTimeFormat names a rotated file: <log>.<time>.
	rotatedTimeFormat = "20060102-150405"
	gzipSuffix        = ".gz"
	tmpSuffix         = ".tmp"
)

// Manager rotates the logs of running containers. Run and RotateOnce may be
// called concurrently; passes are serialized.
type Manager struct {
	maxSize  int64
	maxFiles int
	interval time.Duration
	runtime  Runtime
	clock    clock.WithTicker
	passes   chan struct{} // a one-slot lock serializing passes
}

// NewManager validates cfg and returns a manager. It starts nothing.
func NewManager(cfg Config, runtime Runtime, clk clock.WithTicker) (*Manager, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if runtime == nil {
		return nil, errors.New("container log manager: no runtime")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	maxSize, _ := cfg.maxBytes()
	return &Manager{
		maxSize:  maxSize,
		maxFiles: cfg.MaxFiles,
		interval: cfg.Interval,
		runtime:  runtime,
		clock:    clk,
		passes:   make(chan struct{}, 1),
	}, nil
}

// Run rotates logs every interval until ctx ends; it returns nil then. A
// failed pass is logged and retried at the next interval. With a negative
// maximum size it only waits for ctx.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if m.maxSize < 0 {
		logger.V(2).Info("Container log rotation is off")
		<-ctx.Done()
		return nil
	}
	t := m.clock.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if err := m.RotateOnce(ctx); err != nil {
			logger.Error(err, "Container log rotation pass failed")
		}
	}
}

// RotateOnce makes one pass over the running containers, rotating every
// log that reached the maximum size. Failures for one container do not stop
// the others; they are returned joined.
func (m *Manager) RotateOnce(ctx context.Context) error {
	if m.maxSize < 0 {
		return nil
	}
	select {
	case m.passes <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-m.passes }()

	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	containers, err := m.runtime.ListContainers(ctx, running)
	if err != nil {
		return fmt.Errorf("list running containers: %w", err)
	}
	var errs []error
	for _, c := range containers {
		// A runtime may ignore the state filter.
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if err := m.rotateContainer(ctx, c.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("container %q: %w", c.GetId(), err))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) rotateContainer(ctx context.Context, id string) error {
	resp, err := m.runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		// Lost (a crash between rename and reopen, or removed by hand):
		// have the runtime open a new one.
		if err := m.runtime.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("reopen missing log %q: %w", path, err)
		}
		fi, err = os.Stat(path)
	}
	if err != nil {
		return fmt.Errorf("stat log: %w", err)
	}
	if fi.Size() < m.maxSize {
		return nil
	}
	return m.rotate(ctx, id, path)
}

// rotate prunes and compresses the earlier rotations of path, then renames
// path aside and has the runtime start a new file. The newest rotated file
// stays uncompressed: the runtime may still be finishing a write to it and
// readers following it are still draining it.
func (m *Manager) rotate(ctx context.Context, id, path string) error {
	rotated, err := m.cleanRotated(path)
	if err != nil {
		return err
	}
	// After this rotation there will be the live file and the one renamed
	// now; keep at most MaxFiles-2 older ones, removing the oldest first.
	keep := max(m.maxFiles-2, 0)
	for len(rotated) > keep {
		if err := os.Remove(rotated[0]); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove old log: %w", err)
		}
		rotated = rotated[1:]
	}
	for _, f := range rotated {
		if !strings.HasSuffix(f, gzipSuffix) {
			if err := compress(f); err != nil {
				return err
			}
		}
	}

	target := path + "." + m.clock.Now().Format(rotatedTimeFormat)
	if err := os.Rename(path, target); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	if err := m.runtime.ReopenContainerLog(ctx, id); err != nil {
		// Put the file back so that the next pass can try again.
		if rerr := os.Rename(target, path); rerr != nil {
			klog.FromContext(ctx).Error(rerr, "Could not restore a log after a failed reopen; its output is now in the rotated file", "path", path, "rotated", target)
		}
		return fmt.Errorf("reopen log after rotation: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("Rotated container log", "containerID", id, "path", path, "rotated", target)
	return nil
}

// cleanRotated removes leftovers of interrupted rotations next to path
// (temporary files, and uncompressed files whose compressed copy exists)
// and returns the remaining rotated files, oldest first.
func (m *Manager) cleanRotated(path string) ([]string, error) {
	files, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return nil, fmt.Errorf("list rotated logs: %w", err)
	}
	present := make(map[string]bool, len(files))
	for _, f := range files {
		present[f] = true
	}
	var kept []string
	for _, f := range files {
		if strings.HasSuffix(f, tmpSuffix) || present[f+gzipSuffix] {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("remove leftover log: %w", err)
			}
			continue
		}
		kept = append(kept, f)
	}
	// The time suffix sorts in time order, compressed or not.
	slices.Sort(kept)
	return kept, nil
}

// compress replaces f with f.gz, writing through a temporary file so that
// an interruption leaves either the old file or the complete archive.
func compress(f string) error {
	in, err := os.Open(f)
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	tmp := f + gzipSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f+gzipSuffix)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compress log %q: %w", f, err)
	}
	if err := os.Remove(f); err != nil {
		return fmt.Errorf("remove compressed log: %w", err)
	}
	return nil
}

// Clean removes a container's log and all its rotations, for when the
// container itself is removed.
func (m *Manager) Clean(ctx context.Context, containerID string) error {
	resp, err := m.runtime.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return fmt.Errorf("status of container %q: %w", containerID, err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return nil
	}
	return RemoveLogs(path)
}

// RemoveLogs removes the log file at path and all its rotations.
func RemoveLogs(path string) error {
	files, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return fmt.Errorf("list rotated logs: %w", err)
	}
	var errs []error
	for _, f := range append(files, path) {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// globEscape quotes the pattern characters of a literal path.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '*', '?', '[', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
