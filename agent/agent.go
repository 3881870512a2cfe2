package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/agent/admission"
	"github.com/k1s/k1s/agent/checkpoint"
	"github.com/k1s/k1s/agent/cm"
	"github.com/k1s/k1s/agent/eviction"
	"github.com/k1s/k1s/agent/kuberuntime"
	"github.com/k1s/k1s/agent/nodestatus"
	"github.com/k1s/k1s/agent/pleg"
	"github.com/k1s/k1s/agent/pods"
	"github.com/k1s/k1s/agent/podstatus"
	"github.com/k1s/k1s/agent/prober"
	"github.com/k1s/k1s/agent/status"
	"github.com/k1s/k1s/internal/nodewatch"
)

// VolumeManager prepares and tears down pods' volumes.
type VolumeManager interface {
	kuberuntime.VolumeMounter
	// SetUpPod prepares every volume of pod (idempotent) and returns their
	// host paths by volume name.
	SetUpPod(ctx context.Context, pod *corev1.Pod) (map[string]string, error)
	// TearDownPod removes the pod's volumes once its containers are gone.
	TearDownPod(ctx context.Context, uid types.UID) error
	// CleanupOrphans removes volumes of pods not in active.
	CleanupOrphans(ctx context.Context, active sets.Set[types.UID]) error
}

// Network writes the pod network configuration when the node's pod CIDR
// is known.
type Network interface {
	// SetPodCIDR (re)writes the network config for cidr.
	SetPodCIDR(cidr string) error
}

// Deps are the agent's handles.
type Deps struct {
	// Client is the agent's API client (the node's identity).
	Client kubernetes.Interface
	// Runtime and Images are the CRI services.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// Volumes prepares pod volumes.
	Volumes VolumeManager
	// Network writes the CNI config; nil when the runtime's network is
	// managed elsewhere.
	Network Network
	// Env resolves environment variable sources (configmaps, secrets, services).
	Env kuberuntime.EnvSource
	// RuntimeClasses looks up the CRI handler of a RuntimeClass for the
	// sandboxes of pods naming one; nil: every sandbox uses the default
	// handler.
	RuntimeClasses kuberuntime.RuntimeHandlerFunc
	// Clock is injected for tests.
	Clock clock.WithTicker
	// PodsAfter, when set, holds back pod workers until it is closed
	// (images still being imported); nil: none.
	PodsAfter <-chan struct{}
	// APIReady, when set, holds back everything that needs the apiserver
	// (the node's registration and status, its Node watch, the pods bound
	// to it) until it is closed; static pods run meanwhile, as kubelet's
	// do without an apiserver. nil: the apiserver is there now.
	APIReady <-chan struct{}
	// Checkpoint, when set, keeps the pods bound to the node and its own
	// Node on disk and stands in for the apiserver while it cannot be
	// reached (agent/checkpoint). nil: none.
	Checkpoint *checkpoint.Store
	// Summary gives the eviction manager the node's stats; nil: the
	// signals are read directly (eviction.NodeSummary).
	Summary eviction.SummaryProvider
}

// Agent runs the pods of one node.
type Agent struct {
	cfg  Config
	deps Deps

	recorder record.EventRecorder
	runtime  *kuberuntime.Manager
	node     *nodestatus.Manager
	statuses *status.Manager
	pods     *pods.Manager
	pleg     *pleg.PLEG
	prober   *prober.Manager
	cm       cm.Manager
	// pressure is the eviction manager and the image and container
	// garbage collectors (pressure.go).
	pressure *pressure
	workers  *podWorkers

	ready chan struct{}
	// sourcesReady is closed once the apiserver's pods and the static
	// pod directory have each been read once.
	sourcesReady chan struct{}

	// nodeWatch watches this agent's own Node (watchNode runs it);
	// housekeeping reads the Node from it too.
	nodeWatch *nodewatch.Watch

	mu      sync.Mutex
	podCIDR string

	// admitMu serializes pod admission; admitted and rejected hold the
	// verdicts given (admission.go).
	admitMu       sync.Mutex
	admitted      map[types.UID]bool
	rejected      map[types.UID]bool
	admitHandlers []admission.Handler
}

