// Command stats benchmarks the node's stats collection (agent/stats and
// the built-in metrics API): k1s server with 30 idle pods, once with
// stats on and once with --disable-stats --disable=metrics-server,
// alternating, and prints per run the idle CPU and RSS of the k1s process
// and its containerd, and the latency of /stats/summary (through the
// apiserver's nodes/proxy, as kubectl and metrics-server reach it); then
// min / median / max over the runs. Needs root and the test images.
//
//	go run -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo ./tests/bench/stats -bin bin/k1s -images _output/images -runs 3
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/freeport"
)

const nodeName = "bench-node"

var heapDir string

type figures struct {
	k1sCPU, ctrCPU float64 // % of a core over the idle window
	k1sRSS, ctrRSS float64 // MB
	k1sAnon        float64 // MB of RSS that is not the executable's pages
	summary        []time.Duration
	summaryCPUMem  []time.Duration
}

func main() {
	bin := flag.String("bin", "bin/k1s", "k1s binary")
	images := flag.String("images", "_output/images", "test image tarballs")
	runs := flag.Int("runs", 3, "runs of each setting")
	pods := flag.Int("pods", 30, "idle pods")
	window := flag.Duration("window", 60*time.Second, "idle window measured")
	flag.StringVar(&heapDir, "heap", "", "directory to save each run's heap profile in (the apiserver's /debug/pprof/heap), after the window")
	extra := flag.String("cmd", "", "shell command run (and its output printed) while the pods run, after the window; e.g. a cAdvisor cost probe")
	flag.Parse()
	results := map[bool][]figures{}
	for i := 0; i < *runs; i++ {
		for _, on := range []bool{true, false} {
			f, err := run(*bin, *images, *pods, on, *window, *extra)
			if err != nil {
				fmt.Fprintln(os.Stderr, "run:", err)
				os.Exit(1)
			}
			results[on] = append(results[on], f)
		}
	}
	for _, on := range []bool{true, false} {
		fs := results[on]
		name := "stats on"
		if !on {
			name = "stats off (--disable-stats --disable=metrics-server)"
		}
		fmt.Printf("\n%s, %d runs (min / median / max):\n", name, len(fs))
		pick := func(g func(figures) float64) string {
			var v []float64
			for _, f := range fs {
				v = append(v, g(f))
			}
			sort.Float64s(v)
			return fmt.Sprintf("%.2f / %.2f / %.2f", v[0], v[len(v)/2], v[len(v)-1])
		}
		fmt.Printf("  k1s CPU %% of a core:        %s\n", pick(func(f figures) float64 { return f.k1sCPU }))
		fmt.Printf("  containerd CPU %% of a core: %s\n", pick(func(f figures) float64 { return f.ctrCPU }))
		fmt.Printf("  k1s RSS MB:                 %s\n", pick(func(f figures) float64 { return f.k1sRSS }))
		fmt.Printf("  k1s anonymous RSS MB:       %s\n", pick(func(f figures) float64 { return f.k1sAnon }))
		fmt.Printf("  containerd RSS MB:          %s\n", pick(func(f figures) float64 { return f.ctrRSS }))
		if on {
			var all, cm []time.Duration
			for _, f := range fs {
				all, cm = append(all, f.summary...), append(cm, f.summaryCPUMem...)
			}
			fmt.Printf("  /stats/summary:             %s\n", durations(all))
			fmt.Printf("  ?only_cpu_and_memory=true:  %s\n", durations(cm))
		}
	}
}

func durations(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	r := func(x time.Duration) time.Duration { return x.Round(10 * time.Microsecond) }
	return fmt.Sprintf("%v / %v / %v (%d requests)", r(d[0]), r(d[len(d)/2]), r(d[len(d)-1]), len(d))
}

