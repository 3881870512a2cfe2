package server

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/k1s/k1s/controllers/certificates"
	"github.com/k1s/k1s/controllers/clusterroleaggregation"
	"github.com/k1s/k1s/controllers/cronjob"
	"github.com/k1s/k1s/controllers/daemonset"
	"github.com/k1s/k1s/controllers/deployment"
	"github.com/k1s/k1s/controllers/disruption"
	"github.com/k1s/k1s/controllers/endpoints"
	"github.com/k1s/k1s/controllers/endpointslice"
	"github.com/k1s/k1s/controllers/endpointslicemirroring"
	"github.com/k1s/k1s/controllers/garbagecollector"
	"github.com/k1s/k1s/controllers/job"
	"github.com/k1s/k1s/controllers/manager"
	namespacecontroller "github.com/k1s/k1s/controllers/namespace"
	"github.com/k1s/k1s/controllers/nodeipam"
	"github.com/k1s/k1s/controllers/nodelifecycle"
	"github.com/k1s/k1s/controllers/podautoscaler"
	"github.com/k1s/k1s/controllers/podgc"
	"github.com/k1s/k1s/controllers/replicaset"
	"github.com/k1s/k1s/controllers/replication"
	"github.com/k1s/k1s/controllers/resourcequota"
	"github.com/k1s/k1s/controllers/rootcacertpublisher"
	"github.com/k1s/k1s/controllers/scheduler"
	"github.com/k1s/k1s/controllers/serviceaccount"
	"github.com/k1s/k1s/controllers/servicelb"
	"github.com/k1s/k1s/controllers/statefulset"
	"github.com/k1s/k1s/controllers/tokencleaner"
	"github.com/k1s/k1s/controllers/ttlafterfinished"
	"github.com/k1s/k1s/controllers/volume/ephemeral"
	"github.com/k1s/k1s/controllers/volume/persistentvolume"
	"github.com/k1s/k1s/controllers/volume/pvcprotection"
	"github.com/k1s/k1s/controllers/volume/pvprotection"
	"github.com/k1s/k1s/internal/pki"
)

// ControllerSettings are the tunables of the controllers and the
// scheduler, under kube-controller-manager's flag names. Start from
// DefaultControllerSettings: for some fields zero is a valid setting
// (--terminated-pod-gc-threshold=0 turns that collection off).
type ControllerSettings struct {
	ReplicaSet       replicaset.Config
	Replication      replication.Config
	Deployment       deployment.Config
	Endpoints        endpoints.Config
	EndpointSlice    endpointslice.Config
	GarbageCollector garbagecollector.Config
	ResourceQuota    resourcequota.Config
	NodeLifecycle    nodelifecycle.Config
	PodGC            podgc.Config
	Scheduler        scheduler.Config
	PersistentVolume persistentvolume.Config
	// HPA is the horizontal-pod-autoscaler controller's (--horizontal-pod-autoscaler-*).
	HPA podautoscaler.Config
	// ClusterSigningDuration is the longest life of a certificate the
	// csrsigning controller signs (--cluster-signing-duration). Default 8760h.
	ClusterSigningDuration time.Duration
}

// DefaultControllerSettings returns every controller's defaults.
func DefaultControllerSettings() ControllerSettings {
	s := ControllerSettings{NodeLifecycle: nodelifecycle.DefaultConfig(), PodGC: podgc.DefaultConfig()}
	s.SetDefaults()
	return s
}

