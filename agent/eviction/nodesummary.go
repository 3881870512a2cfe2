package eviction

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// NodeSummaryConfig locates what NodeSummary reads.
type NodeSummaryConfig struct {
	// NodeName is reported in the summary.
	NodeName string
	// RootDir is the agent's directory: its filesystem is nodefs.
	RootDir string
	// ImageFsDir returns a directory on the runtime's image filesystem
	// (containerd's root); "" or an error: imagefs is not reported.
	ImageFsDir func(ctx context.Context) (string, error)
	// CgroupRoot is the cgroup filesystem mount. Default /sys/fs/cgroup.
	CgroupRoot string
	// PodCgroup is a pod's cgroup name below the hierarchy root (e.g.
	// /kubepods/besteffort/pod<uid>); nil or "": no pod memory or pids.
	PodCgroup func(pod *corev1.Pod) string
	// PodVolumeDir is the directory of a pod's emptyDir volume.
	PodVolumeDir func(pod *corev1.Pod, volume string) string
	// PodLogDir is the directory of a pod's container logs.
	PodLogDir func(pod *corev1.Pod) string
	// Pods are the pods to report.
	Pods func() []*corev1.Pod
}

// NodeSummary is a summary provider that reads the node's signals
// directly: memory from /proc/meminfo and the root memory cgroup (as
// upstream computes memory.available), nodefs and imagefs from statfs,
// pids from the kernel, and pods' memory and pids from their cgroups,
// their emptyDir and log usage from the disk. It stands in for the
// cAdvisor-based stats provider where that is not wired.
type NodeSummary struct {
	cfg   NodeSummaryConfig
	clock clock.Clock
}

// NewNodeSummary returns a NodeSummary.
func NewNodeSummary(cfg NodeSummaryConfig, clk clock.Clock) *NodeSummary {
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/sys/fs/cgroup"
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &NodeSummary{cfg: cfg, clock: clk}
}

// Get builds the summary now.
func (n *NodeSummary) Get(ctx context.Context, _ bool) (*statsapi.Summary, error) {
	now := metav1.NewTime(n.clock.Now())
	s := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: n.cfg.NodeName, StartTime: now}}
	s.Node.Memory = n.nodeMemory(now)
	if fs := statFs(n.cfg.RootDir, now); fs != nil {
		s.Node.Fs = fs
	}
	if n.cfg.ImageFsDir != nil {
		if dir, err := n.cfg.ImageFsDir(ctx); err == nil && dir != "" {
			if fs := statFs(dir, now); fs != nil {
				s.Node.Runtime = &statsapi.RuntimeStats{ImageFs: fs}
			}
		}
	}
	s.Node.Rlimit = rlimit(now)
	if n.cfg.Pods != nil {
		for _, pod := range n.cfg.Pods() {
			s.Pods = append(s.Pods, n.podStats(pod, now))
		}
	}
	return s, nil
}

func (n *NodeSummary) v2() bool {
	_, err := os.Stat(filepath.Join(n.cfg.CgroupRoot, "cgroup.controllers"))
	return err == nil
}

// nodeMemory is upstream's: working set = usage − inactive file of the
// root memory cgroup, available = capacity − working set.
func (n *NodeSummary) nodeMemory(now metav1.Time) *statsapi.MemoryStats {
	info := readKV(filepath.Join("/proc", "meminfo"))
	total := info["MemTotal"] * 1024
	if total == 0 {
		return nil
	}
	var usage, inactive uint64
	if n.v2() {
		usage = total - info["MemFree"]*1024
		inactive = info["Inactive(file)"] * 1024
	} else {
		usage = readUint(filepath.Join(n.cfg.CgroupRoot, "memory", "memory.usage_in_bytes"))
		inactive = readKV(filepath.Join(n.cfg.CgroupRoot, "memory", "memory.stat"))["total_inactive_file"]
	}
	ws := workingSet(usage, inactive)
	avail := uint64(0)
	if total > ws {
		avail = total - ws
	}
	return &statsapi.MemoryStats{Time: now, UsageBytes: &usage, WorkingSetBytes: &ws, AvailableBytes: &avail}
}

func workingSet(usage, inactive uint64) uint64 {
	if inactive > usage {
		return 0
	}
	return usage - inactive
}

