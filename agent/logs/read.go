package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Options says which part of a container log ReadLogs writes. It mirrors
// corev1.PodLogOptions with the relative times resolved; see NewOptions.
type Options struct {
	// TailLines, when set, starts that many logical lines (of the requested
	// streams) before the end of the file. Nil: from the beginning.
	TailLines *int64
	// LimitBytes, when set, stops after writing that many bytes. Nil: no limit.
	LimitBytes *int64
	// Since skips logical lines that began before it. Zero: no lower bound.
	Since time.Time
	// Follow keeps reading as the container writes, across log rotations,
	// until the container is no longer running and the file is drained, or
	// the context ends.
	Follow bool
	// Timestamps prefixes every logical line with the time it began.
	Timestamps bool
}

// NewOptions converts API log options. now anchors SinceSeconds; when both
// SinceSeconds and SinceTime are set the later bound wins. Previous and
// Container are the caller's business (they choose the file), and Stream is
// expressed by the writers passed to ReadLogs.
func NewOptions(o *corev1.PodLogOptions, now time.Time) Options {
	opts := Options{
		TailLines:  o.TailLines,
		LimitBytes: o.LimitBytes,
		Follow:     o.Follow,
		Timestamps: o.Timestamps,
	}
	if o.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(opts.Since) {
		opts.Since = o.SinceTime.Time
	}
	return opts
}

// StatusGetter is the part of the CRI runtime service ReadLogs uses to know
// whether a followed container still runs. Safe for concurrent use.
type StatusGetter interface {
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// followCheckPeriod bounds how long a follower waits without a file event
// before it looks again, and how often it asks the runtime whether the
// container still runs.
const followCheckPeriod = time.Second

// ReadLogs copies the CRI-format log file at path to stdout and stderr
// according to opts. A nil writer means its stream was not requested: its
// records are neither written nor counted by TailLines or LimitBytes.
// containerID and runtime are used only with opts.Follow, to stop once the
// container no longer runs. Partial records are joined into one logical
// line, prefixed once when opts.Timestamps is set. ReadLogs returns nil when
// the log is exhausted or the byte limit reached, and ctx.Err() when ctx ends
// first.
func ReadLogs(ctx context.Context, path, containerID string, opts Options, runtime StatusGetter, stdout, stderr io.Writer) error {
	r := &reader{clock: clock.RealClock{}, period: followCheckPeriod}
	return r.read(ctx, path, containerID, opts, runtime, stdout, stderr)
}

// reader carries what tests replace: the clock and the follow period.
type reader struct {
	clock  clock.Clock
	period time.Duration
}

// errLimit ends reading once LimitBytes have been written.
var errLimit = errors.New("byte limit reached")

func (rd *reader) read(ctx context.Context, path, containerID string, opts Options, runtime StatusGetter, stdout, stderr io.Writer) error {
	logger := klog.FromContext(ctx)
	if opts.Follow && runtime == nil {
		return errors.New("read logs: following needs the runtime")
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolve log file %q: %w", path, err)
	}
	path = resolved
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open log file %q: %w", path, err)
	}
	defer func() { f.Close() }()

	w := newLogWriter(stdout, stderr, opts)
	if opts.TailLines != nil {
		n := *opts.TailLines
		if n == 0 && !opts.Follow {
			return nil
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("stat log file %q: %w", path, err)
		}
		start, err := tailStart(f, fi.Size(), n, w.wanted)
		if err != nil {
			return fmt.Errorf("find the last %d lines of %q: %w", n, path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("seek log file %q: %w", path, err)
		}
	}

	br := bufio.NewReaderSize(f, 64<<10)
	var pending []byte
	var fl *follower
	draining := false
	emit := func(line []byte) error {
		rec, err := parseRecord(line)
		if err != nil {
			logger.V(2).Info("Skipping malformed log record", "path", path, "err", err)
			return nil
		}
		return w.write(rec)
	}
	// finish writes an unfinished last line, if any, and ends the read.
	finish := func(rest []byte) error {
		if len(rest) == 0 {
			return nil
		}
		if err := emit(rest); err != nil && !errors.Is(err, errLimit) {
			return err
		}
		return nil
	}
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk
			if len(pending) > 0 {
				pending = append(pending, chunk...)
				line = pending
			}
			werr := emit(line)
			pending = pending[:0]
			if errors.Is(werr, errLimit) {
				return nil
			}
			if werr != nil {
				return werr
			}
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			pending = append(pending, chunk...)
			continue
		case !errors.Is(err, io.EOF):
			return fmt.Errorf("read log file %q: %w", path, err)
		}

		// End of the file for now; chunk is an unfinished line, if any.
		pending = append(pending, chunk...)
		if !opts.Follow {
			return finish(pending)
		}
		if fl == nil {
			fl = rd.newFollower(ctx, filepath.Dir(path), containerID, runtime)
			defer fl.close()
			// Read once more: something may have been written before the
			// watch began.
			continue
		}
		next, err := reopened(path, f)
		if err != nil {
			return err
		}
		if next != nil {
			// The runtime reopened its log after a rotation and this file
			// is drained: carry on with the new one. A record the old file
			// ended without a newline is complete; runtimes write whole
			// records.
			logger.V(4).Info("Following rotated log file", "path", path)
			if len(pending) > 0 {
				werr := emit(pending)
				pending = pending[:0]
				if errors.Is(werr, errLimit) {
					next.Close()
					return nil
				}
				if werr != nil {
					next.Close()
					return werr
				}
			}
			f.Close()
			f = next
			br.Reset(f)
			continue
		}
		if draining {
			return finish(pending)
		}
		running, err := fl.running(ctx)
		if err != nil {
			return err
		}
		if !running {
			// Whatever the container wrote before it stopped is in the file
			// now; read it and finish.
			draining = true
			continue
		}
		if err := fl.wait(ctx); err != nil {
			return err
		}
	}
}

