package etcdsnapshot

import (
	"archive/zip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"
)

func TestFileName(t *testing.T) {
	at := time.Unix(1700000000, 0)
	tests := []struct {
		name, node string
		compressed bool
		want       string
	}{
		{"on-demand", "node-a", false, "on-demand-node-a-1700000000"},
		{"etcd-snapshot", "node-a", true, "etcd-snapshot-node-a-1700000000.zip"},
	}
	for _, tt := range tests {
		if got := FileName(tt.name, tt.node, at, tt.compressed); got != tt.want {
			t.Errorf("FileName(%s, %s) = %s, want %s", tt.name, tt.node, got, tt.want)
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"on-demand", true}, {"", false}, {"a/b", false}, {"..", false}} {
		err := ValidateName("--name", tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--name") {
			t.Errorf("error %q does not name the flag", err)
		}
	}
}

func write(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func names(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func TestListSortsNewestFirst(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"on-demand-n-100", "etcd-snapshot-n-300.zip", "on-demand-n-200", "on-demand-n-50.part", "x.zip.tmp"} {
		write(t, dir, n)
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"etcd-snapshot-n-300.zip", "on-demand-n-200", "on-demand-n-100"}
	if got := names(files); !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if !files[0].Compressed || files[1].Compressed || !files[0].CreatedAt.Equal(time.Unix(300, 0)) {
		t.Errorf("List[0] = %+v, want compressed, created at 300", files[0])
	}
	if files, err := List(filepath.Join(dir, "missing")); err != nil || len(files) != 0 {
		t.Errorf("List(missing) = %v, %v; want none", files, err)
	}
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name        string
		files       []string
		prefix      string
		retention   int
		wantDeleted []string
		wantLeft    []string
	}{{
		name:        "oldest of the prefix go",
		files:       []string{"etcd-snapshot-n-1", "etcd-snapshot-n-3", "etcd-snapshot-n-2.zip", "etcd-snapshot-n-4", "on-demand-n-0"},
		prefix:      "etcd-snapshot-",
		retention:   2,
		wantDeleted: []string{"etcd-snapshot-n-2.zip", "etcd-snapshot-n-1"},
		wantLeft:    []string{"etcd-snapshot-n-4", "etcd-snapshot-n-3", "on-demand-n-0"},
	}, {
		name:      "within retention",
		files:     []string{"on-demand-n-1", "on-demand-n-2"},
		prefix:    "on-demand-",
		retention: 2,
		wantLeft:  []string{"on-demand-n-2", "on-demand-n-1"},
	}, {
		name:      "retention 0 keeps all",
		files:     []string{"on-demand-n-1", "on-demand-n-2"},
		prefix:    "on-demand-",
		retention: 0,
		wantLeft:  []string{"on-demand-n-2", "on-demand-n-1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				write(t, dir, f)
			}
			deleted, err := Prune(dir, tt.prefix, tt.retention)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(deleted, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tt.wantDeleted)
			}
			left, _ := List(dir)
			if got := names(left); !slices.Equal(got, tt.wantLeft) {
				t.Errorf("left %v, want %v", got, tt.wantLeft)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "on-demand-n-1")
	write(t, dir, "on-demand-n-2")
	deleted, err := Delete(dir, []string{"on-demand-n-1", "missing", "../escape"})
	if !slices.Equal(deleted, []string{"on-demand-n-1"}) {
		t.Errorf("deleted %v", deleted)
	}
	if err == nil || !strings.Contains(err.Error(), "missing not found") || !strings.Contains(err.Error(), "not a path") {
		t.Errorf("Delete error = %v, want the missing and the path named", err)
	}
	left, _ := List(dir)
	if got := names(left); !slices.Equal(got, []string{"on-demand-n-2"}) {
		t.Errorf("left %v", got)
	}
}

// fakeSave writes content as the snapshot.
func fakeSave(content string) SaveFunc {
	return func(_ context.Context, path string) error {
		return os.WriteFile(path, []byte(content), 0o600)
	}
}

func TestTake(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snapshots")
	at := time.Unix(1700000000, 0)
	f, err := Take(context.Background(), fakeSave("db"), Options{Dir: dir, Name: "on-demand", NodeName: "n"}, at)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "on-demand-n-1700000000" || f.Size != 2 || f.Compressed {
		t.Errorf("Take = %+v", f)
	}
	if _, err := Take(context.Background(), fakeSave("db"), Options{Dir: dir, Name: "on-demand", NodeName: "n"}, at); err == nil {
		t.Errorf("a second snapshot of the same name and second was taken")
	}

	t.Run("compressed", func(t *testing.T) {
		// While it is saved and compressed, no uncompressed snapshot is
		// listed (a reader would take it for a finished one).
		listed := -1
		save := func(ctx context.Context, path string) error {
			if err := fakeSave("database")(ctx, path); err != nil {
				return err
			}
			files, err := List(dir)
			if err != nil {
				return err
			}
			listed = 0
			for _, f := range files {
				if strings.HasPrefix(f.Name, "z-") {
					listed++
				}
			}
			return nil
		}
		f, err := Take(context.Background(), save, Options{Dir: dir, Name: "z", NodeName: "n", Compress: true}, at)
		if listed != 0 {
			t.Errorf("%d snapshots of the name listed while the first was saved", listed)
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != "z-n-1700000000.zip" || !f.Compressed {
			t.Fatalf("Take = %+v", f)
		}
		if _, err := os.Stat(filepath.Join(dir, "z-n-1700000000")); !os.IsNotExist(err) {
			t.Errorf("the uncompressed file was left: %v", err)
		}
		zr, err := zip.OpenReader(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		if len(zr.File) != 1 || zr.File[0].Name != "z-n-1700000000" {
			t.Fatalf("zip holds %v", zr.File)
		}
		db, done, err := Uncompressed(f.Path, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(db)
		if string(b) != "database" {
			t.Errorf("decompressed %q", b)
		}
		done()
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("done left %s", db)
		}
	})

	t.Run("failed save leaves nothing", func(t *testing.T) {
		failing := func(_ context.Context, path string) error {
			os.WriteFile(path, []byte("partial"), 0o600)
			return errors.New("boom")
		}
		if _, err := Take(context.Background(), failing, Options{Dir: dir, Name: "fail", NodeName: "n"}, at); err == nil {
			t.Fatal("Take succeeded")
		}
		if _, err := os.Stat(filepath.Join(dir, "fail-n-1700000000")); !os.IsNotExist(err) {
			t.Errorf("a failed snapshot left a file")
		}
	})
}

func TestScheduleConfigValidate(t *testing.T) {
	base := ScheduleConfig{Dir: "/d", NodeName: "n", Retention: 5}
	tests := []struct {
		name    string
		mutate  func(*ScheduleConfig)
		wantErr string
	}{
		{"defaults", func(*ScheduleConfig) {}, ""},
		{"every", func(c *ScheduleConfig) { c.Cron = "@every 5s" }, ""},
		{"bad cron", func(c *ScheduleConfig) { c.Cron = "61 * * * *" }, "--etcd-snapshot-schedule-cron"},
		{"six fields", func(c *ScheduleConfig) { c.Cron = "0 0 */12 * * *" }, "--etcd-snapshot-schedule-cron"},
		{"retention 0 keeps all", func(c *ScheduleConfig) { c.Retention = 0 }, ""},
		{"negative retention", func(c *ScheduleConfig) { c.Retention = -1 }, "--etcd-snapshot-retention"},
		{"name", func(c *ScheduleConfig) { c.Name = "a/b" }, "--etcd-snapshot-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mutate(&c)
			c.SetDefaults()
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
	c := ScheduleConfig{}
	c.SetDefaults()
	if c.Cron != "0 */12 * * *" || c.Name != "etcd-snapshot" {
		t.Errorf("defaults = %+v", c)
	}
}

// TestScheduler runs the schedule on a fake clock: a snapshot at each
// activation, and the retention keeps the newest.
func TestScheduler(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2030, 1, 1, 0, 0, 30, 0, time.Local)
	clk := testclock.NewFakeClock(start)
	s, err := NewScheduler(ScheduleConfig{Cron: "* * * * *", Retention: 2, Dir: dir, NodeName: "n"}, fakeSave("db"), clk)
	if err != nil {
		t.Fatal(err)
	}
	taken := make(chan File, 10)
	s.taken = func(f File) { taken <- f }
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for i := range 4 {
		// Wait for the scheduler's timer, then reach the next minute.
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.SetTime(start.Add(time.Duration(i+1) * time.Minute).Truncate(time.Minute))
		select {
		case f := <-taken:
			want := FileName("etcd-snapshot", "n", clk.Now(), false)
			if f.Name != want {
				t.Errorf("snapshot %d = %s, want %s", i, f.Name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no snapshot %d", i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	left, _ := List(dir)
	want := []string{
		FileName("etcd-snapshot", "n", start.Add(4*time.Minute).Truncate(time.Minute), false),
		FileName("etcd-snapshot", "n", start.Add(3*time.Minute).Truncate(time.Minute), false),
	}
	if got := names(left); !slices.Equal(got, want) {
		t.Errorf("kept %v, want the newest two %v", got, want)
	}
}