// New validates cfg and builds the agent's managers. It starts nothing.
func New(cfg Config, deps Deps) (*Agent, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Client == nil || deps.Runtime == nil || deps.Images == nil {
		return nil, errors.New("agent: an API client and CRI services are required")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	a := &Agent{cfg: cfg, deps: deps, ready: make(chan struct{}), sourcesReady: make(chan struct{})}
	var err error
	if a.nodeWatch, err = nodewatch.New(deps.Client, cfg.NodeName); err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: deps.Client.CoreV1().Events("")})
	a.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})

	hostname, _ := os.Hostname()
	a.runtime, err = kuberuntime.New(kuberuntime.Config{
		NodeName:       cfg.NodeName,
		NodeIPs:        cfg.NodeIPs,
		Hostname:       hostname,
		ClusterDNS:     cfg.ClusterDNS,
		ClusterDomain:  cfg.ClusterDomain,
		ResolvConf:     cfg.ResolvConf,
		MemoryCapacity: nodestatus.MemoryBytes(),
		// Container GC enforces a limit other than one dead instance.
		KeepAllDeadInstances: cfg.NodeFlags.gcEnabled() && cfg.NodeFlags.MaximumDeadContainersPerContainer != 1,
	}, deps.Runtime, deps.Images, deps.Volumes, deps.Env, a.recorder, deps.Clock)
	if err != nil {
		return nil, err
	}
	if deps.RuntimeClasses != nil {
		a.runtime.UseRuntimeClasses(deps.RuntimeClasses)
	}
	a.runtime.UseNodeAllocatable(a.NodeAllocatable)
	if a.cm, err = newContainerManager(cfg); err != nil {
		return nil, err
	}
	a.runtime.UseCgroupParent(a.cm.CgroupParent)
	if err := a.newPressure(); err != nil {
		return nil, err
	}
	a.node, err = nodestatus.New(nodestatus.Config{
		NodeName:       cfg.NodeName,
		NodeIPs:        cfg.NodeIPs,
		Labels:         cfg.NodeLabels,
		ControlPlane:   cfg.ControlPlane,
		Taints:         cfg.NodeTaints,
		AgentPort:      cfg.AgentPort,
		MaxPods:        cfg.MaxPods,
		ExternalIPs:    cfg.NodeExternalIPs,
		ExternalDNS:    cfg.NodeExternalDNS,
		DataDir:        cfg.DataDir,
		KubeletVersion: cfg.KubeletVersion,
		Allocatable:    a.cm.Allocatable,
		EdgeAutonomy:   cfg.NodeFlags.EdgeAutonomy,
		Pressure:       a.pressure.manager,
	}, deps.Client, &health{a: a}, deps.Clock)
	if err != nil {
		return nil, err
	}
	a.pods = pods.NewManager(cfg.NodeName, deps.Client)
	a.statuses = status.New(deps.Client, a.pods.MirrorUID, deps.Clock)
	a.pleg = pleg.New(a.runtime, time.Second, deps.Clock)
	a.prober = prober.New(deps.Runtime, a.recorder, deps.Clock)
	return a, nil
}

// NodeAllocatable returns the node's allocatable resources as its Node
// reports them, or its CPUs and memory while the Node is not known yet.
func (a *Agent) NodeAllocatable() corev1.ResourceList {
	if node, ok := a.nodeWatch.Node(); ok && len(node.Status.Allocatable) > 0 {
		return node.Status.Allocatable.DeepCopy()
	}
	if a.deps.Checkpoint != nil {
		if node, ok := a.deps.Checkpoint.Node(a.cfg.NodeName); ok && len(node.Status.Allocatable) > 0 {
			return node.Status.Allocatable
		}
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(nodestatus.MemoryBytes(), resource.BinarySI),
	}
}

// Ready is closed once the node is registered and reported Ready.
func (a *Agent) Ready() <-chan struct{} { return a.node.Ready() }

