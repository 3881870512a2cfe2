package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// cgroupFiles reads one cgroup's CPU time and memory working set from
// its files, v1 or v2, as the test's reference.
type cgroupFiles struct {
	cpu, mem string // v1 cpuacct and memory directories; v2: both the one directory
	v2       bool
}

func cgroupOfPid(t *testing.T, pid int) cgroupFiles {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var cg cgroupFiles
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			switch c {
			case "cpuacct":
				cg.cpu = filepath.Join("/sys/fs/cgroup/cpuacct", parts[2])
				if _, err := os.Stat("/sys/fs/cgroup/cpuacct/cpuacct.usage"); err != nil {
					cg.cpu = filepath.Join("/sys/fs/cgroup/cpu,cpuacct", parts[2])
				}
			case "memory":
				cg.mem = filepath.Join("/sys/fs/cgroup/memory", parts[2])
			case "":
				if parts[0] == "0" && cg.mem == "" {
					cg.cpu = filepath.Join("/sys/fs/cgroup", parts[2])
					cg.mem, cg.v2 = cg.cpu, true
				}
			}
		}
	}
	if cg.cpu == "" || cg.mem == "" {
		t.Fatalf("no cgroup for process %d in %q", pid, b)
	}
	return cg
}

func rootCgroup() cgroupFiles {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return cgroupFiles{cpu: "/sys/fs/cgroup", mem: "/sys/fs/cgroup", v2: true}
	}
	cpu := "/sys/fs/cgroup/cpuacct"
	if _, err := os.Stat(cpu); err != nil {
		cpu = "/sys/fs/cgroup/cpu,cpuacct"
	}
	return cgroupFiles{cpu: cpu, mem: "/sys/fs/cgroup/memory"}
}

func readStat(t *testing.T, file, key string) uint64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	t.Fatalf("%s: no %s", file, key)
	return 0
}

func readUint(t *testing.T, file string) uint64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cpuNanos is the cgroup's cumulative CPU time.
func (c cgroupFiles) cpuNanos(t *testing.T) uint64 {
	if c.v2 {
		return readStat(t, filepath.Join(c.cpu, "cpu.stat"), "usage_usec") * 1000
	}
	return readUint(t, filepath.Join(c.cpu, "cpuacct.usage"))
}

// workingSet is usage − inactive file, as the kubelet computes it.
func (c cgroupFiles) workingSet(t *testing.T) uint64 {
	var usage, inactive uint64
	if c.v2 {
		usage = readUint(t, filepath.Join(c.mem, "memory.current"))
		inactive = readStat(t, filepath.Join(c.mem, "memory.stat"), "inactive_file")
	} else {
		usage = readUint(t, filepath.Join(c.mem, "memory.usage_in_bytes"))
		inactive = readStat(t, filepath.Join(c.mem, "memory.stat"), "total_inactive_file")
	}
	if inactive > usage {
		return 0
	}
	return usage - inactive
}

// cpuSampler records a cgroup's CPU time every 200 ms so that a rate
// can be computed over any window the metrics API reports.
type cpuSampler struct {
	mu      sync.Mutex
	at      []time.Time
	usage   []uint64
	ws      []uint64
	cg      cgroupFiles
	stopped chan struct{}
}

func sampleCPU(t *testing.T, cg cgroupFiles) *cpuSampler {
	s := &cpuSampler{cg: cg, stopped: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(s.stopped)
		for {
			var v uint64
			if cg.v2 {
				b, err := os.ReadFile(filepath.Join(cg.cpu, "cpu.stat"))
				if err == nil {
					for _, l := range strings.Split(string(b), "\n") {
						if x, ok := strings.CutPrefix(l, "usage_usec "); ok {
							n, _ := strconv.ParseUint(x, 10, 64)
							v = n * 1000
						}
					}
				}
			} else if b, err := os.ReadFile(filepath.Join(cg.cpu, "cpuacct.usage")); err == nil {
				v, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			}
			ws := workingSetOf(cg)
			s.mu.Lock()
			s.at, s.usage, s.ws = append(s.at, time.Now()), append(s.usage, v), append(s.ws, ws)
			s.mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(done); <-s.stopped })
	return s
}

