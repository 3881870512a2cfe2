package stats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	info "github.com/google/cadvisor/lib/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// Deps are the provider's handles.
type Deps struct {
	// Runtime is the CRI runtime service. Required.
	Runtime Runtime
	// Images reports the image filesystem. Required.
	Images ImageFs
	// Clock is injected for tests. Default the real clock.
	Clock clock.WithTicker
	// PVCVolumes lists, by pod UID, the running pods' claim-backed local
	// volumes, walked with the pods' other volumes. nil: none reported.
	PVCVolumes func(ctx context.Context) map[string][]PVCVolume
}

// Provider builds the node's stats summary. Get and the collectors are
// safe for concurrent use; Run keeps the samples fresh.
type Provider struct {
	cfg     Config
	runtime Runtime
	images  ImageFs
	clock   clock.WithTicker
	pvcs    func(ctx context.Context) map[string][]PVCVolume
	cg      cgroupReader
	host    hostInfo
	// cgExists says whether a cgroup is there (tests replace it).
	cgExists func(cgroupRef) bool

	// collecting serializes collections.
	collecting sync.Mutex

	mu      sync.Mutex
	last    *statsapi.Summary
	lastAt  time.Time
	samples []containerSample // the last collection's, for /metrics/cadvisor
	cpuPrev map[string]cpuSample
	procs   map[string]procInfo // by container or sandbox ID
	volumes map[string][]statsapi.VolumeStats
}

// hostInfo reads what is not a cgroup: filesystems, process limits,
// machine memory. Faked in tests.
type hostInfo interface {
	statfs(dir string) (fsInfo, error)
	du(dir string) (bytes, inodes uint64, err error)
	rlimit() (maxPID, curProcs int64, err error)
	memoryCapacity() uint64
	numCores() int
	bootTime() time.Time
	selfPid() int
}

// cpuSample is a cgroup's cumulative CPU time at a time.
type cpuSample struct {
	at    time.Time
	usage uint64
	// seen is when the cgroup was last read; samples of cgroups not read
	// by a collection are forgotten.
	seen time.Time
	// rate is the last computed usageNanoCores, kept when two collections
	// come too close together to compute a new one.
	rate *uint64
}

// procInfo is what the runtime's verbose status says of a container or
// sandbox, read once per ID.
type procInfo struct {
	pid     int
	started time.Time
	logPath string
	image   string
	// cgroup is the process's cgroup once looked up.
	cgroup *cgroupRef
}

// containerSample is one container's raw sample with what names it, for
// cAdvisor's collector.
type containerSample struct {
	ref       cgroupRef
	id        string
	image     string
	name      string // container name; "" for a pod or node cgroup
	pod       statsapi.PodReference
	started   time.Time
	stats     *info.ContainerStats
	isSandbox bool
}

// New validates cfg; it starts nothing.
func New(cfg Config, deps Deps) (*Provider, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Runtime == nil || deps.Images == nil {
		return nil, errors.New("stats: the CRI runtime and image services are required")
	}
	cg, err := newHostCgroups()
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return newProvider(cfg, deps, cg, realHost{}), nil
}

func newProvider(cfg Config, deps Deps, cg cgroupReader, host hostInfo) *Provider {
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	return &Provider{
		cfg:      cfg,
		runtime:  deps.Runtime,
		images:   deps.Images,
		clock:    deps.Clock,
		cg:       cg,
		host:     host,
		cgExists: cgroupRef.exists,
		cpuPrev:  map[string]cpuSample{},
		procs:    map[string]procInfo{},
		volumes:  map[string][]statsapi.VolumeStats{},
	}
}

// Run samples usage every housekeeping interval and walks volumes every
// volume-stats aggregation period until ctx ends. It returns nil.
func (p *Provider) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("stats")
	ctx = klog.NewContext(ctx, logger)
	var volTick <-chan time.Time
	if p.cfg.VolumeStatsAggPeriod > 0 {
		t := p.clock.NewTicker(p.cfg.VolumeStatsAggPeriod)
		defer t.Stop()
		volTick = t.C()
		p.walkVolumes(ctx)
	}
	tick := p.clock.NewTicker(p.cfg.HousekeepingInterval)
	defer tick.Stop()
	for {
		if _, err := p.collect(ctx); err != nil {
			logger.V(2).Info("Stats collection failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		case <-volTick:
			p.walkVolumes(ctx)
		}
	}
}

