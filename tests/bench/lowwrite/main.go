// Command lowwrite measures the bytes an idle one-node k1s server writes
// to disk, with and without --low-write (issue 18), and prints the figures
// recorded in docs/BENCHMARKS.md. For each mode it starts `k1s server` on a
// new data directory (on disk, not a tmpfs), runs -pods busybox pods
// (sleep, no probes, no output), lets it settle, then over -sample reads:
//
//   - write_bytes of /proc/<pid>/io summed over the k1s process tree (the
//     k1s process with etcd, the apiserver, controllers and agent;
//     containerd; the shims; the pods' processes): bytes this tree caused
//     to be written to a block device, page-granular. Processes that start
//     and exit within the window (runc invocations) are missed; idle,
//     there are none;
//   - the data device's sectors written from /proc/diskstats (the whole
//     machine's writes to it, other work included: an upper bound);
//   - the apiserver's etcd requests by operation and resource (its
//     etcd_request_duration_seconds_count metric): what is written;
//   - the files under the data dir and the pod log dir modified during
//     the window.
//
// Needs root and the test images.
//
//	go run ./tests/bench/lowwrite -bin /tmp/me/k1s -images _output/images -sample 10m
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/freeport"
)

const (
	nodeName   = "bench-node"
	podLogsDir = "/var/log/pods"
)

func main() {
	bin := flag.String("bin", "bin/k1s", "k1s binary")
	images := flag.String("images", "_output/images", "directory of test image tarballs")
	pods := flag.Int("pods", 30, "idle pods to run")
	settle := flag.Duration("settle", time.Minute, "wait after the pods run before sampling")
	sample := flag.Duration("sample", 10*time.Minute, "sampling window (extrapolated to an hour)")
	modes := flag.String("modes", "default,low-write", "comma-separated runs: default (no flag) and low-write (--low-write)")
	base := flag.String("dir", "/var/tmp", "where the data directories go (must be on disk)")
	serverArgs := flag.String("server-args", "", "extra arguments for k1s server, space-separated")
	flag.Parse()
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	for _, mode := range strings.Split(*modes, ",") {
		var extra []string
		switch mode {
		case "default":
		case "low-write":
			extra = append(extra, "--low-write")
		default:
			fmt.Fprintf(os.Stderr, "lowwrite: -modes: unknown mode %q\n", mode)
			os.Exit(2)
		}
		extra = append(extra, strings.Fields(*serverArgs)...)
		fmt.Printf("== %s (k1s server %s)\n", mode, strings.Join(extra, " "))
		if err := run(ctx, *bin, *images, *base, *pods, *settle, *sample, extra); err != nil {
			fmt.Fprintln(os.Stderr, "lowwrite:", err)
			os.Exit(1)
		}
	}
}

func run(ctx context.Context, bin, images, base string, n int, settle, sample time.Duration, extra []string) error {
	dir, err := os.MkdirTemp(base, "k1s-bench-lowwrite")
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	var cmd *exec.Cmd
	defer func() {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
		if out, err := exec.Command(bin, "killall", "--data-dir", data).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "k1s killall: %v\n%s", err, out)
		}
		// The pod log tmpfs of --low-write outlives k1s like the pods.
		if isTmpfs(podLogsDir) {
			_ = syscall.Unmount(podLogsDir, 0)
		}
		os.RemoveAll(dir)
	}()
	imgDir := filepath.Join(data, "agent", "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(images, "busybox.tar"))
	if err != nil {
		return fmt.Errorf("test images (make test-images): %w", err)
	}
	if err := os.WriteFile(filepath.Join(imgDir, "busybox.tar"), b, 0o644); err != nil {
		return err
	}
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	etcdPort, err := freeport.Get()
	if err != nil {
		return err
	}
	peerPort, err := freeport.Get()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	log, err := os.Create(filepath.Join(base, filepath.Base(dir)+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	args := append([]string{"server", "--data-dir", data, "--write-kubeconfig", kubeconfig,
		"--https-listen-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--node-name", nodeName,
		"--etcd-client-port", strconv.Itoa(etcdPort), "--etcd-peer-port", strconv.Itoa(peerPort)}, extra...)
	cmd = exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return err
	}
	c, err := waitReady(ctx, port, kubeconfig, log.Name())
	if err != nil {
		return err
	}
	if err := runPods(ctx, c, n); err != nil {
		return err
	}
	fmt.Printf("%d pods Running; log tmpfs mounted on %s: %v; settling %s\n", n, podLogsDir, isTmpfs(podLogsDir), settle)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	dev := deviceOf(data)
	before := snapshot(cmd.Process.Pid, c, dev)
	start := time.Now()
	if err := sleep(ctx, sample); err != nil {
		return err
	}
	after := snapshot(cmd.Process.Pid, c, dev)
	took := time.Since(start)
	report(before, after, took, start, data)
	return nil
}

func waitReady(ctx context.Context, port int, kubeconfig, logName string) (kubernetes.Interface, error) {
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("server not ready (see %s)", logName)
		}
		if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	for {
		n, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err == nil {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return c, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("node not Ready (see %s)", logName)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func runPods(ctx context.Context, c kubernetes.Interface, n int) error {
	for range 100 {
		if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idle-%02d", i)}, Spec: corev1.PodSpec{
			NodeName: nodeName, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "c", Image: "k1s.local/busybox:1.36", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "100000"}}},
		}}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			running := 0
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if running == n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pods not Running after 3 minutes", n)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// state is one reading of the counters.
type state struct {
	// writes is write_bytes by pid, comm by pid, of the process tree.
	writes map[int]int64
	comm   map[int]string
	// sectors is the device's sectors written.
	sectors int64
	// etcd is the apiserver's etcd request count by "operation resource".
	etcd map[string]float64
}