// at interpolates the CPU time at time x.
func (s *cpuSampler) valueAt(x time.Time) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i < len(s.at); i++ {
		if !s.at[i].Before(x) && !s.at[i-1].After(x) {
			span := s.at[i].Sub(s.at[i-1]).Seconds()
			f := 0.0
			if span > 0 {
				f = x.Sub(s.at[i-1]).Seconds() / span
			}
			return float64(s.usage[i-1]) + f*(float64(s.usage[i])-float64(s.usage[i-1])), true
		}
	}
	return 0, false
}

// workingSetAt is the working set sampled nearest to x.
func (s *cpuSampler) workingSetAt(x time.Time) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, found := time.Duration(1<<62), -1
	for i, at := range s.at {
		d := at.Sub(x)
		if d < 0 {
			d = -d
		}
		if d < best {
			best, found = d, i
		}
	}
	if found < 0 || best > time.Second {
		return 0, false
	}
	return s.ws[found], true
}

// workingSetOf reads usage − inactive file without failing a test (the
// sampler's goroutine must not call t.Fatal).
func workingSetOf(c cgroupFiles) uint64 {
	usageFile, statKey := "memory.usage_in_bytes", "total_inactive_file"
	if c.v2 {
		usageFile, statKey = "memory.current", "inactive_file"
	}
	b, err := os.ReadFile(filepath.Join(c.mem, usageFile))
	if err != nil {
		return 0
	}
	usage, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	st, err := os.ReadFile(filepath.Join(c.mem, "memory.stat"))
	if err != nil {
		return 0
	}
	var inactive uint64
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, statKey+" "); ok {
			inactive, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if inactive > usage {
		return 0
	}
	return usage - inactive
}

// rate is the cores used over [from, to].
func (s *cpuSampler) rate(from, to time.Time) (float64, bool) {
	a, ok1 := s.valueAt(from)
	b, ok2 := s.valueAt(to)
	if !ok1 || !ok2 || !to.After(from) {
		return 0, false
	}
	return (b - a) / 1e9 / to.Sub(from).Seconds(), true
}

