// Package imagegc is the node agent's image garbage collector, after
// upstream kubelet's image GC manager: when the image filesystem's usage
// reaches --image-gc-high-threshold it removes unused images, least
// recently used first, until usage is down to --image-gc-low-threshold;
// images younger than --image-minimum-gc-age stay, images unused for
// longer than --image-maximum-gc-age (when set) go regardless of usage.
// Images any container uses (running or not) and pinned images (the
// runtime pins the sandbox image) are never removed.
package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config is the GC policy. Every field documents its default.
type Config struct {
	// HighThresholdPercent (--image-gc-high-threshold): usage at which GC
	// runs. Default 85; 100 with MaxAge 0 turns image GC off.
	HighThresholdPercent int
	// LowThresholdPercent (--image-gc-low-threshold): usage GC frees down
	// to. Default 80.
	LowThresholdPercent int
	// MinAge (--image-minimum-gc-age): an image is kept this long after
	// it was first seen. Default 2m.
	MinAge time.Duration
	// MaxAge (--image-maximum-gc-age): an image unused this long is
	// removed whatever the usage. Default 0: never.
	MaxAge time.Duration
	// Period is how often GC runs (kubelet's fixed 5m; k1s's hidden
	// --image-gc-period, for tests).
	Period time.Duration
}

// SetDefaults fills unset fields with upstream's defaults; use it for a
// Config not built from flags.
func (c *Config) SetDefaults() {
	if c.HighThresholdPercent == 0 && c.LowThresholdPercent == 0 {
		c.HighThresholdPercent, c.LowThresholdPercent = 85, 80
	}
	if c.MinAge == 0 {
		c.MinAge = 2 * time.Minute
	}
	if c.Period == 0 {
		c.Period = 5 * time.Minute
	}
}

// Validate reports errors naming the flag.
func (c *Config) Validate() error {
	var errs []error
	if c.HighThresholdPercent < 0 || c.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-high-threshold: %d must be in [0, 100]", c.HighThresholdPercent))
	}
	if c.LowThresholdPercent < 0 || c.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold: %d must be in [0, 100]", c.LowThresholdPercent))
	}
	if c.LowThresholdPercent > c.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold: %d must not be above --image-gc-high-threshold %d", c.LowThresholdPercent, c.HighThresholdPercent))
	}
	if c.MinAge < 0 {
		errs = append(errs, fmt.Errorf("--image-minimum-gc-age: %s must not be negative", c.MinAge))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--image-maximum-gc-age: %s must not be negative", c.MaxAge))
	}
	if c.MaxAge > 0 && c.MaxAge <= c.MinAge {
		errs = append(errs, fmt.Errorf("--image-maximum-gc-age: %s must be greater than --image-minimum-gc-age %s", c.MaxAge, c.MinAge))
	}
	if c.Period <= 0 {
		errs = append(errs, fmt.Errorf("--image-gc-period: %s must be positive", c.Period))
	}
	return errors.Join(errs...)
}

// FsStatsFunc reports the image filesystem's capacity and free bytes.
type FsStatsFunc func(ctx context.Context) (capacity, available int64, err error)

// Manager removes unused images. Safe for concurrent use.
type Manager interface {
	// Run collects every Period until ctx is done.
	Run(ctx context.Context) error
	// GarbageCollect is one pass of the policy.
	GarbageCollect(ctx context.Context) error
	// DeleteUnusedImages removes every unused image old enough (the
	// eviction manager's reclaim).
	DeleteUnusedImages(ctx context.Context) error
}

type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time
	size          int64
	pinned        bool
	tags          []string
}

type manager struct {
	cfg      Config
	runtime  internalapi.RuntimeService
	images   internalapi.ImageManagerService
	fsStats  FsStatsFunc
	recorder record.EventRecorder
	nodeRef  *corev1.ObjectReference
	clock    clock.Clock

	mu      sync.Mutex
	records map[string]*imageRecord
	began   time.Time
}

// New validates cfg and returns a manager; it starts nothing.
func New(cfg Config, runtime internalapi.RuntimeService, images internalapi.ImageManagerService, fsStats FsStatsFunc, recorder record.EventRecorder, nodeRef *corev1.ObjectReference, clk clock.Clock) (Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if runtime == nil || images == nil || fsStats == nil {
		return nil, errors.New("image GC: CRI services and image filesystem stats are required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if recorder == nil {
		recorder = &record.FakeRecorder{}
	}
	return &manager{cfg: cfg, runtime: runtime, images: images, fsStats: fsStats, recorder: recorder, nodeRef: nodeRef, clock: clk, records: map[string]*imageRecord{}, began: clk.Now()}, nil
}

func (m *manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("imagegc")
	ctx = klog.NewContext(ctx, logger)
	if m.cfg.HighThresholdPercent == 100 && m.cfg.MaxAge == 0 {
		logger.V(2).Info("Image GC off: --image-gc-high-threshold is 100 and --image-maximum-gc-age 0")
		<-ctx.Done()
		return nil
	}
	failedBefore := false
	for {
		if err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Image garbage collection failed")
			if failedBefore {
				m.recorder.Event(m.nodeRef, corev1.EventTypeWarning, "ImageGCFailed", err.Error())
			}
			failedBefore = true
		} else {
			failedBefore = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.clock.After(m.cfg.Period):
		}
	}
}