// reopened returns the file now at path when it is no longer the open file
// f (the log was rotated and the runtime created a new one), or nil when
// path still names f or names nothing yet.
func reopened(path string, f *os.File) (*os.File, error) {
	cur, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("stat log file %q: %w", path, err)
	}
	old, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat open log file %q: %w", path, err)
	}
	if os.SameFile(cur, old) {
		return nil, nil
	}
	next, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("open log file %q: %w", path, err)
	}
	return next, nil
}

// follower waits for a followed log to change and asks the runtime whether
// its container still runs.
type follower struct {
	clock   clock.Clock
	period  time.Duration
	id      string
	runtime StatusGetter
	// watcher wakes the follower on changes in the log's directory; nil
	// when inotify is unavailable, leaving the periodic check.
	watcher   *fsnotify.Watcher
	checked   bool
	lastCheck time.Time
}

func (rd *reader) newFollower(ctx context.Context, dir, id string, runtime StatusGetter) *follower {
	fl := &follower{clock: rd.clock, period: rd.period, id: id, runtime: runtime}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(dir); err == nil {
			fl.watcher = w
			return fl
		}
		w.Close()
	}
	klog.FromContext(ctx).V(2).Info("Following a log without file events; polling", "dir", dir, "err", err)
	return fl
}

func (fl *follower) close() {
	if fl.watcher != nil {
		fl.watcher.Close()
	}
}

// running reports whether the container still runs. It asks the runtime at
// most once per period and assumes "running" in between, and while the
// runtime is unreachable (containers outlive their runtime's API).
func (fl *follower) running(ctx context.Context) (bool, error) {
	now := fl.clock.Now()
	if fl.checked && now.Sub(fl.lastCheck) < fl.period {
		return true, nil
	}
	fl.checked, fl.lastCheck = true, now
	resp, err := fl.runtime.ContainerStatus(ctx, fl.id, false)
	switch status.Code(err) {
	case codes.OK:
	case codes.Unavailable:
		return true, nil
	case codes.NotFound:
		return false, nil
	default:
		return false, fmt.Errorf("status of container %q: %w", fl.id, err)
	}
	return resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
}

