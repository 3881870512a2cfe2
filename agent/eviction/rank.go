package eviction

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/k1s/k1s/internal/thresholds"
)

// statsFunc finds a pod's stats in the summary.
type statsFunc func(pod *corev1.Pod) (statsapi.PodStats, bool)

func podStatsFunc(s *statsapi.Summary) statsFunc {
	byUID := map[string]statsapi.PodStats{}
	for _, p := range s.Pods {
		byUID[p.PodRef.UID] = p
	}
	return func(pod *corev1.Pod) (statsapi.PodStats, bool) {
		p, ok := byUID[string(pod.UID)]
		return p, ok
	}
}

// fsKind is a part of a pod's disk usage.
type fsKind int

const (
	fsRoot   fsKind = iota // containers' writable layers
	fsLogs                 // containers' logs
	fsVolume               // local volumes: emptyDir, hostPath
)

// cmp orders two pods: negative when p1 goes first.
type cmp func(p1, p2 *corev1.Pod) int

func orderBy(pods []*corev1.Pod, cmps ...cmp) {
	sort.SliceStable(pods, func(i, j int) bool {
		for _, c := range cmps {
			if r := c(pods[i], pods[j]); r != 0 {
				return r < 0
			}
		}
		return false
	})
}

// cmpBool puts true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// byPriority puts lower priority first.
func byPriority(p1, p2 *corev1.Pod) int {
	a, b := corev1helpers.PodPriority(p1), corev1helpers.PodPriority(p2)
	switch {
	case a == b:
		return 0
	case a < b:
		return -1
	}
	return 1
}

func request(pod *corev1.Pod, name corev1.ResourceName) resource.Quantity {
	if q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[name]; ok {
		return q
	}
	return resource.Quantity{}
}

func memoryUsage(s statsapi.PodStats) resource.Quantity {
	if s.Memory == nil || s.Memory.WorkingSetBytes == nil {
		return resource.Quantity{}
	}
	return bytesQ(*s.Memory.WorkingSetBytes)
}

// pods without stats go first, as upstream.
func withStats(stats statsFunc, p1, p2 *corev1.Pod, fn func(s1, s2 statsapi.PodStats) int) int {
	s1, ok1 := stats(p1)
	s2, ok2 := stats(p2)
	if !ok1 || !ok2 {
		return cmpBool(!ok1, !ok2)
	}
	return fn(s1, s2)
}

func exceedsMemoryRequests(stats statsFunc) cmp {
	return func(p1, p2 *corev1.Pod) int {
		return withStats(stats, p1, p2, func(s1, s2 statsapi.PodStats) int {
			u1, u2 := memoryUsage(s1), memoryUsage(s2)
			return cmpBool(u1.Cmp(request(p1, corev1.ResourceMemory)) > 0, u2.Cmp(request(p2, corev1.ResourceMemory)) > 0)
		})
	}
}

// byMemoryAboveRequest puts the pod furthest above its request first.
func byMemoryAboveRequest(stats statsFunc) cmp {
	return func(p1, p2 *corev1.Pod) int {
		return withStats(stats, p1, p2, func(s1, s2 statsapi.PodStats) int {
			u1, u2 := memoryUsage(s1), memoryUsage(s2)
			u1.Sub(request(p1, corev1.ResourceMemory))
			u2.Sub(request(p2, corev1.ResourceMemory))
			return u2.Cmp(u1)
		})
	}
}

func processes(s statsapi.PodStats) uint64 {
	if s.ProcessStats == nil || s.ProcessStats.ProcessCount == nil {
		return 0
	}
	return *s.ProcessStats.ProcessCount
}

func byProcesses(stats statsFunc) cmp {
	return func(p1, p2 *corev1.Pod) int {
		return withStats(stats, p1, p2, func(s1, s2 statsapi.PodStats) int {
			a, b := processes(s1), processes(s2)
			switch {
			case a == b:
				return 0
			case a > b:
				return -1
			}
			return 1
		})
	}
}

func fsUsed(fs *statsapi.FsStats, inodes bool) uint64 {
	if fs == nil {
		return 0
	}
	if inodes {
		if fs.InodesUsed == nil {
			return 0
		}
		return *fs.InodesUsed
	}
	if fs.UsedBytes == nil {
		return 0
	}
	return *fs.UsedBytes
}

