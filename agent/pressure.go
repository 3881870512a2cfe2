package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent/admission"
	"github.com/k1s/k1s/agent/containergc"
	"github.com/k1s/k1s/agent/eviction"
	"github.com/k1s/k1s/agent/imagegc"
	"github.com/k1s/k1s/agent/kuberuntime"
	"github.com/k1s/k1s/agent/volume"
)

// pressure is the agent's eviction manager and garbage collectors, and
// the evictions it asked the pod workers for.
type pressure struct {
	manager     eviction.Manager
	imageGC     imagegc.Manager     // nil: off
	containerGC containergc.Manager // nil: off

	// workersReady is closed once the pod workers run (evictions go
	// through them).
	workersReady chan struct{}

	mu sync.Mutex
	// evictions are the pods to evict at their next sync, by UID.
	evictions map[types.UID]evictRequest
}

type evictRequest struct {
	grace  int64
	update func(*corev1.PodStatus)
}

// newPressure builds the eviction manager, image GC and container GC from
// the node flags, and adds the eviction manager's admission check.
func (a *Agent) newPressure() error {
	cfg, err := a.cfg.NodeFlags.Eviction()
	if err != nil {
		return err
	}
	p := &pressure{evictions: map[types.UID]evictRequest{}, workersReady: make(chan struct{})}
	nodeRef := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
	f := a.cfg.NodeFlags
	var imageGC eviction.ImageGC
	var containerGC eviction.ContainerGC
	if f.gcEnabled() {
		if p.imageGC, err = imagegc.New(f.ImageGC(), a.deps.Runtime, a.deps.Images, a.imageFsStats, a.recorder, nodeRef, a.deps.Clock); err != nil {
			return err
		}
		if p.containerGC, err = containergc.New(f.ContainerGC(), a.deps.Runtime, podState{a}, a.deps.Clock); err != nil {
			return err
		}
		imageGC, containerGC = p.imageGC, p.containerGC
	}
	summary := a.deps.Summary
	if summary == nil {
		summary = eviction.NewNodeSummary(eviction.NodeSummaryConfig{
			NodeName:   a.cfg.NodeName,
			RootDir:    a.cfg.AgentDir(),
			ImageFsDir: a.imageFsDir,
			PodCgroup: func(pod *corev1.Pod) string {
				if !f.CgroupsPerQOS || f.CgroupRoot == "" {
					return ""
				}
				return a.cm.CgroupParent(pod)
			},
			PodVolumeDir: func(pod *corev1.Pod, name string) string {
				return filepath.Join(a.cfg.AgentDir(), "pods", string(pod.UID), "volumes", volume.EmptyDirPluginDir, name)
			},
			PodLogDir: a.runtime.PodLogDir,
			Pods:      a.activePods,
		}, a.deps.Clock)
	}
	p.manager, err = eviction.New(cfg, eviction.Deps{
		Summary:          summary,
		ImageGC:          imageGC,
		ContainerGC:      containerGC,
		ActivePods:       a.activePods,
		KillPod:          a.evictPod,
		PodCleanedUp:     a.podCleanedUp,
		DedicatedImageFs: a.dedicatedImageFs,
		Recorder:         a.recorder,
		NodeRef:          nodeRef,
		Clock:            a.deps.Clock,
	})
	if err != nil {
		return err
	}
	a.pressure = p
	a.AddAdmitHandler(admission.HandlerFunc(func(pod *corev1.Pod, _ []*corev1.Pod) admission.Result {
		if ok, msg := p.manager.Admit(pod); !ok {
			return admission.Result{Reason: eviction.Reason, Message: msg}
		}
		return admission.Result{Admit: true}
	}))
	return nil
}

// runPressure runs the garbage collectors, and the eviction manager once
// every pod source was read.
func (a *Agent) runPressure(ctx context.Context) error {
	p := a.pressure
	var wg sync.WaitGroup
	run := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Eviction or garbage collection stopped")
			}
		}()
	}
	if p.containerGC != nil {
		run(p.containerGC.Run)
	}
	for _, ready := range []chan struct{}{a.sourcesReady, p.workersReady} {
		select {
		case <-ready:
		case <-ctx.Done():
			wg.Wait()
			return nil
		}
	}
	if p.imageGC != nil {
		run(p.imageGC.Run)
	}
	run(p.manager.Run)
	wg.Wait()
	return nil
}