// Get returns the node's summary: the last collection's, or a fresh one
// when updateStats is set or the last is older than the housekeeping
// interval. The summary is shared: callers must not modify it.
func (p *Provider) Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error) {
	p.mu.Lock()
	last, at := p.last, p.lastAt
	p.mu.Unlock()
	if !updateStats && last != nil && p.clock.Since(at) <= p.cfg.HousekeepingInterval+p.cfg.HousekeepingInterval/2 {
		return last, nil
	}
	return p.collect(ctx)
}

// GetCPUAndMemoryStats returns the summary with only CPU and memory (and
// the references that name them), as the kubelet's
// ?only_cpu_and_memory=true and /metrics/resource serve.
func (p *Provider) GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error) {
	s, err := p.Get(ctx, false)
	if err != nil {
		return nil, err
	}
	return CPUAndMemoryOnly(s), nil
}

// CPUAndMemoryOnly copies s keeping CPU and memory only.
func CPUAndMemoryOnly(s *statsapi.Summary) *statsapi.Summary {
	out := &statsapi.Summary{Node: statsapi.NodeStats{
		NodeName: s.Node.NodeName, StartTime: s.Node.StartTime, CPU: s.Node.CPU, Memory: s.Node.Memory, Swap: s.Node.Swap,
	}}
	for _, c := range s.Node.SystemContainers {
		out.Node.SystemContainers = append(out.Node.SystemContainers, statsapi.ContainerStats{
			Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap,
		})
	}
	out.Pods = make([]statsapi.PodStats, 0, len(s.Pods))
	for _, ps := range s.Pods {
		cp := statsapi.PodStats{PodRef: ps.PodRef, StartTime: ps.StartTime, CPU: ps.CPU, Memory: ps.Memory, Swap: ps.Swap}
		cp.Containers = make([]statsapi.ContainerStats, 0, len(ps.Containers))
		for _, c := range ps.Containers {
			cp.Containers = append(cp.Containers, statsapi.ContainerStats{
				Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap,
			})
		}
		out.Pods = append(out.Pods, cp)
	}
	return out
}

// collect samples everything once.
func (p *Provider) collect(ctx context.Context) (*statsapi.Summary, error) {
	p.collecting.Lock()
	defer p.collecting.Unlock()
	logger := klog.FromContext(ctx)

	sandboxes, err := p.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	containers, err := p.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	layers := map[string]*runtimeapi.ContainerStats{}
	if cs, err := p.runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{}); err != nil {
		logger.V(4).Info("Container filesystem stats unavailable", "err", err)
	} else {
		for _, c := range cs {
			if c.GetAttributes() != nil {
				layers[c.Attributes.Id] = c
			}
		}
	}

	now := p.clock.Now()
	var samples []containerSample
	summary := &statsapi.Summary{}
	nodeFs, imageFs := p.nodeFs(now), p.imageFs(ctx, now)
	node, err := p.nodeStats(now, nodeFs, imageFs, &samples)
	if err != nil {
		return nil, err
	}
	summary.Node = node

	byPod := map[string][]*runtimeapi.Container{}
	for _, c := range containers {
		byPod[c.PodSandboxId] = append(byPod[c.PodSandboxId], c)
	}
	seen := map[string]bool{}
	for _, sb := range sandboxes {
		ps, ok := p.podStats(ctx, now, sb, byPod[sb.Id], layers, nodeFs, imageFs, &samples, seen)
		if ok {
			summary.Pods = append(summary.Pods, ps)
		}
	}
	if summary.Pods == nil {
		summary.Pods = []statsapi.PodStats{}
	}

	p.mu.Lock()
	// Forget what is gone: processes of removed containers, CPU samples
	// of cgroups not read this time.
	for id := range p.procs {
		if !seen[id] {
			delete(p.procs, id)
		}
	}
	for k, s := range p.cpuPrev {
		if s.seen.Before(now) {
			delete(p.cpuPrev, k)
		}
	}
	p.last, p.lastAt, p.samples = summary, now, samples
	p.mu.Unlock()
	return summary, nil
}

