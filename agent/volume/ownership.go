package volume

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// applyFSGroup gives a volume to the pod's fsGroup: every entry's group
// becomes gid, files gain group read (and write unless readOnly),
// directories also group search and the setgid bit so new files inherit
// the group.
func applyFSGroup(dir string, gid int64, readOnly bool) error {
	mask := fs.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			return fmt.Errorf("set fsGroup on %s: %w", p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if info.IsDir() {
			m |= fs.ModeSetgid | 0o110
		}
		mode := info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) | m
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("set fsGroup mode on %s: %w", p, err)
		}
		return nil
	})
}

// tmpfsSize is the size of a pod's tmpfs: the smallest of the node's
// allocatable memory, the pod's memory limit and the volume's sizeLimit
// among those known; 0 (the kernel's default) when none is.
func tmpfsSize(pod *corev1.Pod, sizeLimit *resource.Quantity, allocatable corev1.ResourceList) int64 {
	var size int64
	consider := func(v int64) {
		if v > 0 && (size == 0 || v < size) {
			size = v
		}
	}
	if q, ok := allocatable[corev1.ResourceMemory]; ok {
		consider(q.Value())
	}
	consider(podMemoryLimit(pod))
	if sizeLimit != nil {
		consider(sizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the memory limit of the whole pod, 0 when some
// container has none: the pod-level limit when set, else the larger of the
// app containers' (plus sidecars') sum and the largest init container's
// (plus the sidecars started before it), plus the pod overhead.
func podMemoryLimit(pod *corev1.Pod) int64 {
	var overhead int64
	if q, ok := pod.Spec.Overhead[corev1.ResourceMemory]; ok {
		overhead = q.Value()
	}
	if r := pod.Spec.Resources; r != nil {
		if q, ok := r.Limits[corev1.ResourceMemory]; ok && !q.IsZero() {
			return q.Value() + overhead
		}
	}
	limit := func(c *corev1.Container) (int64, bool) {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0, false
		}
		return q.Value(), true
	}
	var apps int64
	for i := range pod.Spec.Containers {
		v, ok := limit(&pod.Spec.Containers[i])
		if !ok {
			return 0
		}
		apps += v
	}
	var sidecars, initMax int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		v, ok := limit(c)
		if !ok {
			return 0
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += v
			continue
		}
		initMax = max(initMax, v+sidecars)
	}
	return max(apps+sidecars, initMax) + overhead
}
