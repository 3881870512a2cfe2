package app

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/controllers/manager"
)

// The controllers' leader election under --low-write, unless any
// --leader-elect-* duration is given: the Lease is renewed every 30 s
// instead of every 2 s (a write each time), and a standby server takes
// over up to 90 s after the leader is lost instead of 15 s.
const (
	lowWriteLeaseDuration = 90 * time.Second
	lowWriteRenewDeadline = 60 * time.Second
	lowWriteRetryPeriod   = 30 * time.Second
)

// lowWriteLeaderElection applies the low-write leader-election periods to
// cm when none of the --leader-elect-* durations is set.
func lowWriteLeaderElection(c *cli.Context, cm *manager.Config) {
	for _, name := range []string{"leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period"} {
		if c.IsSet(name) {
			return
		}
	}
	cm.LeaseDuration, cm.RenewDeadline, cm.RetryPeriod = lowWriteLeaseDuration, lowWriteRenewDeadline, lowWriteRetryPeriod
}
