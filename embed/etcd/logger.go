package etcd

import (
	"fmt"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns a zap logger in etcd's default format, writing to
// stderr at level, for the embedded etcd server and for etcd clients.
//
// etcd's default configuration samples repeated messages, and each
// sampler keeps a fixed table of ~450 KiB of counters; at the warn and
// error levels k1s logs etcd at, repeats are rare, so k1s does not sample.
func NewLogger(level zapcore.Level) (*zap.Logger, error) {
	cfg := logutil.DefaultZapLoggerConfig
	cfg.Sampling = nil
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	lg, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("etcd logger: %w", err)
	}
	return lg, nil
}
