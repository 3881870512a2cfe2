// Package containergc is the node agent's container garbage collector,
// after upstream kubelet's: every minute it removes dead containers of
// deleted pods, dead containers beyond
// --maximum-dead-containers-per-container for each (pod, container name)
// and beyond --maximum-dead-containers on the node (oldest first, each
// older than --minimum-container-ttl-duration), and sandboxes that are
// neither ready nor hold a container: all of a deleted pod's, all but the
// newest of a live pod's. It touches only what k1s's agent created.
//
// The agent already removes a deleted pod's containers and sandboxes when
// it terminates the pod, and a container's older dead instances when it
// restarts it; this collector catches what those miss (pods that vanished
// while the agent was down, old sandboxes, the node-wide limit) and frees
// what a terminated pod still holds when the eviction manager reclaims disk.
package containergc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Labels the agent puts on what it creates (upstream's names).
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	labelManagedBy     = "io.kubernetes.managed-by"
	managedBy          = "k1s-agent"
)

// Config is the GC policy. Every field documents its default.
type Config struct {
	// MinAge (--minimum-container-ttl-duration): a dead container younger
	// than this stays. Default 0.
	MinAge time.Duration
	// MaxPerPodContainer (--maximum-dead-containers-per-container): dead
	// instances kept per container; negative: no limit. Default 1.
	MaxPerPodContainer int
	// MaxContainers (--maximum-dead-containers): dead containers kept on
	// the node; negative: no limit. Default -1.
	MaxContainers int
	// Period is how often GC runs. Default 1m (kubelet's).
	Period time.Duration
}

// Validate reports errors naming the flag.
func (c *Config) Validate() error {
	if c.MinAge < 0 {
		return fmt.Errorf("--minimum-container-ttl-duration: %s must not be negative", c.MinAge)
	}
	return nil
}

// PodState tells the collector about a pod by UID: removed when no
// source has it any more (its content may all go), terminated when it
// has finished and will never run again.
type PodState interface {
	Removed(uid types.UID) bool
	Terminated(uid types.UID) bool
	// SourcesReady is true once every pod source was read (before, a pod
	// not yet seen is not known to be removed).
	SourcesReady() bool
}

// Manager removes dead containers and sandboxes. Safe for concurrent use.
type Manager interface {
	// Run collects every Period until ctx is done.
	Run(ctx context.Context) error
	// GarbageCollect is one pass of the policy.
	GarbageCollect(ctx context.Context) error
	// DeleteAllUnusedContainers also removes everything of terminated
	// pods (the eviction manager's reclaim).
	DeleteAllUnusedContainers(ctx context.Context) error
}

type gc struct {
	cfg     Config
	runtime internalapi.RuntimeService
	pods    PodState
	clock   clock.Clock
}

// New validates cfg and returns a collector; it starts nothing.
func New(cfg Config, runtime internalapi.RuntimeService, pods PodState, clk clock.Clock) (Manager, error) {
	if cfg.Period == 0 {
		cfg.Period = time.Minute
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if runtime == nil || pods == nil {
		return nil, errors.New("container GC: a CRI runtime and pod state are required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &gc{cfg: cfg, runtime: runtime, pods: pods, clock: clk}, nil
}

func (g *gc) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("containergc")
	ctx = klog.NewContext(ctx, logger)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.clock.After(g.cfg.Period):
		}
		if err := g.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Container garbage collection failed")
		}
	}
}

func (g *gc) GarbageCollect(ctx context.Context) error { return g.collect(ctx, false) }

func (g *gc) DeleteAllUnusedContainers(ctx context.Context) error { return g.collect(ctx, true) }

type dead struct {
	id      string
	created time.Time
}

type unit struct {
	uid  types.UID
	name string
}

func (g *gc) collect(ctx context.Context, withTerminated bool) error {
	errs := []error{g.containers(ctx, withTerminated), g.sandboxes(ctx, withTerminated)}
	return errors.Join(errs...)
}