// Pods returns the pods this agent runs (for its API server).
func (a *Agent) Pods() []*corev1.Pod { return a.pods.Pods() }

// LocalPod returns the address and readiness the agent last computed for
// one of its pods (ok false for a pod it has no status of): the
// checkpoint's EndpointSlices follow them while the apiserver is away.
func (a *Agent) LocalPod(uid types.UID) (ip string, ready, ok bool) {
	st, ok := a.statuses.GetPodStatus(uid)
	if !ok || st.PodIP == "" || st.Phase != corev1.PodRunning {
		return "", false, false
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	return st.PodIP, ready, true
}

// PodStatus returns the status the agent computed for a pod.
func (a *Agent) PodStatus(uid types.UID) (corev1.PodStatus, bool) {
	return a.statuses.GetPodStatus(uid)
}

// Run runs the agent until ctx is cancelled. Containers keep running when
// it returns: they outlive the agent by design.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("agent")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	goRun := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				logger.Error(err, "Agent component stopped")
			}
		}()
	}
	// afterAPI runs fn once the apiserver is there.
	afterAPI := func(fn func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			if a.deps.APIReady != nil {
				select {
				case <-a.deps.APIReady:
				case <-ctx.Done():
					return nil
				}
			}
			return fn(ctx)
		}
	}
	a.networkFromCheckpoint(ctx)
	goRun(afterAPI(a.node.Run))
	goRun(a.statuses.Run)
	goRun(a.pleg.Run)
	goRun(a.runContainerManager)
	goRun(a.runPressure)
	goRun(afterAPI(a.watchNode))

	apiSynced, fileSynced := make(chan struct{}), make(chan struct{})
	goRun(afterAPI(func(ctx context.Context) error {
		pods.RunAPISource(ctx, a.deps.Client, a.cfg.NodeName, a.pods, apiSynced, a.checkpointPods(ctx))
		return nil
	}))
	goRun(func(ctx context.Context) error {
		fs := &pods.FileSource{Dir: a.cfg.PodManifests, NodeName: a.cfg.NodeName, Synced: fileSynced}
		fs.Run(ctx, a.pods)
		return nil
	})
	// Housekeeping stops the runtime's pods that no source has only once
	// every source has been read: before, a pod bound to this node would
	// look like an orphan while the apiserver cannot be reached.
	go func() {
		for _, c := range []chan struct{}{apiSynced, fileSynced} {
			select {
			case <-c:
			case <-ctx.Done():
				return
			}
		}
		close(a.sourcesReady)
	}()

	if a.deps.PodsAfter != nil {
		// The node registers, reports and sets up its network meanwhile;
		// pod updates wait in the pod manager's queue.
		select {
		case <-a.deps.PodsAfter:
		case <-ctx.Done():
			wg.Wait()
			return nil
		}
	}
	a.workers = newPodWorkers(ctx, a.syncPod)
	close(a.pressure.workersReady)
	a.syncLoop(ctx)
	a.workers.Wait()
	wg.Wait()
	return nil
}

// checkpointPods wraps the API pod source's lister-watcher with the
// checkpoint: the pods bound to the node are kept, and stand in for the
// apiserver's list while it cannot be reached — a node starting cut off
// runs them. Each change of the kept pods prunes the ConfigMaps, Secrets
// and tokens no pod references any more. nil without a checkpoint.
func (a *Agent) checkpointPods(ctx context.Context) func(cache.ListerWatcher) cache.ListerWatcher {
	cp := a.deps.Checkpoint
	if cp == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	return func(lw cache.ListerWatcher) cache.ListerWatcher {
		wrapped, err := cp.ListWatch(checkpoint.Pods, lw, func() {
			if err := cp.PruneUnreferenced(); err != nil {
				logger.Error(err, "Cannot prune the checkpoint")
			}
		})
		if err != nil {
			logger.Error(err, "Pods not checkpointed")
			return lw
		}
		return wrapped
	}
}

