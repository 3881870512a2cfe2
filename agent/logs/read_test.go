package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// rec formats one CRI log record at t0+sec seconds.
func rec(sec int, stream, tag, msg string) string {
	return fmt.Sprintf("%s %s %s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, msg)
}

func writeFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o640); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		t.Fatal(err)
	}
}

func TestParseRecord(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    record
		wantErr string
	}{
		{name: "full stdout", line: "2024-01-01T00:00:00.123Z stdout F hello world\n",
			want: record{ts: t0.Add(123 * time.Millisecond), stream: 0, msg: []byte("hello world")}},
		{name: "partial stderr", line: "2024-01-01T00:00:00Z stderr P part",
			want: record{ts: t0, stream: 1, partial: true, msg: []byte("part")}},
		{name: "extra tags", line: "2024-01-01T00:00:00Z stdout F:x:y msg\n",
			want: record{ts: t0, msg: []byte("msg")}},
		{name: "empty message", line: "2024-01-01T00:00:00Z stdout F \n", want: record{ts: t0, msg: []byte{}}},
		{name: "empty message without separator", line: "2024-01-01T00:00:00Z stdout F\n", want: record{ts: t0}},
		{name: "message keeps spaces", line: "2024-01-01T00:00:00Z stdout F  two  spaces \n",
			want: record{ts: t0, msg: []byte(" two  spaces ")}},
		{name: "offset timestamp", line: "2024-01-01T01:00:00+01:00 stdout F x",
			want: record{ts: t0, msg: []byte("x")}},
		{name: "no fields", line: "garbage\n", wantErr: "timestamp: missing field"},
		{name: "bad timestamp", line: "yesterday stdout F x\n", wantErr: `timestamp "yesterday"`},
		{name: "no stream", line: "2024-01-01T00:00:00Z stdout", wantErr: "stream: missing field"},
		{name: "bad stream", line: "2024-01-01T00:00:00Z stdin F x\n", wantErr: `unknown stream "stdin"`},
		{name: "bad tag", line: "2024-01-01T00:00:00Z stdout X x\n", wantErr: `unknown tag "X"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRecord([]byte(tt.line))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.ts.Equal(tt.want.ts) || got.stream != tt.want.stream || got.partial != tt.want.partial || !bytes.Equal(got.msg, tt.want.msg) {
				t.Fatalf("got %+v (msg %q), want %+v (msg %q)", got, got.msg, tt.want, tt.want.msg)
			}
		})
	}
}

func TestNewOptions(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name string
		in   corev1.PodLogOptions
		want Options
	}{
		{name: "empty", in: corev1.PodLogOptions{}, want: Options{}},
		{name: "copied fields",
			in:   corev1.PodLogOptions{TailLines: ptr.To[int64](3), LimitBytes: ptr.To[int64](10), Follow: true, Timestamps: true, Previous: true},
			want: Options{TailLines: ptr.To[int64](3), LimitBytes: ptr.To[int64](10), Follow: true, Timestamps: true}},
		{name: "sinceSeconds", in: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60)}, want: Options{Since: now.Add(-time.Minute)}},
		{name: "sinceTime", in: corev1.PodLogOptions{SinceTime: &metav1.Time{Time: t0}}, want: Options{Since: t0}},
		{name: "later sinceTime wins", in: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](3600), SinceTime: &metav1.Time{Time: t0.Add(time.Minute)}},
			want: Options{Since: t0.Add(time.Minute)}},
		{name: "later sinceSeconds wins", in: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60), SinceTime: &metav1.Time{Time: t0}},
			want: Options{Since: now.Add(-time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewOptions(&tt.in, now)
			if !got.Since.Equal(tt.want.Since) || got.Follow != tt.want.Follow || got.Timestamps != tt.want.Timestamps ||
				!ptrEq(got.TailLines, tt.want.TailLines) || !ptrEq(got.LimitBytes, tt.want.LimitBytes) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func ptrEq(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// sampleLog has five logical lines; "three" is written in three partial
// records spanning t0+2s to t0+3s.
var sampleLog = []string{
	rec(0, "stdout", "F", "one"),
	rec(1, "stderr", "F", "two"),
	rec(2, "stdout", "P", "th"),
	rec(2, "stdout", "P", "r"),
	rec(3, "stdout", "F", "ee"),
	rec(4, "stderr", "F", "four"),
	rec(5, "stdout", "F", "five"),
}

func TestReadLogs(t *testing.T) {
	ts := func(sec int) string { return t0.Add(time.Duration(sec)*time.Second).Format(timestampOut) + " " }
	tests := []struct {
		name       string
		lines      []string
		opts       Options
		noStdout   bool
		noStderr   bool
		wantOut    string // what the shared writer saw
		wantStdout string // when the streams are read separately
		wantStderr string
	}{
		{name: "everything", lines: sampleLog, wantOut: "one\ntwo\nthree\nfour\nfive\n"},
		{name: "stdout only", lines: sampleLog, noStderr: true, wantOut: "one\nthree\nfive\n"},
		{name: "stderr only", lines: sampleLog, noStdout: true, wantOut: "two\nfour\n"},
		{name: "timestamps mark where each logical line began", lines: sampleLog, opts: Options{Timestamps: true},
			wantOut: ts(0) + "one\n" + ts(1) + "two\n" + ts(2) + "three\n" + ts(4) + "four\n" + ts(5) + "five\n"},
		{name: "tail counts joined lines", lines: sampleLog, opts: Options{TailLines: ptr.To[int64](3)}, wantOut: "three\nfour\nfive\n"},
		{name: "tail 2", lines: sampleLog, opts: Options{TailLines: ptr.To[int64](2)}, wantOut: "four\nfive\n"},
		{name: "tail 0", lines: sampleLog, opts: Options{TailLines: ptr.To[int64](0)}, wantOut: ""},
		{name: "tail beyond the start", lines: sampleLog, opts: Options{TailLines: ptr.To[int64](50)}, wantOut: "one\ntwo\nthree\nfour\nfive\n"},
		{name: "tail counts only the requested stream", lines: sampleLog, noStderr: true, opts: Options{TailLines: ptr.To[int64](2)}, wantOut: "three\nfive\n"},
		{name: "since keeps lines that began at the bound", lines: sampleLog, opts: Options{Since: t0.Add(2 * time.Second)}, wantOut: "three\nfour\nfive\n"},
		{name: "since drops a line that began before the bound", lines: sampleLog, opts: Options{Since: t0.Add(3 * time.Second)}, wantOut: "four\nfive\n"},
		{name: "since after everything", lines: sampleLog, opts: Options{Since: t0.Add(time.Hour)}, wantOut: ""},
		{name: "tail then since", lines: sampleLog, opts: Options{TailLines: ptr.To[int64](3), Since: t0.Add(4 * time.Second)}, wantOut: "four\nfive\n"},
		{name: "limit cuts mid-line", lines: sampleLog, opts: Options{LimitBytes: ptr.To[int64](6)}, wantOut: "one\ntw"},
		{name: "limit on a line end", lines: sampleLog, opts: Options{LimitBytes: ptr.To[int64](8)}, wantOut: "one\ntwo\n"},
		{name: "limit counts timestamps", lines: sampleLog, opts: Options{LimitBytes: ptr.To[int64](12), Timestamps: true}, wantOut: ts(0)[:12]},
		{name: "limit counts only written streams", lines: sampleLog, noStderr: true, opts: Options{LimitBytes: ptr.To[int64](8)}, wantOut: "one\nthre"},
		{name: "malformed records are skipped", lines: []string{rec(0, "stdout", "F", "a"), "not a record\n", rec(1, "stdout", "F", "b")}, wantOut: "a\nb\n"},
		{name: "unfinished last record is written", lines: []string{rec(0, "stdout", "F", "a"), strings.TrimSuffix(rec(1, "stdout", "F", "b"), "\n")}, wantOut: "a\nb\n"},
		{name: "empty file", lines: nil, wantOut: ""},
		{name: "empty messages", lines: []string{rec(0, "stdout", "F", ""), rec(1, "stdout", "F", "x")}, wantOut: "\nx\n"},
		{name: "partial lines join per stream",
			lines:      []string{rec(0, "stdout", "P", "a"), rec(1, "stderr", "F", "x"), rec(2, "stdout", "F", "b")},
			opts:       Options{Timestamps: true},
			wantStdout: ts(0) + "ab\n", wantStderr: ts(1) + "x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeFile(t, path, tt.lines...)
			if tt.wantStdout != "" || tt.wantStderr != "" {
				var stdout, stderr bytes.Buffer
				if err := ReadLogs(context.Background(), path, "", tt.opts, nil, &stdout, &stderr); err != nil {
					t.Fatal(err)
				}
				if stdout.String() != tt.wantStdout || stderr.String() != tt.wantStderr {
					t.Fatalf("stdout %q stderr %q, want %q and %q", stdout.String(), stderr.String(), tt.wantStdout, tt.wantStderr)
				}
				return
			}
			var out bytes.Buffer
			var stdout, stderr *bytes.Buffer = &out, &out
			if tt.noStdout {
				stdout = nil
			}
			if tt.noStderr {
				stderr = nil
			}
			if err := ReadLogs(context.Background(), path, "", tt.opts, nil, writerOrNil(stdout), writerOrNil(stderr)); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.wantOut {
				t.Fatalf("got %q, want %q", out.String(), tt.wantOut)
			}
		})
	}
}

// writerOrNil keeps a nil *bytes.Buffer from becoming a non-nil io.Writer.
func writerOrNil(b *bytes.Buffer) interface{ Write([]byte) (int, error) } {
	if b == nil {
		return nil
	}
	return b
}

func TestReadLogsErrors(t *testing.T) {
	dir := t.TempDir()
	if err := ReadLogs(context.Background(), filepath.Join(dir, "missing.log"), "", Options{}, nil, &bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), "missing.log") {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(dir, "0.log")
	writeFile(t, path, rec(0, "stdout", "F", "a"))
	if err := ReadLogs(context.Background(), path, "id", Options{Follow: true}, nil, &bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), "needs the runtime") {
		t.Fatalf("follow without runtime: %v", err)
	}
	failing := errWriter{errors.New("client went away")}
	if err := ReadLogs(context.Background(), path, "", Options{}, nil, failing, nil); !errors.Is(err, failing.err) {
		t.Fatalf("write error: %v", err)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

func TestReadLogsSymlink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "real.log")
	writeFile(t, path, rec(0, "stdout", "F", "via link"))
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), link, "", Options{}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "via link\n" {
		t.Fatalf("got %q", out.String())
	}
}

func TestReadLogsLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	var lines []string
	for i := range 5000 {
		lines = append(lines, rec(i, "stdout", "F", fmt.Sprintf("line %d", i)))
	}
	long := strings.Repeat("x", 200<<10) // longer than the read buffer
	lines = append(lines, rec(5000, "stderr", "F", long), rec(5001, "stdout", "F", "last"))
	writeFile(t, path, lines...)

	tests := []struct {
		tail int64
		want string
	}{
		{tail: 1, want: "last\n"},
		{tail: 2, want: long + "\nlast\n"},
		{tail: 4, want: "line 4998\nline 4999\n" + long + "\nlast\n"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := ReadLogs(context.Background(), path, "", Options{TailLines: &tt.tail}, nil, &out, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.want {
			t.Fatalf("tail %d: got %d bytes starting %.40q, want %d bytes", tt.tail, out.Len(), out.String(), len(tt.want))
		}
	}
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), path, "", Options{}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 5002 {
		t.Fatalf("full read: %d lines, want 5002", n)
	}
}

// fakeStatus answers ContainerStatus from a settable state or error.
type fakeStatus struct {
	mu    sync.Mutex
	state runtimeapi.ContainerState
	err   error
	calls int
}

func (f *fakeStatus) set(state runtimeapi.ContainerState, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state, f.err = state, err
}

func (f *fakeStatus) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: f.state}}, nil
}

// syncBuffer is a buffer a test can wait on.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

func (b *syncBuffer) snapshot() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.changed
}

// following runs a follow read in the background with a fake clock.
type following struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	out   *syncBuffer
	done  chan error
}

func startFollow(t *testing.T, ctx context.Context, path string, opts Options, st StatusGetter) *following {
	t.Helper()
	f := &following{t: t, clock: clocktesting.NewFakeClock(t0), out: newSyncBuffer(), done: make(chan error, 1)}
	opts.Follow = true
	rd := &reader{clock: f.clock, period: time.Second}
	go func() { f.done <- rd.read(ctx, path, "cid", opts, st, f.out, f.out) }()
	return f
}

// tick advances the fake clock when the reader waits on it, so that the
// test works with or without file events.
func (f *following) tick() {
	if f.clock.HasWaiters() {
		f.clock.Step(time.Second)
	}
}

// waitFor waits until the output is exactly want.
func (f *following) waitFor(want string) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		got, changed := f.out.snapshot()
		if got == want {
			return
		}
		if !strings.HasPrefix(want, got) {
			f.t.Fatalf("output %q is not a prefix of %q", got, want)
		}
		select {
		case <-changed:
		case err := <-f.done:
			got, _ := f.out.snapshot()
			f.t.Fatalf("reader ended (%v) with %q, want %q", err, got, want)
		case <-time.After(20 * time.Millisecond):
			f.tick()
		case <-deadline:
			f.t.Fatalf("timed out with %q, want %q", got, want)
		}
	}
}

// wait waits for the reader to return.
func (f *following) wait() error {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-f.done:
			return err
		case <-time.After(20 * time.Millisecond):
			f.tick()
		case <-deadline:
			got, _ := f.out.snapshot()
			f.t.Fatalf("reader still running with %q", got)
		}
	}
}

func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, rec(0, "stdout", "F", "a"), rec(1, "stdout", "P", "b"))
	st := &fakeStatus{state: runtimeapi.ContainerState_CONTAINER_RUNNING}
	f := startFollow(t, context.Background(), path, Options{}, st)
	f.waitFor("a\nb")
	appendFile(t, path, rec(2, "stdout", "F", "c"), rec(3, "stderr", "F", "d"))
	f.waitFor("a\nbc\nd\n")
	// A record arriving in two writes is written once it is complete.
	line := rec(4, "stdout", "F", "e")
	appendFile(t, path, line[:10])
	appendFile(t, path, line[10:])
	f.waitFor("a\nbc\nd\ne\n")

	// The container exits after a last line: it is drained, then the read ends.
	appendFile(t, path, rec(5, "stdout", "F", "bye"))
	st.set(runtimeapi.ContainerState_CONTAINER_EXITED, nil)
	if err := f.wait(); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.out.snapshot(); got != "a\nbc\nd\ne\nbye\n" {
		t.Fatalf("got %q", got)
	}
}

func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, rec(0, "stdout", "F", "old-1"))
	st := &fakeStatus{state: runtimeapi.ContainerState_CONTAINER_RUNNING}
	f := startFollow(t, context.Background(), path, Options{Timestamps: false}, st)
	f.waitFor("old-1\n")

	// Rotation as the manager and the runtime do it: the last writes go
	// to the old file, it is renamed, the runtime opens a new file.
	appendFile(t, path, rec(1, "stdout", "P", "old-"))
	appendFile(t, path, rec(2, "stdout", "F", "2"))
	if err := os.Rename(path, path+".20240101-000002"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, rec(3, "stdout", "F", "new-1"))
	f.waitFor("old-1\nold-2\nnew-1\n")

	// And a second time.
	if err := os.Rename(path, path+".20240101-000003"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path)
	appendFile(t, path, rec(4, "stderr", "F", "new-2"))
	f.waitFor("old-1\nold-2\nnew-1\nnew-2\n")

	st.set(runtimeapi.ContainerState_CONTAINER_EXITED, nil)
	if err := f.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestFollowOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// status before the read starts
		state runtimeapi.ContainerState
		err   error
		want  string
	}{
		{name: "exited container is read to the end", state: runtimeapi.ContainerState_CONTAINER_EXITED, want: "one\ntwo\nthree\nfour\nfive\n"},
		{name: "removed container is read to the end", err: status.Error(codes.NotFound, "gone"), want: "one\ntwo\nthree\nfour\nfive\n"},
		{name: "tail", opts: Options{TailLines: ptr.To[int64](1)}, state: runtimeapi.ContainerState_CONTAINER_EXITED, want: "five\n"},
		{name: "tail 0 shows nothing old", opts: Options{TailLines: ptr.To[int64](0)}, state: runtimeapi.ContainerState_CONTAINER_EXITED, want: ""},
		{name: "limit", opts: Options{LimitBytes: ptr.To[int64](5)}, state: runtimeapi.ContainerState_CONTAINER_EXITED, want: "one\nt"},
		{name: "since", opts: Options{Since: t0.Add(4 * time.Second)}, state: runtimeapi.ContainerState_CONTAINER_EXITED, want: "four\nfive\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeFile(t, path, sampleLog...)
			st := &fakeStatus{state: tt.state, err: tt.err}
			f := startFollow(t, context.Background(), path, tt.opts, st)
			if err := f.wait(); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.out.snapshot(); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFollowRuntimeErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, rec(0, "stdout", "F", "a"))

	// An unreachable runtime is taken as "still running".
	st := &fakeStatus{err: status.Error(codes.Unavailable, "restarting")}
	ctx, cancel := context.WithCancel(context.Background())
	f := startFollow(t, ctx, path, Options{}, st)
	f.waitFor("a\n")
	appendFile(t, path, rec(1, "stdout", "F", "b"))
	f.waitFor("a\nb\n")
	cancel()
	if err := f.wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}

	// Any other error ends the read with it.
	st = &fakeStatus{err: status.Error(codes.Internal, "broken")}
	f = startFollow(t, context.Background(), path, Options{}, st)
	if err := f.wait(); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("runtime error: %v", err)
	}
}

func TestFollowAsksTheRuntimeAtMostOncePerPeriod(t *testing.T) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Skipf("no file events here: %v", err)
	}
	w.Close()
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path)
	st := &fakeStatus{state: runtimeapi.ContainerState_CONTAINER_RUNNING}
	f := startFollow(t, context.Background(), path, Options{}, st)
	want := ""
	for i := range 20 {
		appendFile(t, path, rec(i, "stdout", "F", "x"))
		want += "x\n"
		got, changed := f.out.snapshot()
		for got != want {
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatalf("timed out at %q", got)
			}
			got, changed = f.out.snapshot()
		}
	}
	st.mu.Lock()
	calls := st.calls
	st.mu.Unlock()
	// The clock did not move: one check when the read first reached the end.
	if calls != 1 {
		t.Fatalf("%d status calls without the clock moving, want 1", calls)
	}
	st.set(runtimeapi.ContainerState_CONTAINER_EXITED, nil)
	if err := f.wait(); err != nil {
		t.Fatal(err)
	}
}
