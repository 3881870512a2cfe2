package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/internal/apis/batch"
)

// ScheduleConfig configures scheduled snapshots in `k1s server`.
type ScheduleConfig struct {
	// Cron is the schedule (--etcd-snapshot-schedule-cron): five cron
	// fields in the server's local time, or a macro (@daily, @every 1h …).
	// Default "0 */12 * * *" (k3s's).
	Cron string
	// Retention is how many scheduled snapshots are kept
	// (--etcd-snapshot-retention; the flag's default is 5); 0 keeps
	// every one (k3s's).
	Retention int
	// Dir is the snapshot directory (--etcd-snapshot-dir). Default
	// <data-dir>/server/db/snapshots.
	Dir string
	// Name is the snapshots' base name (--etcd-snapshot-name). Default
	// "etcd-snapshot".
	Name string
	// NodeName is this node's name, part of each snapshot's name. Required.
	NodeName string
	// Compress zips each snapshot (--etcd-snapshot-compress).
	Compress bool
}

// Default schedule and retention (k3s's).
const (
	DefaultCron      = "0 */12 * * *"
	DefaultRetention = 5
)

// SetDefaults fills unset fields but Dir.
func (c *ScheduleConfig) SetDefaults() {
	if c.Cron == "" {
		c.Cron = DefaultCron
	}
	if c.Name == "" {
		c.Name = DefaultScheduledName
	}
}

// Validate reports errors naming the flag.
func (c ScheduleConfig) Validate() error {
	var errs []error
	if _, err := batch.ParseSchedule(c.Cron); err != nil {
		errs = append(errs, fmt.Errorf("--etcd-snapshot-schedule-cron: %q: %w", c.Cron, err))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("--etcd-snapshot-retention: %d must not be negative (0 keeps every snapshot)", c.Retention))
	}
	if err := ValidateName("--etcd-snapshot-name", c.Name); err != nil {
		errs = append(errs, err)
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("--etcd-snapshot-dir: must not be empty"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("--node-name: snapshots need the node's name"))
	}
	return errors.Join(errs...)
}

// Scheduler takes snapshots on a cron schedule and prunes the older
// scheduled ones past the retention count. A failed snapshot is logged
// and the next one is taken at its time.
type Scheduler struct {
	cfg   ScheduleConfig
	sched batch.Schedule
	save  SaveFunc
	clock clock.Clock
	// taken, when set, receives every snapshot taken (tests).
	taken func(File)
	// changed, when set, is called after each scheduled pass that took a
	// snapshot, once the retention is applied (OnChange).
	changed func()
}

// OnChange sets f to be called after each scheduled snapshot, once the
// retention has been applied: the directory changed. Call it before Run;
// f must not block.
func (s *Scheduler) OnChange(f func()) { s.changed = f }

// NewScheduler validates cfg; save writes one snapshot.
func NewScheduler(cfg ScheduleConfig, save SaveFunc, clk clock.Clock) (*Scheduler, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sched, err := batch.ParseSchedule(cfg.Cron)
	if err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg, sched: sched, save: save, clock: clk}, nil
}

// Run takes snapshots until ctx is done; it returns nil then.
func (s *Scheduler) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("etcd-snapshot")
	logger.Info("Scheduled etcd snapshots", "schedule", s.cfg.Cron, "retention", s.cfg.Retention, "dir", s.cfg.Dir)
	for {
		now := s.clock.Now()
		next := s.sched.Next(now)
		if next.IsZero() {
			logger.Info("The etcd snapshot schedule never fires again", "schedule", s.cfg.Cron)
			<-ctx.Done()
			return nil
		}
		t := s.clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		s.snapshot(ctx, logger)
	}
}

// snapshot takes one scheduled snapshot and applies the retention.
func (s *Scheduler) snapshot(ctx context.Context, logger klog.Logger) {
	f, err := Take(ctx, s.save, Options{Dir: s.cfg.Dir, Name: s.cfg.Name, NodeName: s.cfg.NodeName, Compress: s.cfg.Compress}, s.clock.Now())
	if err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Scheduled etcd snapshot failed")
		}
		return
	}
	logger.Info("Saved etcd snapshot", "path", f.Path, "size", f.Size)
	if s.taken != nil {
		s.taken(f)
	}
	pruned, err := Prune(s.cfg.Dir, s.cfg.Name+"-", s.cfg.Retention)
	for _, p := range pruned {
		logger.Info("Pruned etcd snapshot", "name", p, "retention", s.cfg.Retention)
	}
	if err != nil {
		logger.Error(err, "Applying the etcd snapshot retention failed")
	}
	if s.changed != nil {
		s.changed()
	}
}