// networkFromCheckpoint configures the pod network from the pod CIDR of
// the Node kept in the checkpoint, so that a node starting while the
// apiserver is away can run pods (its watch of the Node configures it
// again once the Node is read, and reports the node Ready).
func (a *Agent) networkFromCheckpoint(ctx context.Context) {
	if a.deps.Checkpoint == nil || a.deps.Network == nil {
		return
	}
	node, ok := a.deps.Checkpoint.Node(a.cfg.NodeName)
	if !ok || node.Spec.PodCIDR == "" {
		return
	}
	if err := a.deps.Network.SetPodCIDR(node.Spec.PodCIDR); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot configure the pod network from the checkpoint", "podCIDR", node.Spec.PodCIDR)
		return
	}
	klog.FromContext(ctx).V(2).Info("Pod network configured from the checkpoint", "podCIDR", node.Spec.PodCIDR)
}

// syncLoop dispatches pod changes, runtime events and housekeeping.
func (a *Agent) syncLoop(ctx context.Context) {
	housekeeping := a.deps.Clock.NewTicker(a.cfg.HousekeepingInterval)
	defer housekeeping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-a.pods.Updates():
			if u.Type == pods.Reconciled {
				// Nothing to run or stop: check the status there. Only a
				// pod with readiness gates (conditions others set) has
				// its Ready condition computed again.
				a.statuses.Reconcile(u.Pod)
				if len(u.Pod.Spec.ReadinessGates) == 0 {
					continue
				}
			}
			a.workers.Update(u.Pod)
		case ev := <-a.pleg.Events():
			if pod, ok := a.pods.Get(ev.UID); ok {
				a.workers.Update(pod)
			}
		case uid := <-a.prober.Updates():
			if pod, ok := a.pods.Get(uid); ok {
				a.workers.Update(pod)
			}
		case <-housekeeping.C():
			a.housekeeping(ctx)
		}
	}
}

// syncPod is one worker pass over a pod.
func (a *Agent) syncPod(ctx context.Context, pod *corev1.Pod) (time.Duration, bool) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	ctx = klog.NewContext(ctx, logger)
	current, desired := a.pods.Get(pod.UID)
	if desired {
		pod = current
	}
	if !desired || pod.DeletionTimestamp != nil {
		return a.terminatePod(ctx, pod, !desired)
	}
	rs, err := a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		logger.Error(err, "Failed to read pod status from the runtime")
		return 2 * time.Second, false
	}
	if old, ok := a.statuses.GetPodStatus(pod.UID); ok && (old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed) {
		// A finished pod never runs again; make sure nothing of it runs.
		if running(rs) {
			_ = a.runtime.KillPod(ctx, pod, rs, nil)
		}
		return 0, false
	}

	if r, ok := a.takeEviction(pod.UID); ok {
		return a.evict(ctx, pod, rs, r)
	}
	if r := a.admit(pod, rs); !r.Admit {
		return a.failPod(ctx, pod, rs, r.Reason, "Pod was rejected: "+r.Message)
	}

	remaining, limited := a.activeDeadline(pod)
	if limited && remaining <= 0 {
		return a.failPod(ctx, pod, rs, reasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline")
	}

	if err := a.ensurePodCgroup(ctx, pod); err != nil {
		return 2 * time.Second, false
	}
	var waiting map[string]kuberuntime.Waiting
	volumes, err := a.setUpVolumes(ctx, pod)
	if err != nil {
		a.recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", err.Error())
		waiting = map[string]kuberuntime.Waiting{}
		for _, c := range pod.Spec.Containers {
			waiting[c.Name] = kuberuntime.Waiting{Reason: kuberuntime.ReasonContainerCreating}
		}
	} else {
		uid := pod.UID
		res := a.runtime.SyncPod(ctx, pod, rs, volumes, kuberuntime.Probes{
			LivenessFailed: a.prober.LivenessFailed(uid, runningIDs(rs)),
			Started:        func(name, id string) (bool, bool) { return a.prober.Started(uid, name, id) },
		})
		a.cm.PodSynced(ctx, pod)
		waiting = res.Waiting
		if res.Err != nil {
			logger.V(2).Info("Pod sync incomplete", "err", res.Err)
		}
		if res.Changed {
			if rs, err = a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err != nil {
				return 2 * time.Second, false
			}
		}
	}
	st := a.generateStatus(pod, rs, waiting, false)
	a.statuses.SetPodStatus(pod, st)
	a.prober.Sync(ctx, pod, st.PodIP, runningIDs(rs))
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		// Release the pod's network and other sandbox resources.
		if err := a.runtime.KillPod(ctx, pod, rs, nil); err != nil {
			logger.V(2).Info("Failed to stop finished pod", "err", err)
		}
		return 0, false
	}
	requeue := 30 * time.Second
	if len(waiting) > 0 {
		requeue = 2 * time.Second
	}
	if limited && remaining < requeue {
		requeue = remaining
	}
	return requeue, false
}

