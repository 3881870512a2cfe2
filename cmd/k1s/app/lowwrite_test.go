package app

import (
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/controllers/manager"
)

func TestLowWriteLeaderElection(t *testing.T) {
	def := manager.DefaultConfig()
	tests := []struct {
		name  string
		args  []string
		retry time.Duration
		lease time.Duration
	}{
		{"no flag given: the low-write periods", nil, lowWriteRetryPeriod, lowWriteLeaseDuration},
		{"a retry period given: all kept as given", []string{"--leader-elect-retry-period=3s"}, 3 * time.Second, def.LeaseDuration},
		{"a lease duration given: all kept", []string{"--leader-elect-lease-duration=20s"}, def.RetryPeriod, 20 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := manager.DefaultConfig()
			app := &cli.App{
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "leader-elect-lease-duration", Value: cm.LeaseDuration, Destination: &cm.LeaseDuration},
					&cli.DurationFlag{Name: "leader-elect-renew-deadline", Value: cm.RenewDeadline, Destination: &cm.RenewDeadline},
					&cli.DurationFlag{Name: "leader-elect-retry-period", Value: cm.RetryPeriod, Destination: &cm.RetryPeriod},
				},
				Action: func(c *cli.Context) error {
					lowWriteLeaderElection(c, &cm)
					return nil
				},
			}
			if err := app.Run(append([]string{"k1s"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if cm.RetryPeriod != tc.retry || cm.LeaseDuration != tc.lease {
				t.Errorf("retry %s lease %s, want %s %s", cm.RetryPeriod, cm.LeaseDuration, tc.retry, tc.lease)
			}
			if err := cm.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
