// Command node benchmarks a one-node k1s server (control plane, agent and
// embedded containerd) and prints the figures recorded in
// docs/BENCHMARKS.md: start → node Ready, create → Running for one pod and
// for 30 pods created at once, and the memory of containerd, the shims and
// the k1s process, idle and with 30 pods; then the time for a Deployment of
// 100 replicas to be all Running. Needs root and the test images.
//
//	make build test-images && go run ./tests/bench/node -bin bin/k1s -images _output/images
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/freeport"
)

const nodeName = "bench-node"

var (
	burstCmd, deployCmd, serverArgs string
	verbosity                       int
)

// startBurstCmd starts -burst-cmd, with $KUBECONFIG naming the server's
// admin kubeconfig; the returned func stops it.
func startBurstCmd(kubeconfig string) func() { return startCmd(burstCmd, kubeconfig) }

// startCmd starts the shell command line, if any, with $KUBECONFIG set;
// the returned func sends it SIGINT and waits for it.
func startCmd(line, kubeconfig string) func() {
	if line == "" {
		return func() {}
	}
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s: %v\n", line, err)
		return func() {}
	}
	time.Sleep(300 * time.Millisecond) // let it attach
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

func main() {
	bin := flag.String("bin", "bin/k1s", "k1s binary")
	images := flag.String("images", "_output/images", "directory of test image tarballs")
	pods := flag.Int("pods", 30, "pods created at once")
	replicas := flag.Int("replicas", 100, "replicas of the Deployment timed last (0: skip)")
	keepLog := flag.String("log", "", "copy the server's log to this file at the end")
	runs := flag.Int("runs", 1, "measure this many times, each on a new data dir, then summarize")
	flag.StringVar(&serverArgs, "server-args", "", "extra arguments for k1s server, space-separated")
	flag.IntVar(&verbosity, "v", 0, "the server's log verbosity (k1s -v)")
	flag.StringVar(&deployCmd, "deploy-cmd", "", "as -burst-cmd, for the Deployment's run")
	flag.StringVar(&burstCmd, "burst-cmd", "", "shell command started when the pod burst starts and sent SIGINT when it ends, $KUBECONFIG set (e.g. 'perf record -a -N -o /tmp/burst.data')")
	flag.Parse()
	// Output piped into head must not kill the benchmark before it has
	// stopped its server and cleaned the node up.
	signal.Ignore(syscall.SIGPIPE)
	var all []figures
	for i := range max(*runs, 1) {
		if *runs > 1 {
			fmt.Printf("-- run %d of %d\n", i+1, *runs)
		}
		cal := calibrate()
		fmt.Printf("machine: calibration workload took %v on 2 goroutines\n", cal.Round(time.Millisecond))
		f, err := run(*bin, *images, *pods, *replicas, *keepLog)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		f.calibration = cal
		all = append(all, f)
	}
	if len(all) > 1 {
		summarize(all, *pods)
	}
}

// figures are one run's results that the goals are about.
type figures struct {
	nodeReady, burst time.Duration
	shimMB           float64
	// calibration is how long calibrate took just before the run.
	calibration time.Duration
}

