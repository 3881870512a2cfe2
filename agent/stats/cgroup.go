package stats

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cadvisor/lib/container"
	"github.com/google/cadvisor/lib/container/libcontainer"
	info "github.com/google/cadvisor/lib/model"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/fscommon"
)

// cgroupRef names one cgroup: its path in the hierarchy ("/" for the
// root, e.g. "/kubepods/burstable/pod<uid>") and, for cgroup v1, the
// directory of each controller the provider reads.
type cgroupRef struct {
	// name is the cgroup's path as cAdvisor names containers.
	name string
	// dirs maps a v1 controller (cpu, cpuacct, memory, pids) to the
	// cgroup's directory under it; on v2 the key "" is the one directory.
	dirs map[string]string
}

// parent returns the cgroup one level up.
func (r cgroupRef) parent() cgroupRef {
	p := cgroupRef{name: path.Dir(r.name), dirs: map[string]string{}}
	for k, d := range r.dirs {
		p.dirs[k] = filepath.Dir(d)
	}
	return p
}

// exists says whether the cgroup's memory (v1) or unified (v2) directory
// is there.
func (r cgroupRef) exists() bool {
	for _, k := range []string{"memory", ""} {
		if d, ok := r.dirs[k]; ok {
			_, err := os.Stat(d)
			return err == nil
		}
	}
	return false
}

// cgroupReader reads cgroups. The real one reads the files under
// /sys/fs/cgroup; tests fake it. Safe for concurrent use.
type cgroupReader interface {
	// root is the root cgroup.
	root() cgroupRef
	// named is the cgroup at the given hierarchy path.
	named(name string) cgroupRef
	// ofPid is the cgroup process pid runs in.
	ofPid(pid int) (cgroupRef, error)
	// read samples the cgroup's CPU and memory; with netPid > 0 also the
	// interfaces of that process's network namespace.
	read(ref cgroupRef, netPid int) (*info.ContainerStats, error)
	// processes counts the cgroup's tasks (pids.current); ok false when
	// the pids controller is not there.
	processes(ref cgroupRef) (uint64, bool)
}

// hostCgroups is the real cgroupReader: the files under the cgroup
// mounts (found with cAdvisor's helper), read with opencontainers/cgroups.
type hostCgroups struct {
	v2 bool
	// mounts maps each v1 controller read to its mount point; v2: "".
	mounts map[string]string
}

// metricsRead are the cAdvisor metric kinds whose controllers are read
// (cpu and cpuacct, memory, pids).
var metricsRead = container.MetricSet{
	container.CpuUsageMetrics:    struct{}{},
	container.MemoryUsageMetrics: struct{}{},
	container.ProcessMetrics:     struct{}{}, // selects the pids controller
}

var (
	hostOnce sync.Once
	hostCG   *hostCgroups
	hostErr  error
)

// newHostCgroups finds the cgroup mounts once per process.
func newHostCgroups() (*hostCgroups, error) {
	hostOnce.Do(func() {
		if cgroups.IsCgroup2UnifiedMode() {
			hostCG = &hostCgroups{v2: true, mounts: map[string]string{"": fs2.UnifiedMountpoint}}
			return
		}
		m, err := libcontainer.GetCgroupSubsystems(metricsRead)
		if err != nil {
			hostErr = fmt.Errorf("find the cgroup mounts: %w", err)
			return
		}
		keep := map[string]string{}
		for _, c := range []string{"cpu", "cpuacct", "memory", "pids"} {
			if mp, ok := m[c]; ok {
				keep[c] = mp
			}
		}
		if keep["memory"] == "" || keep["cpuacct"] == "" {
			hostErr = errors.New("the cgroup v1 memory and cpuacct controllers are not mounted")
			return
		}
		hostCG = &hostCgroups{mounts: keep}
	})
	return hostCG, hostErr
}

func (h *hostCgroups) root() cgroupRef { return h.named("/") }

func (h *hostCgroups) named(name string) cgroupRef {
	name = path.Clean("/" + name)
	ref := cgroupRef{name: name, dirs: map[string]string{}}
	for c, mp := range h.mounts {
		ref.dirs[c] = filepath.Join(mp, name)
	}
	return ref
}

func (h *hostCgroups) ofPid(pid int) (cgroupRef, error) {
	paths, err := cgroups.ParseCgroupFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cgroupRef{}, fmt.Errorf("cgroup of process %d: %w", pid, err)
	}
	ref := cgroupRef{dirs: map[string]string{}}
	for c, mp := range h.mounts {
		p, ok := paths[c]
		if !ok {
			continue
		}
		ref.dirs[c] = filepath.Join(mp, p)
		if c == "memory" || c == "" {
			ref.name = path.Clean("/" + p)
		}
	}
	if ref.name == "" {
		return cgroupRef{}, fmt.Errorf("process %d is in no memory cgroup", pid)
	}
	return ref, nil
}