func snapshot(root int, c kubernetes.Interface, dev string) state {
	s := state{writes: map[int]int64{}, comm: map[int]string{}, etcd: map[string]float64{}}
	for _, pid := range tree(root) {
		if w, ok := writeBytes(pid); ok {
			s.writes[pid] = w
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			s.comm[pid] = strings.TrimSpace(string(b))
		}
	}
	s.sectors = sectorsWritten(dev)
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "etcd_request_duration_seconds_count{") {
				continue
			}
			op, typ := label(line, "operation"), label(line, "type")
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			s.etcd[op+" "+typ] += v
		}
	}
	return s
}

func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

func report(before, after state, took time.Duration, start time.Time, data string) {
	perHour := float64(time.Hour) / float64(took)
	byComm := map[string]int64{}
	var total int64
	for pid, w := range after.writes {
		d := w - before.writes[pid] // a new process counts whole
		if d <= 0 {
			continue
		}
		total += d
		name := after.comm[pid]
		if strings.HasPrefix(name, "containerd-shim") {
			name = "shims"
		}
		byComm[name] += d
	}
	fmt.Printf("sample %s: process tree wrote %d bytes = %.2f MB/h\n", took.Round(time.Second), total, float64(total)*perHour/1e6)
	names := make([]string, 0, len(byComm))
	for k := range byComm {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return byComm[names[i]] > byComm[names[j]] })
	for _, k := range names {
		fmt.Printf("  %-20s %10d bytes  %.2f MB/h\n", k, byComm[k], float64(byComm[k])*perHour/1e6)
	}
	if after.sectors > 0 {
		d := (after.sectors - before.sectors) * 512
		fmt.Printf("device (whole machine, other work included): %d bytes = %.2f MB/h\n", d, float64(d)*perHour/1e6)
	}
	var ops []string
	for k, v := range after.etcd {
		if d := v - before.etcd[k]; d > 0 && !strings.HasPrefix(k, "get ") && !strings.HasPrefix(k, "list ") && !strings.HasPrefix(k, "listWithCount ") {
			ops = append(ops, fmt.Sprintf("%s %.0f/h", k, d*perHour))
		}
	}
	sort.Strings(ops)
	fmt.Printf("etcd writes via the apiserver: %s\n", strings.Join(ops, ", "))
	var files []string
	for _, root := range []string{data, podLogsDir} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err == nil && info.Mode().IsRegular() && info.ModTime().After(start) {
				files = append(files, fmt.Sprintf("%s (%d B)", strings.TrimPrefix(path, data+"/"), info.Size()))
			}
			return nil
		})
	}
	fmt.Printf("files modified in the window (%d):\n  %s\n", len(files), strings.Join(files, "\n  "))
}

// tree lists root and its descendants.
func tree(root int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func writeBytes(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, true
		}
	}
	return 0, false
}

// deviceOf is the /proc/diskstats name of the device holding path.
func deviceOf(path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	major, minor := (st.Dev>>8)&0xfff, (st.Dev&0xff)|((st.Dev>>12)&0xfff00)
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == strconv.FormatUint(major, 10) && f[1] == strconv.FormatUint(minor, 10) {
			return f[2]
		}
	}
	return ""
}

func sectorsWritten(dev string) int64 {
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil || dev == "" {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 9 && f[2] == dev {
			n, _ := strconv.ParseInt(f[9], 10, 64)
			return n
		}
	}
	return 0
}

func isTmpfs(path string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(path, &st) == nil && st.Type == 0x01021994
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
