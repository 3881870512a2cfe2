package replication

import (
	"context"
	"fmt"

	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/replicaset"
)

// Name is the controller's name in --controllers.
const Name = "replicationcontroller-controller"

// EventSource is the component its events are reported as, upstream's.
const EventSource = "replication-controller"

// DefaultConcurrentSyncs is the default of Config.ConcurrentSyncs.
const DefaultConcurrentSyncs = 5

// Config is the controller's configuration.
type Config struct {
	// ConcurrentSyncs is how many ReplicationControllers sync at once
	// (--concurrent-rc-syncs). Default 5.
	ConcurrentSyncs int
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.ConcurrentSyncs == 0 {
		c.ConcurrentSyncs = DefaultConcurrentSyncs
	}
}

// Validate checks the configuration, naming the flag.
func (c *Config) Validate() error {
	if c.ConcurrentSyncs < 1 {
		return fmt.Errorf("--concurrent-rc-syncs: %d must be at least 1", c.ConcurrentSyncs)
	}
	return nil
}

// New returns the ReplicaSet controller over the ReplicationControllers of
// rcInformer: it acts through client, watches pods through podInformer
// (the caller starts both informers), records events with recorder and
// times with clk (clock.RealClock{} when nil).
func New(client kubernetes.Interface, rcInformer coreinformers.ReplicationControllerInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, clk clock.WithTicker) (*replicaset.Controller, error) {
	return replicaset.NewFor(Owners(client, rcInformer), client, podInformer, recorder, clk)
}

// Descriptor is the controller as kube-controller-manager names it, acting
// as kube-system/replication-controller.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           Name,
		Aliases:        []string{"replicationcontroller"},
		ServiceAccount: "replication-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			cfg.SetDefaults()
			if err := cfg.Validate(); err != nil {
				return err
			}
			client, err := cc.Client()
			if err != nil {
				return err
			}
			f := cc.InformerFactory.Core().V1()
			c, err := New(client, f.ReplicationControllers(), f.Pods(), cc.EventRecorder(EventSource), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentSyncs) })
			return nil
		},
	}
}
