package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server/etcdsnapshot"
)

// resetFlagFile, in <data-dir>/server/db, records a finished cluster
// reset (k3s's reset-flag): another --cluster-reset is refused until it
// is deleted, a normal start removes it.
const resetFlagFile = "reset-flag"

// ResetMessage is what `k1s server --cluster-reset` prints when it is
// done, before it exits (k3s's words).
const ResetMessage = "Managed etcd cluster membership has been reset, restart without --cluster-reset flag now. Backup and delete ${datadir}/server/db on each peer etcd server and rejoin the nodes"

// snapshotsEnabled: scheduled snapshots run (embedded etcd, not disabled).
func (c *Config) snapshotsEnabled() bool {
	return !c.DisableSnapshots && c.DatastoreEndpoint == ""
}

// validateSnapshots checks the snapshot and reset flags.
func (c *Config) validateSnapshots() []error {
	var errs []error
	if c.snapshotsEnabled() {
		if err := c.EtcdSnapshots.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ClusterResetRestorePath != "" && !c.ClusterReset {
		errs = append(errs, errors.New("--cluster-reset-restore-path: needs --cluster-reset"))
	}
	if c.ClusterReset && c.DatastoreEndpoint != "" {
		errs = append(errs, errors.New("--cluster-reset: resets the embedded etcd; with --datastore-endpoint restore that datastore with its own tools"))
	}
	if c.ClusterResetRestorePath != "" {
		if info, err := os.Stat(c.ClusterResetRestorePath); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-reset-restore-path: %w", err))
		} else if !info.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("--cluster-reset-restore-path: %s is not a file", c.ClusterResetRestorePath))
		}
	}
	return errs
}

// snapshotScheduler is the component taking scheduled snapshots of the
// embedded etcd at endpoint with the etcd client certificate.
func (s *Server) snapshotScheduler(endpoint string, cluster *pki.Cluster) (*etcdsnapshot.Scheduler, error) {
	save := etcdsnapshot.SaveFrom(etcdsnapshot.Etcd{
		Endpoint: endpoint, CAFile: cluster.EtcdCA.CertFile,
		CertFile: cluster.EtcdClient.CertFile, KeyFile: cluster.EtcdClient.KeyFile,
	})
	return etcdsnapshot.NewScheduler(s.cfg.EtcdSnapshots, save, clock.RealClock{})
}

// clusterReset is `k1s server --cluster-reset`, k3s's: the member's data
// replaced by a snapshot first when --cluster-reset-restore-path is given
// (the old etcd directory moved aside to etcd-old-<unix time>), then the
// member started alone as a new cluster of itself (etcd's
// force-new-cluster), checked, and stopped; the reset-flag file written.
// The server then exits for the operator to start it again without the
// flag. Unlike k3s, which starts the whole server and exits once etcd
// has reset, k1s runs etcd alone for the reset.
func (s *Server) clusterReset(ctx context.Context, ec etcd.Config) error {
	logger := klog.FromContext(ctx)
	dbDir := filepath.Join(s.serverDir(), "db")
	flag := filepath.Join(dbDir, resetFlagFile)
	if _, err := os.Stat(flag); err == nil {
		return fmt.Errorf("cluster-reset was successfully performed, please remove the cluster-reset flag and start k1s normally, if you need to perform another cluster reset, you must first manually delete the %s file", flag)
	}
	ec.ForceNewCluster = true
	e, err := etcd.New(ec)
	if err != nil {
		return err
	}
	if path := s.cfg.ClusterResetRestorePath; path != "" {
		db, done, err := etcdsnapshot.Uncompressed(path, dbDir)
		if err != nil {
			return err
		}
		defer done()
		if _, err := os.Stat(ec.DataDir); err == nil {
			old := ec.DataDir + "-old-" + strconv.FormatInt(time.Now().Unix(), 10)
			if err := os.Rename(ec.DataDir, old); err != nil {
				return fmt.Errorf("move the etcd data directory aside: %w", err)
			}
			logger.Info("Pre-restore etcd database moved", "path", old)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := e.Restore(db); err != nil {
			return err
		}
		logger.Info("Restored the etcd snapshot", "snapshot", path)
	} else if _, err := os.Stat(filepath.Join(ec.DataDir, "member")); err != nil {
		return fmt.Errorf("--cluster-reset: no etcd member in %s to reset: %w", ec.DataDir, err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	select {
	case <-e.Ready():
	case err := <-done:
		if err == nil {
			err = errors.New("etcd stopped")
		}
		return fmt.Errorf("--cluster-reset: %w", err)
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
	members, err := e.Members(ctx)
	if err == nil && len(members) != 1 {
		err = fmt.Errorf("etcd still has %d members", len(members))
	}
	cancel()
	if runErr := <-done; err == nil {
		err = runErr
	}
	if err != nil {
		return fmt.Errorf("--cluster-reset: %w", err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		return fmt.Errorf("--cluster-reset: %w", err)
	}
	logger.Info(ResetMessage)
	return nil
}