// read samples only what the summary needs — three files a cgroup
// (cpuacct.usage, memory.usage_in_bytes and memory.stat on v1; cpu.stat,
// memory.current and memory.stat on v2) — into cAdvisor's model, as
// cAdvisor's libcontainer handler would fill it (working set = usage −
// inactive file). The handler reads every file of every controller,
// ~7x the time and allocations (BenchmarkCgroupRead).
func (h *hostCgroups) read(ref cgroupRef, netPid int) (*info.ContainerStats, error) {
	st := &info.ContainerStats{Timestamp: time.Now(), Cpu: &info.CpuStats{}, Memory: &info.MemoryStats{}}
	var err error
	if h.v2 {
		err = readV2(ref.dirs[""], st)
	} else {
		err = readV1(ref.dirs["cpuacct"], ref.dirs["memory"], st)
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", ref.name, err)
	}
	if netPid > 0 {
		ifaces, err := readNetDev(fmt.Sprintf("/proc/%d/net/dev", netPid))
		if err == nil {
			st.Network = &info.NetworkStats{Interfaces: ifaces}
			if len(ifaces) > 0 {
				st.Network.InterfaceStats = ifaces[0]
			}
		}
	}
	return st, nil
}

func readV1(cpuDir, memDir string, st *info.ContainerStats) error {
	var err error
	if st.Cpu.Usage.Total, err = fscommon.GetCgroupParamUint(cpuDir, "cpuacct.usage"); err != nil {
		return err
	}
	if st.Memory.Usage, err = fscommon.GetCgroupParamUint(memDir, "memory.usage_in_bytes"); err != nil {
		return err
	}
	return readMemoryStat(memDir, st, "total_")
}

func readV2(dir string, st *info.ContainerStats) error {
	usec, err := fscommon.GetValueByKey(dir, "cpu.stat", "usage_usec")
	if err != nil {
		return err
	}
	st.Cpu.Usage.Total = usec * 1000
	if st.Memory.Usage, err = fscommon.GetCgroupParamUint(dir, "memory.current"); err != nil {
		if dir != fs2.UnifiedMountpoint {
			return err
		}
		// The root has no memory.current: the machine's use.
		st.Memory.Usage = 0
	}
	return readMemoryStat(dir, st, "")
}

// readMemoryStat fills the memory figures from memory.stat; prefix is
// "total_" on v1 (the hierarchical counters) and "" on v2.
func readMemoryStat(dir string, st *info.ContainerStats, prefix string) error {
	b, err := cgroups.ReadFile(dir, "memory.stat")
	if err != nil {
		return err
	}
	m := st.Memory
	rss, cache, mapped, swap := "rss", "cache", "mapped_file", "swap"
	if prefix == "" {
		rss, cache, mapped, swap = "anon", "file", "file_mapped", "swap" // v2 names
	}
	for _, line := range strings.Split(b, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			continue
		}
		// v1: the hierarchical total_ counters, but the cgroup's own
		// page faults, as cAdvisor reads them.
		if prefix != "" {
			switch {
			case k == "pgfault" || k == "pgmajfault":
			case strings.HasPrefix(k, prefix) && k != prefix+"pgfault" && k != prefix+"pgmajfault":
				k = strings.TrimPrefix(k, prefix)
			default:
				continue
			}
		}
		switch k {
		case rss:
			m.RSS = n
		case cache:
			m.Cache = n
		case mapped:
			m.MappedFile = n
		case swap:
			m.Swap = n
		case "inactive_file":
			m.TotalInactiveFile = n
		case "active_file":
			m.TotalActiveFile = n
		case "pgfault":
			m.ContainerData.Pgfault, m.HierarchicalData.Pgfault = n, n
		case "pgmajfault":
			m.ContainerData.Pgmajfault, m.HierarchicalData.Pgmajfault = n, n
		}
	}
	if prefix == "" && m.Usage == 0 {
		m.Usage = m.RSS + m.Cache
	}
	m.WorkingSet = m.Usage
	if m.TotalInactiveFile < m.WorkingSet {
		m.WorkingSet -= m.TotalInactiveFile
	} else {
		m.WorkingSet = 0
	}
	return nil
}

// readNetDev reads a network namespace's interfaces from
// /proc/<pid>/net/dev, leaving out loopback and host-side veth, bridge
// and docker devices as cAdvisor does.
func readNetDev(path string) ([]info.InterfaceStats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []info.InterfaceStats
	for i, line := range strings.Split(string(b), "\n") {
		if i < 2 {
			continue // the two header lines
		}
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if name == "lo" || strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "docker") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			continue
		}
		u := func(j int) uint64 { n, _ := strconv.ParseUint(f[j], 10, 64); return n }
		out = append(out, info.InterfaceStats{
			Name:    name,
			RxBytes: u(0), RxPackets: u(1), RxErrors: u(2), RxDropped: u(3),
			TxBytes: u(8), TxPackets: u(9), TxErrors: u(10), TxDropped: u(11),
		})
	}
	return out, nil
}

func (h *hostCgroups) processes(ref cgroupRef) (uint64, bool) {
	d, ok := ref.dirs["pids"]
	if h.v2 {
		d, ok = ref.dirs[""]
	}
	if !ok {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(d, "pids.current"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
