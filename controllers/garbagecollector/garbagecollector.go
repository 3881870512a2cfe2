package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

const (
	// DefaultWorkers is upstream's --concurrent-gc-syncs.
	DefaultWorkers = 20
	// DefaultSyncPeriod is how often discovery is checked for new or
	// removed resources (upstream's fixed 30 s).
	DefaultSyncPeriod = 30 * time.Second
	// absentOwnerCacheSize bounds the cache of owners known to be gone.
	absentOwnerCacheSize = 500
)

// Config configures the garbage collector.
type Config struct {
	// Workers is how many objects are processed at once
	// (--concurrent-gc-syncs). Default DefaultWorkers.
	Workers int
	// SyncPeriod is how often resources are rediscovered. Default
	// DefaultSyncPeriod.
	SyncPeriod time.Duration
	// IgnoredResources are never watched or collected. Default
	// DefaultIgnoredResources().
	IgnoredResources map[schema.GroupResource]struct{}
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = DefaultSyncPeriod
	}
	if c.IgnoredResources == nil {
		c.IgnoredResources = DefaultIgnoredResources()
	}
}

// Validate reports invalid settings, naming the flags.
func (c Config) Validate() error {
	var errs []error
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-gc-syncs must be positive, got %d", c.Workers))
	}
	if c.SyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("garbage collector sync period must be positive, got %s", c.SyncPeriod))
	}
	return errors.Join(errs...)
}

// DefaultIgnoredResources are the resources the collector leaves alone:
// events, which are many and expire anyway.
func DefaultIgnoredResources() map[schema.GroupResource]struct{} {
	return map[schema.GroupResource]struct{}{
		{Group: "", Resource: "events"}:              {},
		{Group: "events.k8s.io", Resource: "events"}: {},
	}
}

// DiscoverFunc lists the resources the server serves, in their preferred
// versions. It may return a partial list with an error.
type DiscoverFunc func(ctx context.Context) ([]*metav1.APIResourceList, error)

// DiscoveryFunc discovers the preferred resources of d.
func DiscoveryFunc(d discovery.DiscoveryInterface) DiscoverFunc {
	return func(ctx context.Context) ([]*metav1.APIResourceList, error) {
		return discovery.ToDiscoveryInterfaceWithContext(d).ServerPreferredResourcesWithContext(ctx)
	}
}

// GarbageCollector collects dependents of deleted owners. Create it with
// New; Run may be called once.
type GarbageCollector struct {
	cfg      Config
	metadata metadata.Interface
	mapper   meta.ResettableRESTMapper
	discover DiscoverFunc
	recorder record.EventRecorder
	clock    clock.WithTicker

	graph           *graph
	graphChanges    workqueue.TypedInterface[*event]
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
	absentOwners    *lru.Cache

	monitorMu sync.Mutex
	monitors  map[schema.GroupVersionResource]*monitor
	monitorWG sync.WaitGroup
	stopped   bool
	ignored   map[schema.GroupResource]struct{}

	// shared, when set, provides the informers of the resources it knows
	// (the built-in ones), started with sharedStop.
	shared     informers.SharedInformerFactory
	sharedStop <-chan struct{}
}

// UseSharedInformers makes the collector watch the resources for which
// factory already runs an informer through that informer, so that an
// object another controller caches is not cached twice; it watches the
// others with metadata informers of its own. (kube-controller-manager's
// collector takes a typed informer for every built-in resource; k1s keeps
// metadata informers where no controller needs more.) stop is the
// factory's. Call it before Run.
func (gc *GarbageCollector) UseSharedInformers(factory informers.SharedInformerFactory, stop <-chan struct{}) {
	gc.shared, gc.sharedStop = factory, stop
}