func run(bin, images string, n int, on bool, window time.Duration, extra string) (f figures, err error) {
	dir, err := os.MkdirTemp("", "k1s-bench-stats")
	if err != nil {
		return f, err
	}
	data := filepath.Join(dir, "data")
	defer func() {
		_ = exec.Command(bin, "killall", "--data-dir", data).Run()
		if err != nil {
			// Keep the server's log of a failed run.
			if b, rerr := os.ReadFile(filepath.Join(dir, "k1s.log")); rerr == nil {
				_ = os.WriteFile(filepath.Join(os.TempDir(), "k1s-bench-stats-failed.log"), b, 0o644)
			}
		}
		os.RemoveAll(dir)
	}()
	imgDir := filepath.Join(data, "agent", "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return f, err
	}
	b, err := os.ReadFile(filepath.Join(images, "busybox.tar"))
	if err != nil {
		return f, fmt.Errorf("test images: %w", err)
	}
	if err := os.WriteFile(filepath.Join(imgDir, "busybox.tar"), b, 0o644); err != nil {
		return f, err
	}
	port := freePort()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	log, err := os.Create(filepath.Join(dir, "k1s.log"))
	if err != nil {
		return f, err
	}
	args := []string{"server", "--data-dir", data, "--write-kubeconfig", kubeconfig,
		"--https-listen-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--node-name", nodeName,
		"--etcd-client-port", strconv.Itoa(freePort()), "--etcd-peer-port", strconv.Itoa(freePort())}
	// The build machine's disk is shared and often past the default
	// image and node filesystem thresholds: no disk pressure here.
	args = append(args, "--eviction-hard=memory.available<100Mi,nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%")
	if !on {
		args = append(args, "--disable-stats", "--disable=metrics-server")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return f, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for {
		if time.Since(start) > 2*time.Minute {
			return f, fmt.Errorf("not ready")
		}
		if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return f, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for {
		if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			if node, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err == nil && ready(node) {
				break
			}
		}
		if time.Since(start) > 2*time.Minute {
			return f, fmt.Errorf("node not Ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var wg sync.WaitGroup
	createErrs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i)}, Spec: corev1.PodSpec{
				NodeName: nodeName, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "c", Image: "k1s.local/busybox:1.36", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}},
			}}
			if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				createErrs <- err
			}
		}(i)
	}
	wg.Wait()
	close(createErrs)
	for err := range createErrs {
		return f, fmt.Errorf("create pod: %w", err)
	}
	for {
		pl, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		running := 0
		if err == nil {
			for _, p := range pl.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
		}
		if running == n {
			break
		}
		if time.Since(start) > 4*time.Minute {
			return f, fmt.Errorf("%d of %d pods Running", running, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Let start-up settle (memory trims, the first volume walk, scrapes).
	time.Sleep(30 * time.Second)
	ctrPid := containerdPid()
	k0, c0, t0 := cpuSeconds(cmd.Process.Pid), cpuSeconds(ctrPid), time.Now()
	time.Sleep(window)
	el := time.Since(t0).Seconds()
	f.k1sCPU = 100 * (cpuSeconds(cmd.Process.Pid) - k0) / el
	f.ctrCPU = 100 * (cpuSeconds(ctrPid) - c0) / el
	f.k1sRSS, f.ctrRSS = rssMB(cmd.Process.Pid), rssMB(ctrPid)
	f.k1sAnon = statusMB(cmd.Process.Pid, "RssAnon:")
	fmt.Printf("stats %v: k1s %.2f%% of a core, %.1f MB (anonymous %.1f MB, file %.1f MB); containerd %.2f%%, %.1f MB\n", on, f.k1sCPU, f.k1sRSS,
		f.k1sAnon, statusMB(cmd.Process.Pid, "RssFile:"), f.ctrCPU, f.ctrRSS)
	if heapDir != "" {
		for _, q := range []string{"", "1"} {
			req := c.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap")
			name := fmt.Sprintf("heap-%v-%d.pb.gz", on, time.Now().Unix())
			if q != "" {
				req = req.Param("debug", q)
				name = fmt.Sprintf("heap-%v-%d.txt", on, time.Now().Unix())
			}
			if b, err := req.DoRaw(ctx); err == nil {
				_ = os.WriteFile(filepath.Join(heapDir, name), b, 0o644)
			} else {
				fmt.Printf("  heap profile: %v\n", err)
			}
		}
	}
	if on {
		rc := c.CoreV1().RESTClient()
		for i := 0; i < 20; i++ {
			for _, q := range []string{"", "true"} {
				req := rc.Get().AbsPath("/api/v1/nodes", nodeName, "proxy", "stats", "summary")
				if q != "" {
					req = req.Param("only_cpu_and_memory", q)
				}
				t := time.Now()
				body, err := req.DoRaw(ctx)
				d := time.Since(t)
				if err != nil {
					return f, fmt.Errorf("/stats/summary: %w", err)
				}
				if q == "" {
					if i == 0 {
						fmt.Printf("  /stats/summary: %d bytes\n", len(body))
					}
					f.summary = append(f.summary, d)
				} else {
					f.summaryCPUMem = append(f.summaryCPUMem, d)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Printf("  /stats/summary %s\n", durations(append([]time.Duration(nil), f.summary...)))
		if extra != "" {
			out, err := exec.Command("sh", "-c", extra).CombinedOutput()
			fmt.Printf("  %s: %s(err %v)\n", extra, strings.TrimSpace(string(out))+" ", err)
		}
	}
	return f, nil
}

func freePort() int {
	port, err := freeport.Get()
	if err != nil {
		panic(err)
	}
	return port
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func rssMB(pid int) float64 { return statusMB(pid, "VmRSS:") }

// statusMB reads a kB figure of /proc/<pid>/status.
func statusMB(pid int, key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuSeconds is a process's user+system CPU time so far (USER_HZ 100).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

func containerdPid() int {
	b, err := os.ReadFile("/run/k1s/containerd/containerd.pid")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
