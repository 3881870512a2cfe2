package eviction

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// localStorageEviction evicts, as upstream's kubelet with local storage
// capacity isolation, every pod whose disk-backed emptyDir is over its
// sizeLimit, whose local ephemeral storage is over the sum of its
// containers' limits, or one of whose containers is over its own limit
// (writable layer and logs). Critical pods are kept.
func (m *manager) localStorageEviction(ctx context.Context, pods []*corev1.Pod, stats statsFunc) []*corev1.Pod {
	var out []*corev1.Pod
	dedicated := m.deps.DedicatedImageFs != nil && m.deps.DedicatedImageFs()
	for _, pod := range pods {
		s, ok := stats(pod)
		if !ok || IsCriticalPod(pod) {
			continue
		}
		msg := localStorageViolation(pod, s, dedicated)
		if msg == "" {
			continue
		}
		m.deps.Recorder.Event(pod, corev1.EventTypeWarning, Reason, msg)
		klog.FromContext(ctx).Info("Evicting pod over its local storage limit", "pod", klog.KObj(pod), "message", msg)
		if err := m.deps.KillPod(pod, 1, func(st *corev1.PodStatus) {
			st.Phase, st.Reason, st.Message = corev1.PodFailed, Reason, msg
		}); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to evict pod", "pod", klog.KObj(pod))
		}
		out = append(out, pod)
	}
	return out
}

// localStorageViolation is upstream's message for the first local
// storage limit pod is over, or "".
func localStorageViolation(pod *corev1.Pod, s statsapi.PodStats, dedicatedImageFs bool) string {
	used := map[string]uint64{}
	for _, v := range s.VolumeStats {
		if v.UsedBytes != nil {
			used[v.Name] = *v.UsedBytes
		}
	}
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.Medium == corev1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			continue
		}
		if u, ok := used[v.Name]; ok && over(u, *ed.SizeLimit) {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, ed.SizeLimit.String())
		}
	}
	if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[corev1.ResourceEphemeralStorage]; ok {
		if s.EphemeralStorage != nil && s.EphemeralStorage.UsedBytes != nil && over(*s.EphemeralStorage.UsedBytes, limit) {
			return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String())
		}
	}
	limits := map[string]resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if l, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok && !l.IsZero() {
			limits[c.Name] = l
		}
	}
	for _, cs := range s.Containers {
		l, ok := limits[cs.Name]
		if !ok {
			continue
		}
		// The writable layer counts where it is on the node's disk.
		u := fsUsed(cs.Logs, false)
		if !dedicatedImageFs {
			u += fsUsed(cs.Rootfs, false)
		}
		if over(u, l) {
			return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", cs.Name, l.String())
		}
	}
	return ""
}

func over(used uint64, limit resource.Quantity) bool {
	u := bytesQ(used)
	return u.Cmp(limit) > 0
}
