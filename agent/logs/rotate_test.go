package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRuntime is a runtime with containers whose logs live in a temp dir.
// ReopenContainerLog creates the log file anew, as a runtime does.
type fakeRuntime struct {
	mu         sync.Mutex
	containers []*runtimeapi.Container
	logPaths   map[string]string
	reopenErr  error
	reopened   []string
	reopenedCh chan string
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if filter.GetState() != nil && filter.GetState().GetState() != c.State {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.logPaths[id]
	if !ok {
		return nil, errors.New("no such container")
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, LogPath: p}}, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reopened = append(f.reopened, id)
	err := f.reopenErr
	if err == nil {
		err = os.WriteFile(f.logPaths[id], nil, 0o640)
	}
	if f.reopenedCh != nil {
		f.reopenedCh <- id
	}
	return err
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "defaults", cfg: Config{}},
		{name: "explicit", cfg: Config{MaxSize: "1Ki", MaxFiles: 2, Interval: time.Second}},
		{name: "rotation off", cfg: Config{MaxSize: "-1"}},
		{name: "bad size", cfg: Config{MaxSize: "ten megs"}, want: []string{"--container-log-max-size", `"ten megs"`}},
		{name: "fractional size", cfg: Config{MaxSize: "1.5"}, want: []string{"--container-log-max-size", "whole number"}},
		{name: "one file", cfg: Config{MaxFiles: 1}, want: []string{"--container-log-max-files: 1"}},
		{name: "negative files", cfg: Config{MaxFiles: -3}, want: []string{"--container-log-max-files: -3"}},
		{name: "negative interval", cfg: Config{Interval: -time.Second}, want: []string{"interval"}},
		{name: "all wrong", cfg: Config{MaxSize: "x", MaxFiles: 1}, want: []string{"--container-log-max-size", "--container-log-max-files"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := NewManager(Config{MaxFiles: 1}, &fakeRuntime{}, nil); err == nil {
		t.Fatal("NewManager accepted an invalid config")
	}
	if _, err := NewManager(Config{}, nil, nil); err == nil {
		t.Fatal("NewManager accepted no runtime")
	}
}

func TestRotateOnce(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	const stamp = "20240506-070809"
	tests := []struct {
		name      string
		maxFiles  int
		state     runtimeapi.ContainerState
		size      int      // bytes in the live log; -1: no live log
		existing  []string // rotated files present before the pass
		reopenErr error
		wantFiles []string
		wantGzip  []string // files expected to hold gzip data of their base name
		wantOpen  int      // ReopenContainerLog calls
		wantErr   string
	}{
		{name: "small log is left alone", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 99,
			wantFiles: []string{"0.log"}},
		{name: "full log is rotated", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			wantFiles: []string{"0.log", "0.log." + stamp}, wantOpen: 1},
		{name: "exited container is left alone", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_EXITED, size: 1000,
			wantFiles: []string{"0.log"}},
		{name: "earlier rotations are compressed", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			existing:  []string{"0.log.20240101-000000.gz", "0.log.20240102-000000"},
			wantFiles: []string{"0.log", "0.log.20240101-000000.gz", "0.log.20240102-000000.gz", "0.log." + stamp},
			wantGzip:  []string{"0.log.20240102-000000.gz"}, wantOpen: 1},
		{name: "oldest rotations are pruned to MaxFiles", maxFiles: 3, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			existing:  []string{"0.log.20240101-000000.gz", "0.log.20240102-000000.gz", "0.log.20240103-000000"},
			wantFiles: []string{"0.log", "0.log.20240103-000000.gz", "0.log." + stamp},
			wantGzip:  []string{"0.log.20240103-000000.gz"}, wantOpen: 1},
		{name: "two files keep no older rotation", maxFiles: 2, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			existing:  []string{"0.log.20240101-000000"},
			wantFiles: []string{"0.log", "0.log." + stamp}, wantOpen: 1},
		{name: "leftovers of interrupted rotations are removed", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			existing:  []string{"0.log.20240101-000000", "0.log.20240101-000000.gz", "0.log.20240102-000000.gz.tmp"},
			wantFiles: []string{"0.log", "0.log.20240101-000000.gz", "0.log." + stamp}, wantOpen: 1},
		{name: "failed reopen puts the log back", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			reopenErr: errors.New("runtime says no"),
			wantFiles: []string{"0.log"}, wantOpen: 1, wantErr: "runtime says no"},
		{name: "missing log is reopened", maxFiles: 5, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: -1,
			wantFiles: []string{"0.log"}, wantOpen: 1},
		{name: "other files in the directory are not touched", maxFiles: 2, state: runtimeapi.ContainerState_CONTAINER_RUNNING, size: 100,
			existing:  []string{"1.log", "1.log.20240101-000000.gz"},
			wantFiles: []string{"0.log", "0.log." + stamp, "1.log", "1.log.20240101-000000.gz"}, wantOpen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "0.log")
			live := strings.Repeat("l", max(tt.size, 0))
			if tt.size >= 0 {
				writeFile(t, path, live)
			}
			for _, e := range tt.existing {
				writeFile(t, filepath.Join(dir, e), e)
			}
			rt := &fakeRuntime{
				containers: []*runtimeapi.Container{{Id: "c1", State: tt.state}},
				logPaths:   map[string]string{"c1": path},
				reopenErr:  tt.reopenErr,
			}
			m, err := NewManager(Config{MaxSize: "100", MaxFiles: tt.maxFiles}, rt, clocktesting.NewFakeClock(now))
			if err != nil {
				t.Fatal(err)
			}
			err = m.RotateOnce(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `"c1"`) {
					t.Fatalf("error = %v, want one naming c1 and %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := listDir(t, dir); !slices.Equal(got, tt.wantFiles) {
				t.Fatalf("files %v, want %v", got, tt.wantFiles)
			}
			if len(rt.reopened) != tt.wantOpen {
				t.Fatalf("%d reopen calls, want %d", len(rt.reopened), tt.wantOpen)
			}
			for _, id := range rt.reopened {
				if id != "c1" {
					t.Fatalf("reopened %q", id)
				}
			}
			if tt.wantOpen == 1 && tt.wantErr == "" && tt.size >= 0 {
				// The live file is new; its content moved to the rotation.
				if b, _ := os.ReadFile(path); len(b) != 0 {
					t.Fatalf("live log holds %d bytes after rotation", len(b))
				}
				if b, _ := os.ReadFile(path + "." + stamp); string(b) != live {
					t.Fatalf("rotated log holds %d bytes, want %d", len(b), len(live))
				}
			}
			if tt.wantErr != "" {
				if b, _ := os.ReadFile(path); string(b) != live {
					t.Fatalf("restored log holds %d bytes, want %d", len(b), len(live))
				}
			}
			for _, g := range tt.wantGzip {
				if got, want := gunzip(t, filepath.Join(dir, g)), strings.TrimSuffix(g, ".gz"); got != want {
					t.Fatalf("%s decompresses to %q, want %q", g, got, want)
				}
			}
		})
	}
}