func statFs(dir string, now metav1.Time) *statsapi.FsStats {
	if dir == "" {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil
	}
	bs := uint64(st.Bsize)
	capacity, avail := st.Blocks*bs, st.Bavail*bs
	used := (st.Blocks - st.Bfree) * bs
	inodes, free := st.Files, st.Ffree
	iused := inodes - free
	return &statsapi.FsStats{Time: now, CapacityBytes: &capacity, AvailableBytes: &avail, UsedBytes: &used,
		Inodes: &inodes, InodesFree: &free, InodesUsed: &iused}
}

// rlimit is upstream's: the lower of pid_max and threads-max, and the
// number of tasks the kernel runs.
func rlimit(now metav1.Time) *statsapi.RlimitStats {
	maxPID := int64(readUint("/proc/sys/kernel/pid_max"))
	if t := int64(readUint("/proc/sys/kernel/threads-max")); t > 0 && t < maxPID {
		maxPID = t
	}
	var info syscall.Sysinfo_t
	if maxPID == 0 || syscall.Sysinfo(&info) != nil {
		return nil
	}
	procs := int64(info.Procs)
	return &statsapi.RlimitStats{Time: now, MaxPID: &maxPID, NumOfRunningProcesses: &procs}
}

func (n *NodeSummary) podStats(pod *corev1.Pod, now metav1.Time) statsapi.PodStats {
	ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}, StartTime: now}
	if n.cfg.PodCgroup != nil {
		if cg := n.cfg.PodCgroup(pod); cg != "" {
			var usage, inactive uint64
			var ok bool
			if n.v2() {
				dir := filepath.Join(n.cfg.CgroupRoot, cg)
				usage, ok = readUintOK(filepath.Join(dir, "memory.current"))
				inactive = readKV(filepath.Join(dir, "memory.stat"))["inactive_file"]
				if p, okp := readUintOK(filepath.Join(dir, "pids.current")); okp {
					ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &p}
				}
			} else {
				dir := filepath.Join(n.cfg.CgroupRoot, "memory", cg)
				usage, ok = readUintOK(filepath.Join(dir, "memory.usage_in_bytes"))
				inactive = readKV(filepath.Join(dir, "memory.stat"))["total_inactive_file"]
				if p, okp := readUintOK(filepath.Join(n.cfg.CgroupRoot, "pids", cg, "pids.current")); okp {
					ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &p}
				}
			}
			if ok {
				ws := workingSet(usage, inactive)
				ps.Memory = &statsapi.MemoryStats{Time: now, UsageBytes: &usage, WorkingSetBytes: &ws}
			}
		}
	}
	var total uint64
	if n.cfg.PodVolumeDir != nil {
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory {
				continue
			}
			b, i := du(n.cfg.PodVolumeDir(pod, v.Name))
			total += b
			ps.VolumeStats = append(ps.VolumeStats, statsapi.VolumeStats{Name: v.Name, FsStats: statsapi.FsStats{Time: now, UsedBytes: &b, InodesUsed: &i}})
		}
	}
	if n.cfg.PodLogDir != nil {
		dir := n.cfg.PodLogDir(pod)
		for _, c := range pod.Spec.Containers {
			b, i := du(filepath.Join(dir, c.Name))
			total += b
			zero := uint64(0)
			ps.Containers = append(ps.Containers, statsapi.ContainerStats{Name: c.Name, StartTime: now,
				Logs:   &statsapi.FsStats{Time: now, UsedBytes: &b, InodesUsed: &i},
				Rootfs: &statsapi.FsStats{Time: now, UsedBytes: &zero, InodesUsed: &zero}})
		}
	}
	ps.EphemeralStorage = &statsapi.FsStats{Time: now, UsedBytes: &total}
	return ps
}

// du is the disk space (allocated blocks) and inodes used below dir.
func du(dir string) (bytes, inodes uint64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		inodes++
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			bytes += uint64(st.Blocks) * 512
		}
		return nil
	})
	return bytes, inodes
}

func readUintOK(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

func readUint(path string) uint64 { v, _ := readUintOK(path); return v }

// readKV reads "key value" or "key: value kB" lines.
func readKV(path string) map[string]uint64 {
	out := map[string]uint64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			out[strings.TrimSuffix(fields[0], ":")] = v
		}
	}
	return out
}