// SetDefaults fills the unset fields that have no meaningful zero.
func (s *ControllerSettings) SetDefaults() {
	s.ReplicaSet.SetDefaults()
	s.Replication.SetDefaults()
	s.Deployment.SetDefaults()
	s.Endpoints.SetDefaults()
	s.EndpointSlice.SetDefaults()
	s.GarbageCollector.SetDefaults()
	s.ResourceQuota.SetDefaults()
	s.Scheduler.SetDefaults()
	s.PersistentVolume.SetDefaults()
	s.HPA.SetDefaults()
	if s.ClusterSigningDuration == 0 {
		s.ClusterSigningDuration = certificates.DefaultSigningDuration
	}
	d := nodelifecycle.DefaultConfig()
	nl := &s.NodeLifecycle
	if nl.NodeMonitorPeriod == 0 {
		nl.NodeMonitorPeriod = d.NodeMonitorPeriod
	}
	if nl.NodeMonitorGracePeriod == 0 {
		nl.NodeMonitorGracePeriod = d.NodeMonitorGracePeriod
	}
	if nl.NodeStartupGracePeriod == 0 {
		nl.NodeStartupGracePeriod = d.NodeStartupGracePeriod
	}
	if nl.UnhealthyZoneThreshold == 0 {
		nl.UnhealthyZoneThreshold = d.UnhealthyZoneThreshold
	}
	gc := podgc.DefaultConfig()
	if s.PodGC.CheckPeriod == 0 {
		s.PodGC.CheckPeriod = gc.CheckPeriod
	}
	if s.PodGC.QuarantineTime == 0 {
		s.PodGC.QuarantineTime = gc.QuarantineTime
	}
}

// Validate checks every controller's settings; errors name their flags.
func (s *ControllerSettings) Validate() error {
	return errors.Join(
		s.ReplicaSet.Validate(),
		s.Replication.Validate(),
		s.Deployment.Validate(),
		s.Endpoints.Validate(),
		s.EndpointSlice.Validate(),
		s.GarbageCollector.Validate(),
		s.ResourceQuota.Validate(),
		s.NodeLifecycle.Validate(),
		s.PodGC.Validate(),
		s.Scheduler.Validate(),
		s.PersistentVolume.Validate(),
		s.HPA.Validate(),
		signingDurationErr(s.ClusterSigningDuration),
	)
}

// clusterCAs are the CAs the csrsigning controller signs with.
type clusterCAs struct{ client, server pki.CertKey }

// controllers lists every controller k1s server can run, in start order.
func controllers(rootCA []byte, cas clusterCAs, clusterCIDR *net.IPNet, nodeMask int, s ControllerSettings, serviceLB bool) []manager.Controller {
	out := []manager.Controller{
		serviceaccount.Descriptor(),
		rootcacertpublisher.Descriptor(rootCA),
		namespacecontroller.Descriptor(),
		nodeipam.Descriptor(nodeipam.Config{ClusterCIDR: clusterCIDR, NodeMaskSize: nodeMask}),
		scheduler.Descriptor(s.Scheduler),
		nodelifecycle.Descriptor(s.NodeLifecycle),
		podgc.Descriptor(s.PodGC),
		replicaset.Descriptor(s.ReplicaSet),
		replication.Descriptor(s.Replication),
		deployment.Descriptor(s.Deployment),
		daemonset.Descriptor(),
		statefulset.Descriptor(),
		job.Descriptor(),
		cronjob.Descriptor(),
		ttlafterfinished.Descriptor(),
		endpoints.Descriptor(s.Endpoints),
		endpointslice.Descriptor(s.EndpointSlice),
		endpointslicemirroring.Descriptor(),
		garbagecollector.Descriptor(s.GarbageCollector),
		disruption.Descriptor(),
		podautoscaler.Descriptor(s.HPA),
		resourcequota.Descriptor(s.ResourceQuota),
		clusterroleaggregation.Descriptor(),
		certificates.ApproverDescriptor(),
		certificates.SignerDescriptor(certificates.SignerConfig{ClientCA: cas.client, ServerCA: cas.server, Duration: s.ClusterSigningDuration}),
		certificates.CleanerDescriptor(),
		tokencleaner.Descriptor(),
		persistentvolume.Descriptor(s.PersistentVolume),
		pvprotection.Descriptor(),
		pvcprotection.Descriptor(),
		ephemeral.Descriptor(),
	}
	if serviceLB {
		out = append(out, servicelb.Descriptor())
	}
	return out
}

func signingDurationErr(d time.Duration) error {
	if d < 10*time.Minute {
		return fmt.Errorf("--cluster-signing-duration: %s is under 10 minutes", d)
	}
	return nil
}
