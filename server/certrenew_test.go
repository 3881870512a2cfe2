package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func writeLeaf(t *testing.T, path string, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leaf"}, NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCertRenewer: the renewer sleeps until the first leaf is due (its
// expiry less renewBefore), renews, and plans from the renewed files; it
// reads the files again daily, renews at once a file it cannot read, and
// retries a failed renewal a minute later.
func TestCertRenewer(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		by         time.Duration
		wantRenews int
	}
	for _, tc := range []struct {
		name     string
		expiries []time.Duration // of the leaves, from t0; 0: no file
		fail     int             // renewals that fail first
		steps    []step
	}{
		{name: "the first due leaf", expiries: []time.Duration{5 * time.Hour, 3 * time.Hour}, steps: []step{
			{2*time.Hour - time.Second, 0}, {time.Second, 1},
			// renewed leaves expire 3 h after their renewal
			{2*time.Hour - time.Second, 1}, {time.Second, 2},
		}},
		{name: "read again daily", expiries: []time.Duration{3 * 24 * time.Hour}, steps: []step{
			{24 * time.Hour, 0}, {24 * time.Hour, 0}, {23*time.Hour - time.Second, 0}, {time.Second, 1},
		}},
		{name: "a missing file at once", expiries: []time.Duration{100 * 24 * time.Hour, 0}, steps: []step{
			{0, 1}, {2*time.Hour - time.Second, 1}, {time.Second, 2},
		}},
		{name: "a failed renewal retried a minute later", expiries: []time.Duration{time.Hour}, fail: 2, steps: []step{
			{0, 1}, {59 * time.Second, 1}, {time.Second, 2}, {time.Minute, 3}, {2*time.Hour - time.Second, 3}, {time.Second, 4},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := clocktesting.NewFakeClock(t0)
			var files []string
			for i, exp := range tc.expiries {
				f := filepath.Join(dir, string(rune('a'+i))+".crt")
				files = append(files, f)
				if exp != 0 {
					writeLeaf(t, f, t0.Add(exp))
				}
			}
			var mu sync.Mutex
			renews, fail := 0, tc.fail
			r := &certRenewer{files: func() []string { return files }, renewBefore: time.Hour, clock: clk,
				renew: func(context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					renews++
					if fail > 0 {
						fail--
						return errors.New("not now")
					}
					for _, f := range files {
						writeLeaf(t, f, clk.Now().Add(3*time.Hour))
					}
					return nil
				}}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			for i, s := range tc.steps {
				clk.Step(s.by)
				deadline := time.Now().Add(10 * time.Second)
				for {
					mu.Lock()
					n := renews
					mu.Unlock()
					if clk.Waiters() == 1 && n == s.wantRenews {
						break
					}
					if n > s.wantRenews || time.Now().After(deadline) {
						t.Fatalf("step %d (+%s): %d renewals, %d timers; want %d renewals", i, s.by, n, clk.Waiters(), s.wantRenews)
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
}