// activePods are the pods that may be evicted: known, not deleted, not
// finished.
func (a *Agent) activePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range a.pods.Pods() {
		if pod.DeletionTimestamp != nil || a.terminal(pod.UID) {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// terminal reports whether the agent reported the pod finished.
func (a *Agent) terminal(uid types.UID) bool {
	st, ok := a.statuses.GetPodStatus(uid)
	return ok && (st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed)
}

// evictPod asks the pod's worker to evict it (evictions run where the
// pod's other changes run, one at a time).
func (a *Agent) evictPod(pod *corev1.Pod, grace int64, update func(*corev1.PodStatus)) error {
	a.pressure.mu.Lock()
	a.pressure.evictions[pod.UID] = evictRequest{grace: grace, update: update}
	a.pressure.mu.Unlock()
	a.workers.Update(pod) // runPressure waited for workersReady

	return nil
}

// takeEviction returns and forgets the eviction asked for pod, if any.
func (a *Agent) takeEviction(uid types.UID) (evictRequest, bool) {
	if a.pressure == nil {
		return evictRequest{}, false
	}
	a.pressure.mu.Lock()
	defer a.pressure.mu.Unlock()
	r, ok := a.pressure.evictions[uid]
	delete(a.pressure.evictions, uid)
	return r, ok
}

// evict stops pod with the eviction's grace period and reports it
// Failed with its status update; the pod never runs again.
func (a *Agent) evict(ctx context.Context, pod *corev1.Pod, rs *kuberuntime.PodStatus, r evictRequest) (time.Duration, bool) {
	logger := klog.FromContext(ctx)
	grace := r.grace
	if err := a.runtime.KillPod(ctx, pod, rs, &grace); err != nil {
		logger.Error(err, "Failed to kill evicted pod")
	}
	if fresh, err := a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		rs = fresh
	}
	st := a.generateStatus(pod, rs, nil, true)
	r.update(&st)
	a.statuses.SetPodStatus(pod, st)
	a.prober.RemovePod(pod.UID)
	return 0, false
}

// podCleanedUp reports whether an evicted pod's containers are stopped
// and its volumes gone.
func (a *Agent) podCleanedUp(pod *corev1.Pod) bool {
	if !a.terminal(pod.UID) {
		return false
	}
	if rp, ok := a.pleg.Pods()[pod.UID]; ok && rp != nil {
		rs, err := a.runtime.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
		if err != nil || running(rs) {
			return false
		}
	}
	matches, _ := filepath.Glob(filepath.Join(a.cfg.AgentDir(), "pods", string(pod.UID), "volumes", volume.EmptyDirPluginDir, "*"))
	return len(matches) == 0
}

// imageFsDir is the runtime's image filesystem mount point (CRI ImageFsInfo).
func (a *Agent) imageFsDir(ctx context.Context) (string, error) {
	resp, err := a.deps.Images.ImageFsInfo(ctx)
	if err != nil {
		return "", err
	}
	for _, fs := range resp.GetImageFilesystems() {
		if m := fs.GetFsId().GetMountpoint(); m != "" {
			return m, nil
		}
	}
	return "", fmt.Errorf("the runtime reports no image filesystem")
}

// imageFsStats is the image filesystem's capacity and free bytes.
func (a *Agent) imageFsStats(ctx context.Context) (int64, int64, error) {
	dir, err := a.imageFsDir(ctx)
	if err != nil {
		return 0, 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}

// dedicatedImageFs reports whether the image filesystem is another
// filesystem than the agent's directory.
func (a *Agent) dedicatedImageFs() bool {
	dir, err := a.imageFsDir(context.Background())
	if err != nil {
		return false
	}
	var img, node syscall.Stat_t
	if syscall.Stat(dir, &img) != nil || syscall.Stat(a.cfg.AgentDir(), &node) != nil {
		return false
	}
	return img.Dev != node.Dev
}

// podState tells container GC about pods.
type podState struct{ a *Agent }

func (p podState) Removed(uid types.UID) bool {
	_, ok := p.a.pods.Get(uid)
	return !ok
}

func (p podState) Terminated(uid types.UID) bool { return p.a.terminal(uid) }

func (p podState) SourcesReady() bool {
	select {
	case <-p.a.sourcesReady:
		return true
	default:
		return false
	}
}

// anyRunning reports whether anything of a runtime pod runs.
func anyRunning(rp *kuberuntime.RunningPod) bool {
	for _, st := range rp.Containers {
		if st == kuberuntime.StateRunning {
			return true
		}
	}
	for _, ready := range rp.Sandboxes {
		if ready {
			return true
		}
	}
	return false
}

// summaryProvider is the stats provider for the eviction manager, nil
// (signals read directly) when stats are off.
func (n *nodeStats) summaryProvider() eviction.SummaryProvider {
	if n == nil || n.provider == nil {
		return nil
	}
	return n.provider
}

// evictedNotRunning reports whether the agent evicted the pod and nothing
// of it runs (rp nil: nothing in the runtime): its volumes may go.
// Upstream's kubelet unmounts the volumes of every terminated pod; k1s
// does it for evicted pods, whose disk the eviction is for.
func (a *Agent) evictedNotRunning(uid types.UID, rp *kuberuntime.RunningPod) bool {
	st, ok := a.statuses.GetPodStatus(uid)
	if !ok || st.Phase != corev1.PodFailed || st.Reason != eviction.Reason {
		return false
	}
	return rp == nil || !anyRunning(rp)
}
