package server

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/internal/pki"
)

// certRenewer renews the server's leaf certificates while it runs: when
// the first is due (Config.CertificateRenewBefore ahead of its expiry: at
// about 75 % of a one-year life, by default) it calls renew, which issues
// again every due leaf from the CAs (pki.Ensure, as a start does),
// rewrites the kubeconfigs and has the in-process clients present their
// new certificates. The apiserver, the agent API and etcd reload their
// serving certificates from the files, client-go the apiserver's client
// certificate for the agents. It reads the files again at least daily
// (one replaced by hand), and retries a failed renewal every minute.
type certRenewer struct {
	// files are the leaf certificates.
	files       func() []string
	renewBefore time.Duration
	renew       func(context.Context) error
	clock       clock.Clock
}

// maxSleep bounds the renewer's sleep; retry is its wait after a failure.
const (
	maxSleep = 24 * time.Hour
	retry    = time.Minute
)

// Run renews until ctx is cancelled; it returns nil then.
func (r *certRenewer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("certificates")
	renewed := false
	for {
		due, err := r.due()
		if err != nil {
			// A file missing or unreadable: renew makes it again.
			logger.Info("Reading the server's certificates", "err", err)
			due = r.clock.Now()
		}
		wait := min(due.Sub(r.clock.Now()), maxSleep)
		if renewed && wait <= 0 {
			logger.Error(err, "A certificate is still due after its renewal; retrying", "in", retry)
			wait = retry
		}
		renewed = false
		if wait > 0 {
			logger.V(4).Info("Next certificate renewal", "at", due, "check in", wait)
			if !r.sleep(ctx, wait) {
				return nil
			}
			continue
		}
		if err := r.renew(ctx); err != nil {
			logger.Error(err, "Cannot renew the server's certificates; retrying", "in", retry)
			if !r.sleep(ctx, retry) {
				return nil
			}
			continue
		}
		logger.Info("Renewed the server's certificates that were due")
		renewed = true
	}
}

// due is when the first leaf is due.
func (r *certRenewer) due() (time.Time, error) {
	var first time.Time
	var errs []error
	for _, f := range r.files() {
		d, err := pki.RenewalDue(f, r.renewBefore)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	if first.IsZero() && len(errs) == 0 {
		first = r.clock.Now().Add(maxSleep)
	}
	return first, errors.Join(errs...)
}

func (r *certRenewer) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-r.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}