// calibrate times a fixed CPU-bound workload (map inserts and a sort:
// allocation and branches, as in the components' own work) on two
// goroutines. This machine's speed changes by tens of percent within
// minutes; the figure, printed with each run, tells such spells apart.
func calibrate() time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			m := make(map[string]int)
			v := make([]int, 0, 400_000)
			for i := range 400_000 {
				n := rnd.IntN(1 << 30)
				v = append(v, n)
				if i%2 == 0 {
					m[strconv.Itoa(n)] = i
				}
			}
			sort.Ints(v)
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// summarize prints each figure's minimum, median and maximum over the
// runs, and in how many runs it met its goal (docs/BENCHMARKS.md).
func summarize(all []figures, pods int) {
	durs := func(get func(figures) time.Duration, goal time.Duration) string {
		var v []time.Duration
		met := 0
		for _, f := range all {
			v = append(v, get(f))
			if get(f) <= goal {
				met++
			}
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return fmt.Sprintf("min %v, median %v, max %v; ≤ %v in %d of %d runs", v[0].Round(time.Millisecond),
			v[len(v)/2].Round(time.Millisecond), v[len(v)-1].Round(time.Millisecond), goal, met, len(v))
	}
	fmt.Printf("== over %d runs\n", len(all))
	fmt.Printf("start → node Ready: %s\n", durs(func(f figures) time.Duration { return f.nodeReady }, 1500*time.Millisecond))
	fmt.Printf("%d pods → all Running: %s\n", pods, durs(func(f figures) time.Duration { return f.burst }, 3*time.Second))
	var shim []float64
	for _, f := range all {
		shim = append(shim, f.shimMB)
	}
	sort.Float64s(shim)
	fmt.Printf("shim PSS per pod: min %.2f, median %.2f, max %.2f MB\n", shim[0], shim[len(shim)/2], shim[len(shim)-1])
	var cal []string
	for _, f := range all {
		cal = append(cal, fmt.Sprintf("%v/%v", f.calibration.Round(time.Millisecond), f.burst.Round(10*time.Millisecond)))
	}
	fmt.Printf("calibration/burst by run: %s\n", strings.Join(cal, ", "))
}

func freePort() int {
	port, err := freeport.Get()
	if err != nil {
		panic(err)
	}
	return port
}

func run(bin, images string, n, replicas int, keepLog string) (f figures, err error) {
	dir, err := os.MkdirTemp("", "k1s-bench-node")
	if err != nil {
		return f, err
	}
	data := filepath.Join(dir, "data")
	defer func() {
		_ = exec.Command(bin, "killall", "--data-dir", data).Run()
		if keepLog != "" {
			if b, err := os.ReadFile(filepath.Join(dir, "k1s.log")); err == nil {
				_ = os.WriteFile(keepLog, b, 0o644)
			}
		}
		os.RemoveAll(dir)
	}()
	imgDir := filepath.Join(data, "agent", "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return f, err
	}
	for _, name := range []string{"busybox.tar", "testapp.tar"} {
		b, err := os.ReadFile(filepath.Join(images, name))
		if err != nil {
			return f, fmt.Errorf("test images (make test-images): %w", err)
		}
		if err := os.WriteFile(filepath.Join(imgDir, name), b, 0o644); err != nil {
			return f, err
		}
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
	args = append(args, strings.Fields(serverArgs)...)
	if verbosity > 0 {
		args = append([]string{fmt.Sprintf("-v=%d", verbosity)}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	start := time.Now()
	fmt.Printf("server started at %s\n", start.Format("15:04:05.000"))
	if err := cmd.Start(); err != nil {
		return f, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()

	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for {
		if time.Since(start) > 2*time.Minute {
			return f, fmt.Errorf("not ready (see %s)", log.Name())
		}
		if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return f, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for {
		n, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err == nil && ready(n) {
			break
		}
		if time.Since(start) > 2*time.Minute {
			return f, fmt.Errorf("node not Ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.nodeReady = time.Since(start)
	fmt.Printf("start → node Ready (new data dir):       %v (at %s)\n", f.nodeReady.Round(time.Millisecond), time.Now().Format("15:04:05.000"))
	waitSA(ctx, c)
	time.Sleep(10 * time.Second)
	idleK1s := rssMB(cmd.Process.Pid)
	ctrPid := containerdPid(data)
	fmt.Printf("idle: k1s process RSS %.1f MB, containerd RSS %.1f MB\n", idleK1s, rssMB(ctrPid))
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w, err := watchRunning(wctx, c)
	if err != nil {
		return f, err
	}

	one, err := createAndWait(ctx, c, w, []string{"single"})
	if err != nil {
		return f, err
	}
	fmt.Printf("1 pod create → Running:                  %v\n", one[0].Round(time.Millisecond))

	var names []string
	for i := 0; i < n; i++ {
		names = append(names, fmt.Sprintf("p%02d", i))
	}
	stopBurstCmd := startBurstCmd(kubeconfig)
	busy0, k1s0, ctr0 := machineBusy(), cpuSeconds(cmd.Process.Pid), cpuSeconds(ctrPid)
	t0 := time.Now()
	lat, err := createAndWait(ctx, c, w, names)
	all := time.Since(t0)
	stopBurstCmd()
	if err != nil {
		return f, err
	}
	f.burst = all
	busy, k1sCPU, ctrCPU := machineBusy()-busy0, cpuSeconds(cmd.Process.Pid)-k1s0, cpuSeconds(ctrPid)-ctr0
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("%d pods at once → all Running:           %v (p50 %v, p99 %v)\n", n, all.Round(time.Millisecond),
		lat[len(lat)/2].Round(time.Millisecond), lat[(len(lat)*99)/100].Round(time.Millisecond))
	fmt.Printf("  CPU meanwhile: machine busy %.2f s of %.2f s (%d CPUs); k1s %.2f s, containerd %.2f s, the rest (shims, runc, CNI) %.2f s\n",
		busy, all.Seconds()*float64(runtime.NumCPU()), runtime.NumCPU(), k1sCPU, ctrCPU, busy-k1sCPU-ctrCPU)
	time.Sleep(10 * time.Second)
	shims := shimPids(ctrPid)
	var pss float64
	for _, p := range shims {
		pss += pssMB(p)
	}
	f.shimMB = pss / float64(max(len(shims), 1))
	fmt.Printf("with %d pods: k1s RSS %.1f MB, containerd RSS %.1f MB, %d shims PSS %.1f MB (%.2f MB per pod)\n",
		n+1, rssMB(cmd.Process.Pid), rssMB(ctrPid), len(shims), pss, pss/float64(max(len(shims), 1)))
	if replicas == 0 {
		return f, nil
	}
	if err := deleteAllPods(ctx, c); err != nil {
		return f, err
	}
	stopDeployCmd := startCmd(deployCmd, kubeconfig)
	busy0, k1s0, ctr0 = machineBusy(), cpuSeconds(cmd.Process.Pid), cpuSeconds(ctrPid)
	took, err := deploymentRunning(ctx, c, w, replicas)
	stopDeployCmd()
	if err != nil {
		return f, err
	}
	busy, k1sCPU, ctrCPU = machineBusy()-busy0, cpuSeconds(cmd.Process.Pid)-k1s0, cpuSeconds(ctrPid)-ctr0
	fmt.Printf("Deployment of %d replicas → all Running:  %v\n", replicas, took.Round(time.Millisecond))
	fmt.Printf("  CPU meanwhile: machine busy %.2f s of %.2f s; k1s %.2f s, containerd %.2f s, the rest %.2f s\n",
		busy, took.Seconds()*float64(runtime.NumCPU()), k1sCPU, ctrCPU, busy-k1sCPU-ctrCPU)
	return f, nil
}

// deleteAllPods empties the default namespace, so the Deployment that
// follows has the node's pod capacity (110) to itself.
func deleteAllPods(ctx context.Context, c kubernetes.Interface) error {
	if err := c.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete pods: %w", err)
	}
	for t0 := time.Now(); time.Since(t0) < 2*time.Minute; time.Sleep(200 * time.Millisecond) {
		list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
	}
	return fmt.Errorf("pods not gone within 2m")
}

// deploymentRunning creates a Deployment of n busybox replicas (placed by
// the scheduler) and returns the time until all n pods are Running.
func deploymentRunning(ctx context.Context, c kubernetes.Interface, w *runningWatch, n int) (time.Duration, error) {
	labels := map[string]string{"app": "bench"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{{Name: "c", Image: "k1s.local/busybox:1.36", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}},
				},
			},
		},
	}
	t0 := time.Now()
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("create deployment: %w", err)
	}
	if err := w.countLabel("app", "bench", n, 5*time.Minute); err != nil {
		return 0, fmt.Errorf("deployment of %d replicas: %w", n, err)
	}
	return time.Since(t0), nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func waitSA(ctx context.Context, c kubernetes.Interface) {
	for i := 0; i < 100; i++ {
		if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createAndWait creates pods at once and returns each one's create →
// Running time, as the pod watch saw it.
func createAndWait(ctx context.Context, c kubernetes.Interface, w *runningWatch, names []string) ([]time.Duration, error) {
	var wg sync.WaitGroup
	t0 := make([]time.Time, len(names))
	errs := make(chan error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func(i int, name string) {
			defer wg.Done()
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
				NodeName: nodeName, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "c", Image: "k1s.local/busybox:1.36", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}},
			}}
			t0[i] = time.Now()
			if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}(i, name)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, err
	}
	return w.since(names, t0, 2*time.Minute)
}

func readStatus(pid int, key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func rssMB(pid int) float64 { return readStatus(pid, "VmRSS:") }

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTick = 100

// cpuSeconds is the user+system CPU time of a process so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTick
}

// machineBusy is the CPU time all CPUs spent not idle so far.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var total float64
	for i, v := range strings.Fields(line)[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		total += x
	}
	return total / clockTick
}

func pssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Pss:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func containerdPid(data string) int {
	b, err := os.ReadFile("/run/k1s/containerd/containerd.pid")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// shimPids finds the runc shims: processes whose executable is the shim k1s extracted.
func shimPids(_ int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err == nil && strings.HasSuffix(exe, "/containerd-shim-runc-v2") {
			out = append(out, pid)
		}
	}
	return out
}
