// Command controlplane benchmarks `k1s server`'s control plane and prints
// the figures recorded in docs/BENCHMARKS.md: start → /readyz on a new and
// on a warm data directory, idle RSS, pod-create latency at a steady rate,
// and the time to list 5000 pods.
//
//	go run ./tests/bench/controlplane -bin bin/k1s
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

func main() {
	bin := flag.String("bin", "bin/k1s", "k1s binary")
	rate := flag.Int("rate", 100, "creates per second for the latency run")
	seconds := flag.Int("seconds", 20, "length of the latency run")
	listN := flag.Int("list", 5000, "pods to list")
	flag.Parse()
	if err := run(*bin, *rate, *seconds, *listN); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type server struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

func freePort() int {
	port, err := freeport.Get()
	if err != nil {
		panic(err)
	}
	return port
}

func (s *server) start() (time.Duration, error) {
	args := []string{"server", "--data-dir", filepath.Join(s.dir, "data"), "--write-kubeconfig", filepath.Join(s.dir, "kubeconfig"),
		"--https-listen-port", strconv.Itoa(s.port), "--bind-address", "127.0.0.1",
		"--etcd-client-port", strconv.Itoa(freePort()), "--etcd-peer-port", strconv.Itoa(freePort()),
		"--disable-agent"}
	log, err := os.OpenFile(filepath.Join(s.dir, "k1s.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		return 0, err
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for time.Since(start) < 2*time.Minute {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", s.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start), nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("not ready within 2m (see %s)", filepath.Join(s.dir, "k1s.log"))
}

func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
	s.cmd = nil
}

func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

func pct(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) == 0 {
		return 0
	}
	return d[int(float64(len(d)-1)*p)]
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "c", Image: "k1s.local/testapp:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
		},
	}
}

func run(bin string, rate, seconds, listN int) error {
	dir, err := os.MkdirTemp("", "k1s-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s := &server{bin: bin, dir: dir, port: freePort()}
	defer s.stop()

	first, err := s.start()
	if err != nil {
		return err
	}
	s.stop()
	warm, err := s.start()
	if err != nil {
		return err
	}
	fmt.Printf("start → /readyz, new data dir:   %v\n", first.Round(time.Millisecond))
	fmt.Printf("start → /readyz, warm data dir:  %v\n", warm.Round(time.Millisecond))

	time.Sleep(15 * time.Second)
	fmt.Printf("idle RSS (whole control plane):  %.1f MB\n", rssMB(s.cmd.Process.Pid))

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		// The serviceaccount controller may have made it already.
		fmt.Fprintln(os.Stderr, "note:", err)
	}

	// Steady-rate creates.
	var mu sync.Mutex
	var lat []time.Duration
	var failures int
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	n := rate * seconds
	for i := 0; i < n; i++ {
		<-tick.C
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			t0 := time.Now()
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("rate-%d", i)), metav1.CreateOptions{})
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures++
				return
			}
			lat = append(lat, d)
		}(i)
	}
	tick.Stop()
	wg.Wait()
	fmt.Printf("pod create at %d/s for %ds:       p50 %v  p99 %v  (%d failed)\n", rate, seconds,
		pct(lat, 0.50).Round(100*time.Microsecond), pct(lat, 0.99).Round(100*time.Microsecond), failures)

	// Fill up to listN pods, then list them.
	sem := make(chan struct{}, 32)
	for i := n; i < listN; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			_, _ = c.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("list-%d", i)), metav1.CreateOptions{})
		}(i)
	}
	wg.Wait()
	for _, rv := range []string{"", "0"} {
		var best time.Duration
		var count int
		for r := 0; r < 3; r++ {
			t0 := time.Now()
			list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{ResourceVersion: rv})
			d := time.Since(t0)
			if err != nil {
				return err
			}
			count = len(list.Items)
			if best == 0 || d < best {
				best = d
			}
		}
		label := "consistent (etcd)"
		if rv == "0" {
			label = "resourceVersion=0 (cache)"
		}
		fmt.Printf("list %d pods, %s: %v (best of 3, protobuf)\n", count, label, best.Round(time.Millisecond))
	}
	fmt.Printf("RSS with %d pods stored:        %.1f MB\n", listN, rssMB(s.cmd.Process.Pid))
	return nil
}
