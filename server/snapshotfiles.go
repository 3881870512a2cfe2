package server

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/server/etcdsnapshot"
)

// snapshotFiles is the component keeping k3s's ETCDSnapshotFile objects
// in step with this server's snapshot directory (--etcd-snapshot-dir),
// as the admin: a pass at start (retried until the API serves the CRD,
// which the deploy component installs), after each scheduled snapshot
// (sched, when snapshots are scheduled), on changes in the directory
// (`k1s etcd-snapshot save|delete|prune`) and every minute. It runs with
// the embedded etcd, scheduled snapshots or not (k3s lists the directory
// either way).
func (s *Server) snapshotFiles(config *rest.Config, sched *etcdsnapshot.Scheduler) (*etcdsnapshot.Reflector, error) {
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot files: %w", err)
	}
	r, err := etcdsnapshot.NewReflector(etcdsnapshot.ReflectorConfig{Dir: s.cfg.EtcdSnapshots.Dir, NodeName: s.cfg.NodeName}, dyn, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	if sched != nil {
		sched.OnChange(r.Trigger)
	}
	return r, nil
}