// nodeStats samples the root cgroup, the host's network, process limits
// and the system containers.
func (p *Provider) nodeStats(now time.Time, nodeFs, imageFs *statsapi.FsStats, samples *[]containerSample) (statsapi.NodeStats, error) {
	root := p.cg.root()
	st, err := p.cg.read(root, p.host.selfPid())
	if err != nil {
		return statsapi.NodeStats{}, fmt.Errorf("node stats: %w", err)
	}
	capacity := p.host.memoryCapacity()
	node := statsapi.NodeStats{
		NodeName:  p.cfg.NodeName,
		StartTime: metav1.NewTime(p.host.bootTime()),
		CPU:       p.cpuStats(root.name, now, st),
		Memory:    memoryStats(now, st, capacity),
		Network:   networkStats(now, st),
		Fs:        nodeFs,
		Runtime:   &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs},
	}
	*samples = append(*samples, containerSample{ref: root, stats: st, started: p.host.bootTime()})
	if maxPID, cur, err := p.host.rlimit(); err == nil {
		node.Rlimit = &statsapi.RlimitStats{Time: metav1.NewTime(now), MaxPID: &maxPID, NumOfRunningProcesses: &cur}
	}

	if self, err := p.cg.ofPid(p.host.selfPid()); err == nil {
		if s, err := p.cg.read(self, 0); err == nil {
			agent := statsapi.ContainerStats{
				Name:      statsapi.SystemContainerKubelet,
				StartTime: metav1.NewTime(p.host.bootTime()),
				CPU:       p.cpuStats(self.name, now, s),
				Memory:    memoryStats(now, s, capacity),
			}
			node.SystemContainers = append(node.SystemContainers, agent)
			if p.cfg.EmbeddedRuntime {
				rt := agent
				rt.Name = statsapi.SystemContainerRuntime
				node.SystemContainers = append(node.SystemContainers, rt)
			}
		}
	}
	pods := p.cg.named(path.Join(p.cfg.CgroupRoot, "kubepods"))
	if p.cgExists(pods) {
		if s, err := p.cg.read(pods, 0); err == nil {
			node.SystemContainers = append(node.SystemContainers, statsapi.ContainerStats{
				Name:      statsapi.SystemContainerPods,
				StartTime: metav1.NewTime(p.host.bootTime()),
				CPU:       p.cpuStats(pods.name, now, s),
				Memory:    memoryStats(now, s, capacity),
			})
		}
	}
	return node, nil
}