// wait blocks until the log directory changes, a period passes or ctx ends.
func (fl *follower) wait(ctx context.Context) error {
	t := fl.clock.NewTimer(fl.period)
	defer t.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fl.watcher != nil {
		events, errs = fl.watcher.Events, fl.watcher.Errors
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-events:
	case err := <-errs:
		klog.FromContext(ctx).V(2).Info("Log file watch error", "err", err)
	case <-t.C():
	}
	return nil
}

// logWriter writes logical lines to the requested streams.
type logWriter struct {
	out        [2]io.Writer
	remain     int64
	since      time.Time
	timestamps bool
	// open[s] is true while a logical line of stream s continues in the
	// next record; skip[s] says that line is filtered out by since.
	open [2]bool
	skip [2]bool
	buf  []byte
}

func newLogWriter(stdout, stderr io.Writer, opts Options) *logWriter {
	w := &logWriter{
		out:        [2]io.Writer{stdout, stderr},
		remain:     math.MaxInt64,
		since:      opts.Since,
		timestamps: opts.Timestamps,
	}
	if opts.LimitBytes != nil {
		w.remain = *opts.LimitBytes
	}
	return w
}

func (w *logWriter) wanted(stream int) bool { return w.out[stream] != nil }

// write writes one record: the timestamp prefix at the start of a logical
// line, the message, and a newline when the record ends the line.
func (w *logWriter) write(r record) error {
	s := r.stream
	first := !w.open[s]
	if first {
		w.skip[s] = r.ts.Before(w.since)
	}
	w.open[s] = r.partial
	if w.skip[s] || w.out[s] == nil {
		return nil
	}
	if w.remain <= 0 {
		return errLimit
	}
	b := w.buf[:0]
	if first && w.timestamps {
		b = r.ts.AppendFormat(b, timestampOut)
		b = append(b, ' ')
	}
	b = append(b, r.msg...)
	if !r.partial {
		b = append(b, '\n')
	}
	w.buf = b
	if int64(len(b)) > w.remain {
		b = b[:w.remain]
	}
	n, err := w.out[s].Write(b)
	w.remain -= int64(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", streamName(s), err)
	}
	if n < len(b) {
		return fmt.Errorf("write %s: %w", streamName(s), io.ErrShortWrite)
	}
	if w.remain <= 0 {
		return errLimit
	}
	return nil
}

func streamName(s int) string {
	if s == 0 {
		return streamStdout
	}
	return streamStderr
}

// tailStart returns the offset at which the last n logical lines of the
// wanted streams begin: just after the (n+1)-th last record that ends a
// logical line of a wanted stream, or 0 when there are fewer. Records after
// the last line end (an unfinished line) always belong to the tail.
func tailStart(r io.ReaderAt, size, n int64, wanted func(stream int) bool) (int64, error) {
	const blockSize = 32 << 10
	buf := make([]byte, blockSize)
	hdr := make([]byte, 128)
	var count int64
	// ends reports whether the record in [start, end] (end is its newline)
	// completes the search.
	ends := func(start, end int64) (bool, error) {
		h := hdr[:min(int64(len(hdr)), end-start+1)]
		if _, err := r.ReadAt(h, start); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		rec, err := parseRecord(h)
		if err != nil || rec.partial || !wanted(rec.stream) {
			return false, nil
		}
		count++
		return count > n, nil
	}
	recEnd := int64(-1) // the newline ending the record being delimited
	for end := size; end > 0; {
		start := max(0, end-blockSize)
		chunk := buf[:end-start]
		if _, err := r.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			pos := start + int64(i)
			if recEnd >= 0 {
				done, err := ends(pos+1, recEnd)
				if err != nil {
					return 0, err
				}
				if done {
					return recEnd + 1, nil
				}
			}
			recEnd = pos
		}
		end = start
	}
	if recEnd >= 0 {
		done, err := ends(0, recEnd)
		if err != nil {
			return 0, err
		}
		if done {
			return recEnd + 1, nil
		}
	}
	return 0, nil
}