// localVolume reports whether a volume's data lives on the node's disk.
func localVolume(v corev1.Volume) bool {
	return v.HostPath != nil || (v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory) ||
		v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// diskUsage is a pod's usage of the kinds measured, in bytes or inodes.
func diskUsage(s statsapi.PodStats, pod *corev1.Pod, kinds []fsKind, inodes bool) resource.Quantity {
	var total uint64
	has := func(k fsKind) bool {
		for _, x := range kinds {
			if x == k {
				return true
			}
		}
		return false
	}
	for _, c := range s.Containers {
		if has(fsRoot) {
			total += fsUsed(c.Rootfs, inodes)
		}
		if has(fsLogs) {
			total += fsUsed(c.Logs, inodes)
		}
	}
	if has(fsVolume) {
		local := map[string]bool{}
		for _, v := range pod.Spec.Volumes {
			if localVolume(v) {
				local[v.Name] = true
			}
		}
		for i := range s.VolumeStats {
			if local[s.VolumeStats[i].Name] {
				total += fsUsed(&s.VolumeStats[i].FsStats, inodes)
			}
		}
	}
	if inodes {
		return countQ(total)
	}
	return bytesQ(total)
}

func exceedsDiskRequests(stats statsFunc, kinds []fsKind, inodes bool) cmp {
	return func(p1, p2 *corev1.Pod) int {
		return withStats(stats, p1, p2, func(s1, s2 statsapi.PodStats) int {
			if inodes {
				// Inodes are never requested: every pod with any exceeds.
				u1, u2 := diskUsage(s1, p1, kinds, true), diskUsage(s2, p2, kinds, true)
				return cmpBool(u1.Sign() > 0, u2.Sign() > 0)
			}
			u1, u2 := diskUsage(s1, p1, kinds, false), diskUsage(s2, p2, kinds, false)
			return cmpBool(u1.Cmp(request(p1, corev1.ResourceEphemeralStorage)) > 0, u2.Cmp(request(p2, corev1.ResourceEphemeralStorage)) > 0)
		})
	}
}

func byDiskAboveRequest(stats statsFunc, kinds []fsKind, inodes bool) cmp {
	return func(p1, p2 *corev1.Pod) int {
		return withStats(stats, p1, p2, func(s1, s2 statsapi.PodStats) int {
			u1, u2 := diskUsage(s1, p1, kinds, inodes), diskUsage(s2, p2, kinds, inodes)
			u1.Sub(request(p1, corev1.ResourceEphemeralStorage))
			u2.Sub(request(p2, corev1.ResourceEphemeralStorage))
			return u2.Cmp(u1)
		})
	}
}

// rankFunc orders pods for eviction, first evicted first.
type rankFunc func(pods []*corev1.Pod, stats statsFunc)

func rankMemory(pods []*corev1.Pod, stats statsFunc) {
	orderBy(pods, exceedsMemoryRequests(stats), byPriority, byMemoryAboveRequest(stats))
}

func rankPIDs(pods []*corev1.Pod, stats statsFunc) {
	orderBy(pods, byPriority, byProcesses(stats))
}

func rankDisk(kinds []fsKind, inodes bool) rankFunc {
	return func(pods []*corev1.Pod, stats statsFunc) {
		orderBy(pods, exceedsDiskRequests(stats, kinds, inodes), byPriority, byDiskAboveRequest(stats, kinds, inodes))
	}
}

// rankFuncs are upstream's rankings: with a dedicated image filesystem,
// nodefs pressure counts logs and local volumes, imagefs pressure the
// writable layers; on one filesystem every kind counts for both.
func rankFuncs(dedicatedImageFs bool) map[thresholds.Signal]rankFunc {
	all := []fsKind{fsRoot, fsLogs, fsVolume}
	node, image := all, all
	if dedicatedImageFs {
		node, image = []fsKind{fsLogs, fsVolume}, []fsKind{fsRoot}
	}
	return map[thresholds.Signal]rankFunc{
		thresholds.MemoryAvailable:   rankMemory,
		thresholds.PIDAvailable:      rankPIDs,
		thresholds.NodeFsAvailable:   rankDisk(node, false),
		thresholds.NodeFsInodesFree:  rankDisk(node, true),
		thresholds.ImageFsAvailable:  rankDisk(image, false),
		thresholds.ImageFsInodesFree: rankDisk(image, true),
	}
}