// podStats samples one pod: its cgroup (the sandbox's parent when the
// pod has a pod-level cgroup, else the sum of its containers), the
// network of its sandbox, its containers, volumes and ephemeral storage.
func (p *Provider) podStats(ctx context.Context, now time.Time, sb *runtimeapi.PodSandbox, containers []*runtimeapi.Container,
	layers map[string]*runtimeapi.ContainerStats, nodeFs, imageFs *statsapi.FsStats, samples *[]containerSample, seen map[string]bool) (statsapi.PodStats, bool) {
	logger := klog.FromContext(ctx)
	md := sb.GetMetadata()
	if md == nil {
		return statsapi.PodStats{}, false
	}
	ref := statsapi.PodReference{Name: md.Name, Namespace: md.Namespace, UID: md.Uid}
	ps := statsapi.PodStats{PodRef: ref, StartTime: metav1.NewTime(time.Unix(0, sb.CreatedAt)), Containers: []statsapi.ContainerStats{}}
	seen[sb.Id] = true
	capacity := p.host.memoryCapacity()

	sbProc, err := p.proc(ctx, sb.Id, true)
	var podCG *cgroupRef
	if err != nil {
		logger.V(4).Info("Sandbox process unknown", "pod", ref.Namespace+"/"+ref.Name, "err", err)
	} else if sbRef, err := p.cgroupOf(sb.Id, sbProc); err == nil {
		if parent := sbRef.parent(); isPodCgroup(path.Base(parent.name), md.Uid) {
			podCG = &parent
		}
		// The sandbox's process is in the pod's network namespace.
		if st, err := p.cg.read(sbRef, sbProc.pid); err == nil {
			ps.Network = networkStats(now, st)
			*samples = append(*samples, containerSample{ref: sbRef, id: sb.Id, pod: ref, started: ps.StartTime.Time, stats: st, isSandbox: true, image: "pause"})
		}
	}

	var sumCPU, sumMem, sumWS, sumRSS, sumFaults, sumMajor uint64
	var sumOK bool
	var ephUsed, ephInodes uint64
	for _, c := range containers {
		seen[c.Id] = true
		pi, err := p.proc(ctx, c.Id, false)
		if err != nil {
			logger.V(4).Info("Container process unknown", "containerID", c.Id, "err", err)
			continue
		}
		cref, err := p.cgroupOf(c.Id, pi)
		if err != nil {
			continue
		}
		st, err := p.cg.read(cref, 0)
		if err != nil {
			logger.V(4).Info("Container cgroup unreadable", "containerID", c.Id, "err", err)
			continue
		}
		name := c.GetMetadata().GetName()
		cs := statsapi.ContainerStats{
			Name:      name,
			StartTime: metav1.NewTime(pi.started),
			CPU:       p.cpuStats(cref.name, now, st),
			Memory:    memoryStats(now, st, capacity),
		}
		if l := layers[c.Id]; l != nil && l.WritableLayer != nil {
			cs.Rootfs = layerFs(now, l.WritableLayer, imageFs)
			ephUsed += value(cs.Rootfs.UsedBytes)
			ephInodes += value(cs.Rootfs.InodesUsed)
		}
		if pi.logPath != "" {
			if b, n, err := p.host.du(path.Dir(pi.logPath)); err == nil {
				cs.Logs = withUsage(nodeFs, now, b, n)
				ephUsed += b
				ephInodes += n
			}
		}
		ps.Containers = append(ps.Containers, cs)
		*samples = append(*samples, containerSample{ref: cref, id: c.Id, image: pi.image, name: name, pod: ref, started: pi.started, stats: st})
		sumOK = true
		sumCPU += st.Cpu.Usage.Total
		sumMem += st.Memory.Usage
		sumWS += st.Memory.WorkingSet
		sumRSS += st.Memory.RSS
		sumFaults += st.Memory.ContainerData.Pgfault
		sumMajor += st.Memory.ContainerData.Pgmajfault
	}

	if podCG != nil && p.cgExists(*podCG) {
		if st, err := p.cg.read(*podCG, 0); err == nil {
			ps.CPU = p.cpuStats(podCG.name, now, st)
			ps.Memory = memoryStats(now, st, capacity)
			if n, ok := p.cg.processes(*podCG); ok {
				ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &n}
			}
		}
	}
	if ps.CPU == nil && sumOK {
		// No pod-level cgroup (pods started before k1s had one): the
		// containers' sum.
		sum := &info.ContainerStats{Cpu: &info.CpuStats{}, Memory: &info.MemoryStats{}}
		sum.Cpu.Usage.Total = sumCPU
		sum.Memory.Usage, sum.Memory.WorkingSet, sum.Memory.RSS = sumMem, sumWS, sumRSS
		sum.Memory.ContainerData.Pgfault, sum.Memory.ContainerData.Pgmajfault = sumFaults, sumMajor
		ps.CPU = p.cpuStats("pod:"+md.Uid, now, sum)
		ps.Memory = memoryStats(now, sum, capacity)
	}

	p.mu.Lock()
	vols := p.volumes[md.Uid]
	p.mu.Unlock()
	for _, v := range vols {
		ps.VolumeStats = append(ps.VolumeStats, v)
		if v.PVCRef == nil {
			ephUsed += value(v.UsedBytes)
			ephInodes += value(v.InodesUsed)
		}
	}
	ps.EphemeralStorage = withUsage(nodeFs, now, ephUsed, ephInodes)
	return ps, true
}

// cgroupOf returns (and remembers with the process) the cgroup of a
// container or sandbox: it does not move while the process lives.
func (p *Provider) cgroupOf(id string, pi procInfo) (cgroupRef, error) {
	if pi.cgroup != nil {
		return *pi.cgroup, nil
	}
	ref, err := p.cg.ofPid(pi.pid)
	if err != nil {
		return cgroupRef{}, err
	}
	p.mu.Lock()
	if cur, ok := p.procs[id]; ok && cur.pid == pi.pid {
		cur.cgroup = &ref
		p.procs[id] = cur
	}
	p.mu.Unlock()
	return ref, nil
}