func TestRotationOff(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeFile(t, path, strings.Repeat("x", 1000))
	rt := &fakeRuntime{
		containers: []*runtimeapi.Container{{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
		logPaths:   map[string]string{"c1": path},
	}
	m, err := NewManager(Config{MaxSize: "-1"}, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"0.log"}) || len(rt.reopened) != 0 {
		t.Fatalf("rotation off still rotated: %v, reopen %v", got, rt.reopened)
	}
}

func TestRunRotatesEveryInterval(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeFile(t, path, strings.Repeat("x", 10))
	rt := &fakeRuntime{
		containers: []*runtimeapi.Container{{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
		logPaths:   map[string]string{"c1": path},
		reopenedCh: make(chan string, 1),
	}
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := NewManager(Config{MaxSize: "10", MaxFiles: 3, Interval: 10 * time.Second}, rt, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	for i := range 2 {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(10 * time.Second)
		select {
		case <-rt.reopenedCh:
		case <-time.After(10 * time.Second):
			t.Fatalf("pass %d did not rotate", i)
		}
		writeFile(t, path, strings.Repeat("x", 10))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
	want := []string{"0.log", "0.log.20240101-000010.gz", "0.log.20240101-000020"}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}

func TestClean(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	for _, f := range []string{"0.log", "0.log.20240101-000000.gz", "0.log.20240102-000000", "1.log"} {
		writeFile(t, filepath.Join(dir, f), "x")
	}
	rt := &fakeRuntime{logPaths: map[string]string{"c1": path}}
	m, err := NewManager(Config{}, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Clean(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"1.log"}) {
		t.Fatalf("files left %v, want [1.log]", got)
	}
	if err := m.Clean(context.Background(), "unknown"); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("clean of an unknown container: %v", err)
	}
}