// reasonDeadlineExceeded is the status reason of a pod that ran past its
// activeDeadlineSeconds (kubelet's).
const reasonDeadlineExceeded = "DeadlineExceeded"

// activeDeadline says how long pod may still run under its
// activeDeadlineSeconds, counted from its status start time, as kubelet's
// active deadline handler; limited is false without a deadline. A change
// of the deadline applies at the pod's next sync (the update syncs it).
func (a *Agent) activeDeadline(pod *corev1.Pod) (remaining time.Duration, limited bool) {
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil {
		return 0, false
	}
	start := pod.Status.StartTime
	if st, ok := a.statuses.GetPodStatus(pod.UID); ok && st.StartTime != nil {
		start = st.StartTime
	}
	limit := time.Duration(*d) * time.Second
	if start == nil || start.IsZero() {
		return limit, true
	}
	return limit - a.deps.Clock.Since(start.Time), true
}

// failPod stops every container of pod and reports it Failed with reason
// and message; it never runs again.
func (a *Agent) failPod(ctx context.Context, pod *corev1.Pod, rs *kuberuntime.PodStatus, reason, msg string) (time.Duration, bool) {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Failing pod", "reason", reason)
	a.recorder.Event(pod, corev1.EventTypeWarning, reason, msg)
	if err := a.runtime.KillPod(ctx, pod, rs, nil); err != nil {
		logger.Error(err, "Failed to kill pod")
		return 2 * time.Second, false
	}
	if fresh, err := a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		rs = fresh
	}
	st := a.generateStatus(pod, rs, nil, true)
	st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, msg
	a.statuses.SetPodStatus(pod, st)
	a.prober.RemovePod(pod.UID)
	return 0, false
}

func (a *Agent) setUpVolumes(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	if a.deps.Volumes == nil {
		return nil, nil
	}
	return a.deps.Volumes.SetUpPod(ctx, pod)
}

// runningIDs maps container names to their running instance's ID.
func runningIDs(rs *kuberuntime.PodStatus) map[string]string {
	out := map[string]string{}
	for _, c := range rs.Containers {
		if c.State == kuberuntime.StateRunning {
			if _, seen := out[c.Name]; !seen {
				out[c.Name] = c.ID
			}
		}
	}
	return out
}

func running(rs *kuberuntime.PodStatus) bool {
	for _, c := range rs.Containers {
		if c.State == kuberuntime.StateRunning {
			return true
		}
	}
	for _, s := range rs.Sandboxes {
		if s.Ready {
			return true
		}
	}
	return false
}

