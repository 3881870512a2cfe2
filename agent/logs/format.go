package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream names as they appear in a CRI log record.
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
)

// Tags of a CRI log record.
const (
	tagPartial = "P"
	tagFull    = "F"
)

// timestampIn accepts the variable-width timestamps runtimes write;
// timestampOut is the fixed-width form written with ?timestamps=true, so
// that columns line up.
const (
	timestampIn  = "2006-01-02T15:04:05.999999999Z07:00"
	timestampOut = "2006-01-02T15:04:05.000000000Z07:00"
)

// record is one parsed line of a CRI log file.
type record struct {
	ts time.Time
	// stream is 0 for stdout and 1 for stderr.
	stream int
	// partial is true when the logical line continues in the next record
	// of the same stream.
	partial bool
	// msg is the message without the line's trailing newline.
	msg []byte
}

var errNoField = errors.New("missing field")

// parseRecord parses one line of a CRI log file, with or without its
// trailing newline. The returned message aliases line.
func parseRecord(line []byte) (record, error) {
	var r record
	line = bytes.TrimSuffix(line, []byte{'\n'})

	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return r, fmt.Errorf("timestamp: %w", errNoField)
	}
	t, err := time.Parse(timestampIn, string(ts))
	if err != nil {
		return r, fmt.Errorf("timestamp %q: %w", ts, err)
	}
	r.ts = t

	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return r, fmt.Errorf("stream: %w", errNoField)
	}
	switch string(stream) {
	case streamStdout:
		r.stream = 0
	case streamStderr:
		r.stream = 1
	default:
		return r, fmt.Errorf("unknown stream %q", stream)
	}

	// The message may be empty and some writers then omit the separating
	// space, so a missing message is not an error.
	tags, msg, _ := bytes.Cut(rest, []byte{' '})
	first, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(first) {
	case tagPartial:
		r.partial = true
	case tagFull:
	default:
		return r, fmt.Errorf("unknown tag %q", first)
	}
	r.msg = msg
	return r, nil
}