func (g *gc) gone(uid types.UID, withTerminated bool) bool {
	if !g.pods.SourcesReady() {
		return false
	}
	return g.pods.Removed(uid) || (withTerminated && g.pods.Terminated(uid))
}

func (g *gc) containers(ctx context.Context, withTerminated bool) error {
	all, err := g.runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	newest := g.clock.Now().Add(-g.cfg.MinAge)
	units := map[unit][]dead{}
	for _, c := range all {
		if c.Labels[labelManagedBy] != managedBy || c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		created := time.Unix(0, c.CreatedAt)
		if created.After(newest) {
			continue
		}
		k := unit{uid: types.UID(c.Labels[labelPodUID]), name: c.Labels[labelContainerName]}
		units[k] = append(units[k], dead{id: c.Id, created: created})
	}
	for k := range units {
		sort.Slice(units[k], func(i, j int) bool { return units[k][i].created.After(units[k][j].created) })
	}
	var errs []error
	remove := func(ds []dead) {
		for _, d := range ds {
			if err := g.runtime.RemoveContainer(ctx, d.id); err != nil {
				errs = append(errs, fmt.Errorf("remove container %s: %w", d.id, err))
				continue
			}
			klog.FromContext(ctx).V(4).Info("Removed dead container", "id", d.id)
		}
	}
	for k, ds := range units {
		if g.gone(k.uid, withTerminated) {
			remove(ds)
			delete(units, k)
		}
	}
	keepEach := func(n int) {
		for k, ds := range units {
			if len(ds) > n {
				remove(ds[n:])
				units[k] = ds[:n]
			}
		}
	}
	if g.cfg.MaxPerPodContainer >= 0 {
		keepEach(g.cfg.MaxPerPodContainer)
	}
	if g.cfg.MaxContainers >= 0 {
		total := 0
		for _, ds := range units {
			total += len(ds)
		}
		if total > g.cfg.MaxContainers {
			per := 1
			if len(units) > 0 && g.cfg.MaxContainers/len(units) > 1 {
				per = g.cfg.MaxContainers / len(units)
			}
			keepEach(per)
			var flat []dead
			for _, ds := range units {
				flat = append(flat, ds...)
			}
			if len(flat) > g.cfg.MaxContainers {
				sort.Slice(flat, func(i, j int) bool { return flat[i].created.Before(flat[j].created) })
				remove(flat[:len(flat)-g.cfg.MaxContainers])
			}
		}
	}
	return errors.Join(errs...)
}

func (g *gc) sandboxes(ctx context.Context, withTerminated bool) error {
	ctrs, err := g.runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	holding := map[string]bool{}
	for _, c := range ctrs {
		holding[c.PodSandboxId] = true
	}
	sbs, err := g.runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	type sb struct {
		id      string
		created int64
		active  bool
	}
	byPod := map[types.UID][]sb{}
	for _, s := range sbs {
		if s.Labels[labelManagedBy] != managedBy {
			continue
		}
		uid := types.UID(s.Labels[labelPodUID])
		if uid == "" && s.Metadata != nil {
			uid = types.UID(s.Metadata.Uid)
		}
		byPod[uid] = append(byPod[uid], sb{id: s.Id, created: s.CreatedAt, active: s.State == runtimeapi.PodSandboxState_SANDBOX_READY || holding[s.Id]})
	}
	var errs []error
	for uid, l := range byPod {
		sort.Slice(l, func(i, j int) bool { return l[i].created < l[j].created })
		n := len(l) - 1 // keep the newest of a live pod
		if g.gone(uid, withTerminated) {
			n = len(l)
		}
		for _, s := range l[:max(n, 0)] {
			if s.active {
				continue
			}
			if err := g.runtime.RemovePodSandbox(ctx, s.id); err != nil {
				errs = append(errs, fmt.Errorf("remove sandbox %s: %w", s.id, err))
				continue
			}
			klog.FromContext(ctx).V(4).Info("Removed sandbox", "id", s.id, "pod", uid)
		}
	}
	return errors.Join(errs...)
}