// New returns a garbage collector that watches, reads, patches and
// deletes objects with metadataClient, maps kinds and resources with
// mapper (reset when discovery changes), finds the resources to watch with
// discover, and records events with recorder. It contacts nothing until
// Run.
func New(cfg Config, metadataClient metadata.Interface, mapper meta.ResettableRESTMapper, discover DiscoverFunc,
	recorder record.EventRecorder, clk clock.WithTicker) (*GarbageCollector, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &GarbageCollector{
		cfg:          cfg,
		metadata:     metadataClient,
		mapper:       mapper,
		discover:     discover,
		recorder:     recorder,
		clock:        clk,
		graph:        newGraph(),
		graphChanges: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[*event]{Name: "garbage_collector_graph_changes"}),
		attemptToDelete: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
			workqueue.TypedRateLimitingQueueConfig[*node]{Name: "garbage_collector_attempt_to_delete"}),
		attemptToOrphan: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
			workqueue.TypedRateLimitingQueueConfig[*node]{Name: "garbage_collector_attempt_to_orphan"}),
		absentOwners: lru.New(absentOwnerCacheSize),
		monitors:     map[schema.GroupVersionResource]*monitor{},
		ignored:      maps.Clone(cfg.IgnoredResources),
	}, nil
}

// Run discovers the resources and starts watching them, then collects with
// the configured workers (after the watches have listed, or after one
// sync period at most) and rediscovers every sync period, until ctx is
// cancelled; it returns nil then.
func (gc *GarbageCollector) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting garbage collector")
	defer logger.Info("Shut down garbage collector")

	var wg sync.WaitGroup
	defer func() {
		gc.graphChanges.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
		gc.stopMonitors()
		wg.Wait()
	}()
	wg.Go(func() { gc.processGraphChanges(logger) })

	known := gc.resync(ctx, nil)
	wg.Go(func() {
		t := gc.clock.NewTicker(gc.cfg.SyncPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				known = gc.resync(ctx, known)
			}
		}
	})

	syncCtx, cancel := context.WithTimeout(ctx, gc.cfg.SyncPeriod)
	synced := cache.WaitForCacheSync(syncCtx.Done(), gc.isSynced)
	cancel()
	if ctx.Err() != nil {
		return nil
	}
	if synced {
		logger.Info("Garbage collector: all resource monitors have synced")
	} else {
		logger.Info("Garbage collector: not all resource monitors could be synced, proceeding anyway")
	}
	for range gc.cfg.Workers {
		wg.Go(func() {
			for gc.processAttemptToDelete(ctx) {
			}
		})
		wg.Go(func() {
			for gc.processAttemptToOrphan(ctx) {
			}
		})
	}
	<-ctx.Done()
	return nil
}

// resync rediscovers the deletable resources and, when they differ from
// known, resets the mapper and changes the monitors to match. It returns
// the resources now monitored.
func (gc *GarbageCollector) resync(ctx context.Context, known map[schema.GroupVersionResource]struct{}) map[schema.GroupVersionResource]struct{} {
	logger := klog.FromContext(ctx)
	resources, err := DeletableResources(ctx, gc.discover)
	if len(resources) == 0 {
		logger.V(2).Info("No resources reported by discovery, skipping garbage collector sync", "err", err)
		return known
	}
	if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err); ok {
		// Keep watching what a failing group served before.
		for gvr := range known {
			if _, bad := failed[gvr.GroupVersion()]; bad && gc.resourceSynced(gvr) {
				resources[gvr] = struct{}{}
			}
		}
	}
	if maps.Equal(known, resources) {
		return known
	}
	logger.V(2).Info("Syncing garbage collector with updated resources from discovery", "resources", len(resources))
	gc.mapper.Reset()
	if err := gc.syncMonitors(logger, resources); err != nil {
		// Resources the mapper cannot place yet are retried next period.
		logger.Error(err, "Failed to sync some garbage collector monitors")
		gc.startMonitors()
		return known
	}
	gc.startMonitors()
	return resources
}

// DeletableResources returns the preferred resources discover reports
// that support delete, list and watch, with discover's error (a partial
// result may come with it).
func DeletableResources(ctx context.Context, discover DiscoverFunc) (map[schema.GroupVersionResource]struct{}, error) {
	lists, err := discover(ctx)
	out := map[schema.GroupVersionResource]struct{}{}
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists) {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			out[gv.WithResource(r.Name)] = struct{}{}
		}
	}
	return out, err
}
