package imagegc

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeImages struct {
	internalapi.ImageManagerService
	mu      sync.Mutex
	images  map[string]*runtimeapi.Image
	removed []string
}

func (f *fakeImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Image
	for _, i := range f.images {
		out = append(out, i)
	}
	return out, nil
}

func (f *fakeImages) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, spec.Image)
	f.removed = append(f.removed, spec.Image)
	return nil
}

type fakeRuntime struct {
	internalapi.RuntimeService
	containers []*runtimeapi.Container
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return f.containers, nil
}

func img(id string, size uint64, pinned bool, tags ...string) *runtimeapi.Image {
	return &runtimeapi.Image{Id: id, Size: size, Pinned: pinned, RepoTags: tags}
}

func TestGarbageCollect(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		available int64 // of 1000
		// young are first seen after the others (MinAge apart).
		young       []string
		wantRemoved string
		wantErr     string
	}{
		{name: "below the high threshold: nothing", cfg: Config{HighThresholdPercent: 85, LowThresholdPercent: 80, Period: time.Minute}, available: 200, wantRemoved: ""},
		{name: "over: LRU first down to the low threshold", cfg: Config{HighThresholdPercent: 85, LowThresholdPercent: 80, Period: time.Minute}, available: 100,
			// to free 1000*20% - 100 = 100: old-a (60) then old-b (60)
			wantRemoved: "sha256:old-a,sha256:old-b"},
		{name: "too young images stay", cfg: Config{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, Period: time.Minute}, available: 100,
			young: []string{"sha256:old-a"}, wantRemoved: "sha256:old-b,sha256:old-c",
			wantErr: ""},
		{name: "not enough to free", cfg: Config{HighThresholdPercent: 85, LowThresholdPercent: 10, Period: time.Minute}, available: 100,
			wantRemoved: "sha256:old-a,sha256:old-b,sha256:old-c", wantErr: "Insufficient free disk space"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			images := &fakeImages{images: map[string]*runtimeapi.Image{}}
			for _, i := range []*runtimeapi.Image{
				img("sha256:pause", 500, true, "k1s.local/pause:3.10"),
				img("sha256:used", 300, false, "docker.io/library/app:1"),
				img("sha256:old-a", 60, false, "a:1"),
				img("sha256:old-b", 60, false, "b:1"),
				img("sha256:old-c", 60, false, "c:1"),
			} {
				if !contains(tt.young, i.Id) {
					images.images[i.Id] = i
				}
			}
			// A container (even an exited one) keeps its image: by tag here.
			rt := &fakeRuntime{containers: []*runtimeapi.Container{{Id: "c1", Image: &runtimeapi.ImageSpec{Image: "docker.io/library/app:1"}, State: runtimeapi.ContainerState_CONTAINER_EXITED}}}
			m, err := New(tt.cfg, rt, images, func(context.Context) (int64, int64, error) { return 1000, tt.available, nil }, nil, nil, clk)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// First sight of the old images, then of the young ones.
			if _, err := m.(*manager).detect(ctx, clk.Now()); err != nil {
				t.Fatal(err)
			}
			clk.Step(2 * time.Minute)
			for _, id := range tt.young {
				images.images[id] = img(id, 60, false)
			}
			err = m.GarbageCollect(ctx)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := strings.Join(images.removed, ","); got != tt.wantRemoved {
				t.Errorf("removed %q, want %q", got, tt.wantRemoved)
			}
		})
	}
}

func TestDeleteUnusedAndMaxAge(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	images := &fakeImages{images: map[string]*runtimeapi.Image{
		"sha256:pause": img("sha256:pause", 1, true), "sha256:used": img("sha256:used", 1, false), "sha256:x": img("sha256:x", 1, false), "sha256:y": img("sha256:y", 1, false),
	}}
	rt := &fakeRuntime{containers: []*runtimeapi.Container{{Id: "c", ImageRef: "sha256:used", State: runtimeapi.ContainerState_CONTAINER_RUNNING}}}
	m, err := New(Config{HighThresholdPercent: 100, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 10 * time.Minute, Period: time.Minute}, rt, images,
		func(context.Context) (int64, int64, error) { return 100, 100, nil }, nil, nil, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.GarbageCollect(ctx); err != nil || len(images.removed) != 0 {
		t.Fatalf("first pass removed %v (%v); images are first seen now", images.removed, err)
	}
	clk.Step(11 * time.Minute)
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	sort.Strings(images.removed)
	if got := strings.Join(images.removed, ","); got != "sha256:x,sha256:y" {
		t.Errorf("max age removed %q, want the unused, unpinned ones", got)
	}
	images.images["sha256:z"] = img("sha256:z", 1, false)
	if err := m.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := images.images["sha256:z"]; !ok {
		t.Error("DeleteUnusedImages removed an image younger than the minimum age")
	}
	clk.Step(2 * time.Minute)
	if err := m.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := images.images["sha256:z"]; ok {
		t.Error("DeleteUnusedImages kept an unused image")
	}
	if len(images.images) != 2 {
		t.Errorf("left %v, want pause and the used image", images.images)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{HighThresholdPercent: 101, LowThresholdPercent: 80, Period: time.Minute}, "--image-gc-high-threshold: 101 must be in [0, 100]"},
		{Config{HighThresholdPercent: 70, LowThresholdPercent: 80, Period: time.Minute}, "--image-gc-low-threshold: 80 must not be above --image-gc-high-threshold 70"},
		{Config{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 5 * time.Minute, MaxAge: time.Minute, Period: time.Minute}, "--image-maximum-gc-age: 1m0s must be greater than --image-minimum-gc-age 5m0s"},
		{Config{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second, Period: time.Minute}, "--image-minimum-gc-age: -1s must not be negative"},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