// detect refreshes the records: new images are first detected now, images
// in use are used now; it returns the images in use.
func (m *manager) detect(ctx context.Context, now time.Time) (sets.Set[string], error) {
	imgs, err := m.images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	ctrs, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	inUse := sets.New[string]()
	for _, c := range ctrs {
		if c.ImageRef != "" {
			inUse.Insert(c.ImageRef)
		}
		if c.Image != nil && c.Image.Image != "" {
			inUse.Insert(c.Image.Image)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := sets.New[string]()
	for _, img := range imgs {
		id := img.Id
		seen.Insert(id)
		r, ok := m.records[id]
		if !ok {
			r = &imageRecord{firstDetected: now}
			m.records[id] = r
		}
		r.size, r.pinned = int64(img.Size), img.Pinned
		r.tags = append(append([]string{}, img.RepoTags...), img.RepoDigests...)
		if used(id, r.tags, inUse) {
			r.lastUsed = now
		}
	}
	for id := range m.records {
		if !seen.Has(id) {
			delete(m.records, id)
		}
	}
	// Mark in-use ones by ID so the caller can skip them.
	out := sets.New[string]()
	for id, r := range m.records {
		if used(id, r.tags, inUse) {
			out.Insert(id)
		}
	}
	return out, nil
}

func used(id string, tags []string, inUse sets.Set[string]) bool {
	if inUse.Has(id) {
		return true
	}
	for _, t := range tags {
		if inUse.Has(t) {
			return true
		}
	}
	return false
}

type candidate struct {
	id string
	imageRecord
}

// candidates are the images GC may remove, least recently used first
// (then first detected first), as upstream.
func (m *manager) candidates(ctx context.Context, now time.Time) ([]candidate, error) {
	inUse, err := m.detect(ctx, now)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []candidate
	for id, r := range m.records {
		if inUse.Has(id) || r.pinned {
			continue
		}
		out = append(out, candidate{id: id, imageRecord: *r})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].lastUsed.Equal(out[j].lastUsed) {
			if out[i].firstDetected.Equal(out[j].firstDetected) {
				return out[i].id < out[j].id // deterministic
			}
			return out[i].firstDetected.Before(out[j].firstDetected)
		}
		return out[i].lastUsed.Before(out[j].lastUsed)
	})
	return out, nil
}

func (m *manager) GarbageCollect(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	now := m.clock.Now()
	imgs, err := m.candidates(ctx, now)
	if err != nil {
		return err
	}
	if m.cfg.MaxAge > 0 && now.Sub(m.began) > m.cfg.MaxAge {
		var keep []candidate
		var errs []error
		for _, c := range imgs {
			if now.Sub(c.lastUsed) > m.cfg.MaxAge {
				if err := m.remove(ctx, c); err != nil {
					errs = append(errs, err)
					keep = append(keep, c)
				}
				continue
			}
			keep = append(keep, c)
		}
		imgs = keep
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("remove images unused for %s: %w", m.cfg.MaxAge, err)
		}
	}
	capacity, available, err := m.fsStats(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem stats: %w", err)
	}
	if available > capacity {
		available = capacity
	}
	if capacity <= 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.recorder.Event(m.nodeRef, corev1.EventTypeWarning, "InvalidDiskCapacity", err.Error())
		return err
	}
	usage := 100 - int(available*100/capacity)
	if usage < m.cfg.HighThresholdPercent {
		return nil
	}
	toFree := capacity*int64(100-m.cfg.LowThresholdPercent)/100 - available
	logger.Info("Image filesystem usage over the high threshold, freeing down to the low threshold",
		"usage", usage, "highThreshold", m.cfg.HighThresholdPercent, "lowThreshold", m.cfg.LowThresholdPercent, "bytesToFree", toFree)
	freed, err := m.free(ctx, toFree, now, imgs)
	if err != nil {
		return err
	}
	if freed < toFree {
		msg := fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %d bytes used). Failed to free sufficient space by deleting unused images (freed %d bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data.", usage, capacity, freed)
		m.recorder.Event(m.nodeRef, corev1.EventTypeWarning, "FreeDiskSpaceFailed", msg)
		return errors.New(msg)
	}
	return nil
}

func (m *manager) DeleteUnusedImages(ctx context.Context) error {
	klog.FromContext(ctx).Info("Deleting unused images")
	now := m.clock.Now()
	imgs, err := m.candidates(ctx, now)
	if err != nil {
		return err
	}
	_, err = m.free(ctx, math.MaxInt64, now, imgs)
	return err
}

// free removes candidates old enough until toFree bytes are freed.
func (m *manager) free(ctx context.Context, toFree int64, now time.Time, imgs []candidate) (int64, error) {
	var freed int64
	var errs []error
	for _, c := range imgs {
		if !c.lastUsed.Before(now) {
			continue
		}
		if now.Sub(c.firstDetected) < m.cfg.MinAge {
			continue
		}
		if err := m.remove(ctx, c); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += c.size
		if freed >= toFree {
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return freed, fmt.Errorf("wanted to free %d bytes, freed %d: %w", toFree, freed, err)
	}
	return freed, nil
}

func (m *manager) remove(ctx context.Context, c candidate) error {
	klog.FromContext(ctx).Info("Removing image to free space", "image", c.id, "tags", c.tags, "size", c.size)
	if err := m.images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.id}); err != nil {
		return fmt.Errorf("remove image %s: %w", c.id, err)
	}
	m.mu.Lock()
	delete(m.records, c.id)
	m.mu.Unlock()
	return nil
}