// terminatePod stops a deleted pod (honouring its grace period and preStop
// hooks), removes it from the runtime and its volumes, and lets the status
// manager delete the API object.
func (a *Agent) terminatePod(ctx context.Context, pod *corev1.Pod, removed bool) (time.Duration, bool) {
	logger := klog.FromContext(ctx)
	rs, err := a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		logger.Error(err, "Failed to read pod status from the runtime")
		return 2 * time.Second, false
	}
	var grace *int64
	if pod.DeletionGracePeriodSeconds != nil {
		grace = pod.DeletionGracePeriodSeconds
	}
	if err := a.runtime.KillPod(ctx, pod, rs, grace); err != nil {
		logger.Error(err, "Failed to kill pod")
		return 2 * time.Second, false
	}
	if rs, err = a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err != nil {
		return 2 * time.Second, false
	}
	if !removed {
		a.statuses.SetPodStatus(pod, a.generateStatus(pod, rs, nil, true))
	}
	if err := a.runtime.RemovePod(ctx, rs); err != nil {
		logger.Error(err, "Failed to remove pod from the runtime")
		return 2 * time.Second, false
	}
	if a.deps.Volumes != nil {
		if err := a.deps.Volumes.TearDownPod(ctx, pod.UID); err != nil {
			logger.Error(err, "Failed to tear down pod volumes")
			return 2 * time.Second, false
		}
	}
	a.prober.RemovePod(pod.UID)
	if removed {
		a.forgetAdmission(pod.UID)
	}
	if removed || pods.IsStatic(pod) {
		a.statuses.Forget(pod.UID)
	} else {
		a.statuses.MarkDeletable(pod)
	}
	logger.V(2).Info("Pod terminated")
	return 0, true
}

func (a *Agent) generateStatus(pod *corev1.Pod, rs *kuberuntime.PodStatus, waiting map[string]kuberuntime.Waiting, terminal bool) corev1.PodStatus {
	if cur, ok := a.statuses.GetPodStatus(pod.UID); ok {
		pod = pod.DeepCopy()
		pod.Status.StartTime = cur.StartTime
	}
	var hostIPs []string
	for _, ip := range a.cfg.NodeIPs {
		hostIPs = append(hostIPs, ip.String())
	}
	names := map[string]string{}
	for _, c := range rs.Containers {
		names[c.ID] = c.Name
	}
	uid := pod.UID
	return podstatus.Generate(pod, rs, podstatus.Inputs{
		Ready:              func(id string) (bool, bool) { return a.prober.Ready(uid, names[id], id) },
		Started:            func(id string) (bool, bool) { return a.prober.Started(uid, names[id], id) },
		Waiting:            waiting,
		TerminationMessage: kuberuntime.TerminationMessage,
		HostIPs:            hostIPs,
		RuntimeName:        "containerd",
		Terminal:           terminal,
	})
}

// housekeeping kills what runs for pods the agent no longer has, removes
// orphaned volumes, trims back-off records and keeps mirror pods.
func (a *Agent) housekeeping(ctx context.Context) {
	logger := klog.FromContext(ctx)
	a.runtime.GCBackOff()
	a.syncMirrors(ctx)
	select {
	case <-a.sourcesReady:
	default:
		// A running pod no source has named yet may be one of them.
		return
	}
	active := sets.New[types.UID]()
	for _, p := range a.pods.Pods() {
		active.Insert(p.UID)
	}
	for uid, rp := range a.pleg.Pods() {
		if active.Has(uid) || a.workers.Has(uid) {
			continue
		}
		a.workers.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: rp.Name, Namespace: rp.Namespace}})
	}
	a.cleanupCgroups(ctx, active, a.pleg.Pods())
	if a.deps.Volumes != nil {
		// An evicted pod's volumes go once nothing of it runs, so its
		// emptyDirs free their disk (evictedNotRunning, pressure.go).
		running := sets.New[types.UID]()
		for uid, rp := range a.pleg.Pods() {
			if a.evictedNotRunning(uid, rp) {
				active.Delete(uid)
				continue
			}
			running.Insert(uid)
		}
		for _, p := range a.pods.Pods() {
			if a.evictedNotRunning(p.UID, nil) && a.pleg.Pods()[p.UID] == nil {
				active.Delete(p.UID)
			}
		}
		if err := a.deps.Volumes.CleanupOrphans(ctx, active.Union(running)); err != nil {
			logger.V(2).Info("Failed to clean orphaned volumes", "err", err)
		}
	}
}