// isPodCgroup says whether a cgroup's base name is pod uid's:
// "pod<uid>" (cgroupfs driver) or "…-pod<uid with _>.slice" (systemd).
func isPodCgroup(base, uid string) bool {
	return base == "pod"+uid || strings.HasSuffix(base, "pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
}

// proc returns (and remembers) the process of a container or sandbox,
// from the runtime's verbose status.
func (p *Provider) proc(ctx context.Context, id string, sandbox bool) (procInfo, error) {
	p.mu.Lock()
	pi, ok := p.procs[id]
	p.mu.Unlock()
	if ok {
		return pi, nil
	}
	var raw map[string]string
	if sandbox {
		st, err := p.runtime.PodSandboxStatus(ctx, id, true)
		if err != nil {
			return procInfo{}, err
		}
		raw = st.GetInfo()
		pi.started = time.Unix(0, st.GetStatus().GetCreatedAt())
	} else {
		st, err := p.runtime.ContainerStatus(ctx, id, true)
		if err != nil {
			return procInfo{}, err
		}
		raw = st.GetInfo()
		s := st.GetStatus()
		pi.started = time.Unix(0, s.GetStartedAt())
		pi.logPath = s.GetLogPath()
		pi.image = s.GetImage().GetImage()
		if pi.image == "" {
			pi.image = s.GetImageRef()
		}
	}
	var verbose struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(raw["info"]), &verbose); err != nil {
		return procInfo{}, fmt.Errorf("runtime's verbose status of %s: %w", id, err)
	}
	if verbose.Pid <= 0 {
		return procInfo{}, fmt.Errorf("runtime reports no process for %s", id)
	}
	pi.pid = verbose.Pid
	p.mu.Lock()
	p.procs[id] = pi
	p.mu.Unlock()
	return pi, nil
}

// minRateWindow is the shortest interval a CPU rate is computed over;
// closer samples keep the previous rate.
const minRateWindow = time.Second

// cpuStats converts a sample's CPU and computes usageNanoCores from the
// cgroup's previous sample.
func (p *Provider) cpuStats(key string, now time.Time, st *info.ContainerStats) *statsapi.CPUStats {
	if st.Cpu == nil {
		return nil
	}
	total := st.Cpu.Usage.Total
	out := &statsapi.CPUStats{Time: metav1.NewTime(now), UsageCoreNanoSeconds: &total}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, ok := p.cpuPrev[key]
	if ok && now.Sub(prev.at) < minRateWindow {
		// Too close to the previous sample: keep it (and its rate) so
		// that the next window is long enough.
		out.UsageNanoCores = prev.rate
		prev.seen = now
		p.cpuPrev[key] = prev
		return out
	}
	if ok && total >= prev.usage {
		r := cpuRate(prev.usage, total, now.Sub(prev.at))
		out.UsageNanoCores = &r
	}
	p.cpuPrev[key] = cpuSample{at: now, seen: now, usage: total, rate: out.UsageNanoCores}
	return out
}

// cpuRate is the usage in nanocores between two cumulative readings (in
// nanoseconds) taken window apart.
func cpuRate(prev, cur uint64, window time.Duration) uint64 {
	if window <= 0 || cur < prev {
		return 0
	}
	return uint64(float64(cur-prev) / window.Seconds())
}

// memoryStats converts a sample's memory; available is limit − working
// set, the limit being the cgroup's or, when unlimited, the machine's.
func memoryStats(now time.Time, st *info.ContainerStats, machine uint64) *statsapi.MemoryStats {
	if st.Memory == nil {
		return nil
	}
	m := st.Memory
	usage, ws, rss := m.Usage, m.WorkingSet, m.RSS
	faults, major := m.ContainerData.Pgfault, m.ContainerData.Pgmajfault
	out := &statsapi.MemoryStats{
		Time:            metav1.NewTime(now),
		UsageBytes:      &usage,
		WorkingSetBytes: &ws,
		RSSBytes:        &rss,
		PageFaults:      &faults,
		MajorPageFaults: &major,
	}
	if machine > 0 {
		avail := uint64(0)
		if machine > ws {
			avail = machine - ws
		}
		out.AvailableBytes = &avail
	}
	return out
}

// networkStats converts a sample's interfaces; the summary's own
// interface is eth0 when there is one, as the kubelet's.
func networkStats(now time.Time, st *info.ContainerStats) *statsapi.NetworkStats {
	if st.Network == nil || len(st.Network.Interfaces) == 0 {
		return nil
	}
	out := &statsapi.NetworkStats{Time: metav1.NewTime(now)}
	for _, i := range st.Network.Interfaces {
		rx, rxe, tx, txe := i.RxBytes, i.RxErrors, i.TxBytes, i.TxErrors
		is := statsapi.InterfaceStats{Name: i.Name, RxBytes: &rx, RxErrors: &rxe, TxBytes: &tx, TxErrors: &txe}
		out.Interfaces = append(out.Interfaces, is)
		if i.Name == "eth0" {
			out.InterfaceStats = is
		}
	}
	return out
}

func value(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// errNoSummary is returned by the collectors before the first collection.
var errNoSummary = errors.New("no stats collected yet")

// lastSamples returns the last collection's raw samples.
func (p *Provider) lastSamples() ([]containerSample, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		return nil, errNoSummary
	}
	return p.samples, nil
}
