package agent

import (
	"context"
	"fmt"
	goruntime "runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent/cm"
	"github.com/k1s/k1s/agent/kuberuntime"
	"github.com/k1s/k1s/agent/nodestatus"
)

// newContainerManager builds the node's container manager from the
// resource flags.
func newContainerManager(cfg Config) (cm.Manager, error) {
	cmCfg, err := cfg.NodeFlags.ContainerManager()
	if err != nil {
		return nil, err
	}
	return cm.New(cmCfg, corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(nodestatus.MemoryBytes(), resource.BinarySI),
	})
}

// runContainerManager creates the QoS cgroups, then watches the kernel
// log for OOM kills until ctx is cancelled. The zero NodeFlags (tests)
// watch nothing.
func (a *Agent) runContainerManager(ctx context.Context) error {
	if err := a.cm.Start(ctx); err != nil {
		return fmt.Errorf("container manager: %w", err)
	}
	if a.cfg.NodeFlags.CgroupRoot == "" {
		return nil
	}
	root := a.cfg.NodeFlags.CgroupRoot
	if err := cm.NewOOMWatcher(root).Run(ctx, func(ev cm.OOMEvent) { a.recordOOM(ctx, ev) }); err != nil {
		// The node runs on without OOM events, as kubelet's does.
		klog.FromContext(ctx).Error(err, "OOM watcher stopped")
	}
	return nil
}

// recordOOM records an OOM kill as events: a kill for want of memory on
// the node as upstream's SystemOOM event on the Node; a kill within a
// pod's memory limit as an OOMKilling event on the pod (upstream reports
// that one only as the container's OOMKilled status reason, which k1s
// reports too).
func (a *Agent) recordOOM(ctx context.Context, ev cm.OOMEvent) {
	if ev.System {
		ref := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
		a.recorder.Eventf(ref, corev1.EventTypeWarning, "SystemOOM", "System OOM encountered, victim process: %s, pid: %d", ev.Process, ev.Pid)
		return
	}
	if ev.PodUID == "" {
		return
	}
	pod, ok := a.pods.Get(ev.PodUID)
	if !ok {
		return
	}
	container := ev.ContainerID
	if rs, err := a.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		for _, c := range rs.Containers {
			if c.ID == ev.ContainerID {
				container = c.Name
			}
		}
	}
	a.recorder.Eventf(pod, corev1.EventTypeWarning, "OOMKilling", "Memory cgroup out of memory: killed process %d (%s) of container %s", ev.Pid, ev.Process, container)
}

// ensurePodCgroup makes pod's cgroup before its sandbox.
func (a *Agent) ensurePodCgroup(ctx context.Context, pod *corev1.Pod) error {
	if err := a.cm.EnsurePod(ctx, pod, a.pods.Pods()); err != nil {
		a.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodContainer", "unable to ensure pod container exists: %v", err)
		klog.FromContext(ctx).Error(err, "Failed to create the pod cgroup")
		return err
	}
	return nil
}

// cleanupCgroups removes the cgroups of pods neither active nor in the
// runtime, and keeps the QoS classes' shares.
func (a *Agent) cleanupCgroups(ctx context.Context, active sets.Set[types.UID], running map[types.UID]*kuberuntime.RunningPod) {
	keep := active.Clone()
	for uid := range running {
		keep.Insert(uid)
	}
	if err := a.cm.Cleanup(ctx, a.pods.Pods(), keep); err != nil {
		klog.FromContext(ctx).V(2).Info("Failed to clean pod cgroups", "err", err)
	}
}