// containerPid asks the runtime for a running container's process.
func containerPid(t *testing.T, pod, container string) int {
	t.Helper()
	ids := framework.RunningContainers(t, map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": container})
	if len(ids) != 1 {
		t.Fatalf("running containers %s/%s: %v", pod, container, ids)
	}
	conn, err := grpc.NewClient("unix://"+framework.RuntimeSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := runtimeapi.NewRuntimeServiceClient(conn).ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ids[0], Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("container %s: no pid in %q: %v", ids[0], st.Info["info"], err)
	}
	return info.Pid
}

func within(got, want, tolerance float64) bool {
	return math.Abs(got-want) <= tolerance*math.Abs(want)
}

// TestTop: the node's stats summary, its /metrics/resource and the
// built-in metrics API (kubectl top) agree with the cgroup files; with
// --disable=metrics-server the APIService goes.
func TestTop(t *testing.T) {
	s := framework.NewNodeServer(t)
	// The build machine's shared disk is often past the default image
	// and node filesystem thresholds: no disk pressure in this test.
	s.Args = append(s.Args, "--eviction-hard=memory.available<100Mi,nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%")
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()

	// A pod burning a quarter of a core (its limit) and holding ~40 MB.
	burn := newPod("burn", container("burn", busybox, "sh", "-c",
		`x=$(head -c 40000000 /dev/zero | tr '\0' a); while :; do :; done`))
	burn.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("250m"),
		corev1.ResourceMemory: resource.MustParse("256Mi"),
	}
	create(t, c, burn)
	framework.WaitPod(t, c, "default", "burn", 90*time.Second, "Running", framework.Running)
	ctr := cgroupOfPid(t, containerPid(t, "burn", "burn"))
	ctrCPU, nodeCPU := sampleCPU(t, ctr), sampleCPU(t, rootCgroup())
	// Let it fill its memory.
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return ctr.workingSet(t) > 40e6, nil
	}); err != nil {
		t.Fatalf("the pod never held 40 MB: working set %d", ctr.workingSet(t))
	}

	t.Run("/stats/summary agrees with the cgroup files within 5%", func(t *testing.T) {
		var last string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			raw, err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", framework.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			ws := ctr.workingSet(t)
			var sum statsapi.Summary
			if err := json.Unmarshal(raw, &sum); err != nil {
				return false, err
			}
			for _, p := range sum.Pods {
				if p.PodRef.Name != "burn" || p.PodRef.Namespace != "default" {
					continue
				}
				for _, cs := range p.Containers {
					if cs.Name != "burn" || cs.CPU == nil || cs.Memory == nil || cs.CPU.UsageNanoCores == nil {
						continue
					}
					want, ok := ctrCPU.valueAt(cs.CPU.Time.Time)
					if !ok {
						last = "sample time outside the test's samples"
						return false, nil
					}
					got := float64(*cs.CPU.UsageCoreNanoSeconds)
					rateWant, ok := ctrCPU.rate(cs.CPU.Time.Add(-10*time.Second), cs.CPU.Time.Time)
					last = fmt.Sprintf("cpu %0.f want %.0f; working set %d want %d; usageNanoCores %d want %.0f",
						got, want, *cs.Memory.WorkingSetBytes, ws, *cs.CPU.UsageNanoCores, rateWant*1e9)
					if !within(got, want, 0.05) || !within(float64(*cs.Memory.WorkingSetBytes), float64(ws), 0.05) {
						return false, nil
					}
					if !ok || !within(float64(*cs.CPU.UsageNanoCores), rateWant*1e9, 0.05) {
						return false, nil
					}
					if cs.Rootfs == nil || cs.Logs == nil || p.EphemeralStorage == nil || p.Network == nil {
						t.Errorf("summary lacks rootfs, logs, ephemeral storage or network: %+v", p)
					}
					n := sum.Node
					if n.Fs == nil || n.Runtime == nil || n.Runtime.ImageFs == nil || n.Rlimit == nil || n.Memory.AvailableBytes == nil {
						t.Errorf("node summary incomplete: %+v", n)
					}
					t.Logf("summary: %s", last)
					return true, nil
				}
			}
			last = "no burn container in the summary"
			return false, nil
		})
		if err != nil {
			t.Fatalf("summary never agreed with the cgroup files: %s", last)
		}
	})

	t.Run("/metrics/resource serves the kubelet's series", func(t *testing.T) {
		raw, err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", framework.NodeName, "proxy", "metrics", "resource").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`container_cpu_usage_seconds_total{container="burn",namespace="default",pod="burn"}`,
			`container_memory_working_set_bytes{container="burn",namespace="default",pod="burn"}`,
			`container_start_time_seconds{container="burn",namespace="default",pod="burn"}`,
			`pod_cpu_usage_seconds_total{namespace="default",pod="burn"}`,
			"node_cpu_usage_seconds_total ", "node_memory_working_set_bytes ", "resource_scrape_error 0",
		} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("/metrics/resource lacks %s", want)
			}
		}
		raw, err = c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", framework.NodeName, "proxy", "metrics", "cadvisor").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `container="burn"`) || !strings.Contains(string(raw), "machine_cpu_cores") {
			t.Errorf("/metrics/cadvisor lacks the burn container or machine_cpu_cores")
		}
	})

	t.Run("kubectl top pod and node within 10% of the cgroup files", func(t *testing.T) {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			raw, err := c.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn").DoRaw(ctx)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			var pm metricsv1beta1.PodMetrics
			if err := json.Unmarshal(raw, &pm); err != nil || len(pm.Containers) != 1 {
				last = fmt.Sprintf("pod metrics %s: %v", raw, err)
				return false, nil
			}
			out, err := s.Kubectl(ctx, "top", "pod", "burn", "--no-headers")
			if err != nil {
				last = out
				return false, nil
			}
			// burn   250m   40Mi
			f := strings.Fields(out)
			if len(f) != 3 {
				last = out
				return false, nil
			}
			topCPU, topMem := resource.MustParse(f[1]), resource.MustParse(f[2])
			end := pm.Timestamp.Time
			want, ok := ctrCPU.rate(end.Add(-pm.Window.Duration), end)
			ws := float64(ctr.workingSet(t))
			last = fmt.Sprintf("top pod %q; cgroup cpu %.3f cores over %v, working set %.0f", strings.TrimSpace(out), want, pm.Window.Duration, ws)
			if !ok || !within(float64(topCPU.MilliValue())/1000, want, 0.10) || !within(float64(topMem.Value()), ws, 0.10) {
				return false, nil
			}
			t.Logf("%s", last)
			return true, nil
		})
		if err != nil {
			t.Fatalf("kubectl top pod never agreed: %s", last)
		}
		err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			raw, err := c.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes", framework.NodeName).DoRaw(ctx)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			var nm metricsv1beta1.NodeMetrics
			if err := json.Unmarshal(raw, &nm); err != nil {
				return false, err
			}
			out, err := s.Kubectl(ctx, "top", "node", "--no-headers")
			if err != nil {
				last = out
				return false, nil
			}
			// e2e-node   812m   40%   1234Mi   5%
			f := strings.Fields(out)
			if len(f) != 5 || f[0] != framework.NodeName {
				last = out
				return false, nil
			}
			topCPU, topMem := resource.MustParse(f[1]), resource.MustParse(f[3])
			end := nm.Timestamp.Time
			want, ok := nodeCPU.rate(end.Add(-nm.Window.Duration), end)
			// The node's memory moves with the machine's other work: the
			// working set sampled when the agent sampled it.
			wsAt, ok2 := nodeCPU.workingSetAt(end)
			ok = ok && ok2
			ws := float64(wsAt)
			last = fmt.Sprintf("top node %q; cgroup cpu %.3f cores over %v, working set %.0f", strings.TrimSpace(out), want, nm.Window.Duration, ws)
			if !ok || !within(float64(topCPU.MilliValue())/1000, want, 0.10) || !within(float64(topMem.Value()), ws, 0.10) {
				return false, nil
			}
			t.Logf("%s", last)
			return true, nil
		})
		if err != nil {
			t.Fatalf("kubectl top node never agreed: %s", last)
		}
	})

	t.Run("--disable=metrics-server removes the APIService", func(t *testing.T) {
		if _, err := s.Kubectl(ctx, "get", "apiservice", "v1beta1.metrics.k8s.io"); err != nil {
			t.Fatalf("no APIService v1beta1.metrics.k8s.io while enabled: %v", err)
		}
		s.Stop(t)
		s.Args = append(s.Args, "--disable=metrics-server")
		s.Start(t)
		var out string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ = s.Kubectl(ctx, "get", "apiservice", "v1beta1.metrics.k8s.io")
			return strings.Contains(out, "NotFound") || strings.Contains(out, "not found"), nil
		})
		if err != nil {
			t.Fatalf("APIService still there with --disable=metrics-server: %s", out)
		}
		out, err = s.Kubectl(ctx, "top", "node")
		if err == nil || !strings.Contains(out, "Metrics API not available") {
			t.Errorf("kubectl top node with the metrics API disabled: %v %s", err, out)
		}
	})
}