// syncMirrors keeps the static pods' mirror pods, once the node is
// registered.
func (a *Agent) syncMirrors(ctx context.Context) {
	logger := klog.FromContext(ctx)
	select {
	case <-a.node.Registered():
		node, err := a.ownNode(ctx)
		if err == nil {
			if err := a.pods.SyncMirrors(ctx, node.UID); err != nil {
				logger.V(2).Info("Failed to sync mirror pods", "err", err)
			}
		}
	default:
	}
}

// ownNode returns this agent's Node from its watch, or from the apiserver
// while the watch has not seen it yet.
func (a *Agent) ownNode(ctx context.Context) (*corev1.Node, error) {
	if node, ok := a.nodeWatch.Node(); ok {
		return node, nil
	}
	return a.deps.Client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{ResourceVersion: "0"})
}

// watchNode writes the pod network config when the node gets its pod CIDR
// (or it changes), then reports the node Ready as soon as the runtime sees
// the network. It watches its own Node, as kubelet's node informer does:
// node Ready waits on the CIDR, so it must not wait for a poll. A failed
// write is retried after 2 s; the node is looked at again every 10 s.
func (a *Agent) watchNode(ctx context.Context) error {
	select {
	case <-a.node.Registered():
	case <-ctx.Done():
		return nil
	}
	logger := klog.FromContext(ctx)
	defer a.nodeWatch.Start(ctx)()

	for {
		retry := 10 * time.Second
		if node, ok := a.nodeWatch.Node(); ok && a.deps.Checkpoint != nil {
			// Written only when what is kept changed (not on heartbeats).
			if _, err := a.deps.Checkpoint.Put(checkpoint.Nodes, "", node.Name, checkpoint.Trim(node)); err != nil {
				logger.Error(err, "Cannot keep the node in the checkpoint")
			}
		}
		if node, ok := a.nodeWatch.Node(); ok && node.Spec.PodCIDR != "" && a.deps.Network != nil {
			a.mu.Lock()
			changed := node.Spec.PodCIDR != a.podCIDR
			a.mu.Unlock()
			if changed {
				if err := a.deps.Network.SetPodCIDR(node.Spec.PodCIDR); err != nil {
					logger.Error(err, "Failed to write pod network config", "podCIDR", node.Spec.PodCIDR)
					retry = 2 * time.Second
				} else {
					a.mu.Lock()
					a.podCIDR = node.Spec.PodCIDR
					a.mu.Unlock()
					logger.Info("Pod network configured", "podCIDR", node.Spec.PodCIDR)
					a.waitNetworkReady(ctx)
					a.node.TriggerUpdate(ctx)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.nodeWatch.Changed():
		case <-a.deps.Clock.After(retry):
		}
	}
}

// waitNetworkReady waits (briefly) for the runtime to load the network
// config and to report itself ready, so that the status posted next says
// Ready rather than waiting for the next periodic update.
func (a *Agent) waitNetworkReady(ctx context.Context) {
	h := &health{a: a}
	for i := 0; i < 400; i++ {
		if h.NetworkReady() == nil && h.RuntimeReady(ctx) == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-a.deps.Clock.After(25 * time.Millisecond):
		}
	}
}

// health is what the node's Ready condition checks.
type health struct{ a *Agent }

func (h *health) RuntimeReady(ctx context.Context) error {
	if err := h.a.pleg.Healthy(); err != nil {
		return err
	}
	st, err := h.a.deps.Runtime.Status(ctx, false)
	if err != nil {
		return err
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady && !c.Status {
			return fmt.Errorf("%s: %s", c.Reason, c.Message)
		}
	}
	return nil
}

func (h *health) NetworkReady() error {
	st, err := h.a.deps.Runtime.Status(context.Background(), false)
	if err != nil {
		return err
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.NetworkReady && !c.Status {
			return fmt.Errorf("NetworkReady=false reason:%s message:%s", c.Reason, strings.TrimSpace(c.Message))
		}
	}
	return nil
}

func (h *health) RuntimeVersion(ctx context.Context) string {
	v, err := h.a.deps.Runtime.Version(ctx, "v1")
	if err != nil {
		return ""
	}
	return v.RuntimeName + "://" + v.RuntimeVersion
}
