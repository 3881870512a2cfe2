// Command storage benchmarks persistent volumes on a one-node k1s server:
// the time from a pod's creation to Running when it mounts a new
// local-path PersistentVolumeClaim (created just before it, as a
// StatefulSet does: WaitForFirstConsumer, so the scheduler selects the
// node, the node's provisioner creates the volume, the binder binds it,
// the scheduler binds the pod, the agent mounts it), against a pod with an
// emptyDir, measured alternately in the same run. The goal (issue 15) is a
// median ratio ≤ 1.5. Needs root and the test images.
//
//	go build -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo -o /tmp/k1s ./cmd/k1s
//	go run -tags ... ./tests/bench/storage -bin /tmp/k1s -images _output/images -pods 10
//
// The server runs on loopback with a temporary data dir and free ports;
// `k1s killall` and the removal of the data dir clean up after it.
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
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/freeport"
)

const (
	nodeName = "bench-node"
	busybox  = "k1s.local/busybox:1.36"
)

func main() {
	bin := flag.String("bin", "bin/k1s", "k1s binary")
	images := flag.String("images", "_output/images", "directory of test image tarballs")
	pods := flag.Int("pods", 10, "pods of each kind per run, created one at a time, the kinds alternating")
	runs := flag.Int("runs", 1, "runs, each on a new server and data dir")
	flag.Parse()
	var ratios []float64
	for r := 1; r <= max(*runs, 1); r++ {
		empty, pvc, err := run(*bin, *images, *pods)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		me, mp := median(empty), median(pvc)
		ratio := float64(mp) / float64(me)
		ratios = append(ratios, ratio)
		fmt.Printf("run %d  emptyDir pod → Running: median %v (min %v, max %v) | PVC pod → Running: median %v (min %v, max %v) | ratio %.2f\n",
			r, ms(me), ms(minOf(empty)), ms(maxOf(empty)), ms(mp), ms(minOf(pvc)), ms(maxOf(pvc)), ratio)
	}
	if len(ratios) > 1 {
		sort.Float64s(ratios)
		fmt.Printf("== over %d runs: ratio min %.2f, median %.2f, max %.2f (goal ≤ 1.5)\n", len(ratios), ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
	}
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func sorted(v []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}
func median(v []time.Duration) time.Duration { s := sorted(v); return s[len(s)/2] }
func minOf(v []time.Duration) time.Duration  { return sorted(v)[0] }
func maxOf(v []time.Duration) time.Duration  { s := sorted(v); return s[len(s)-1] }

// run starts a server, times n pods of each kind and stops it.
func run(bin, images string, n int) (empty, pvc []time.Duration, err error) {
	dir, err := os.MkdirTemp("", "k1s-bench-storage")
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	defer func() {
		_ = exec.Command(bin, "killall", "--data-dir", data).Run()
		os.RemoveAll(dir)
	}()
	imgDir := filepath.Join(data, "agent", "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(filepath.Join(images, "busybox.tar"))
	if err != nil {
		return nil, nil, fmt.Errorf("test images (make test-images): %w", err)
	}
	if err := os.WriteFile(filepath.Join(imgDir, "busybox.tar"), b, 0o644); err != nil {
		return nil, nil, err
	}
	port, err := freeport.Get()
	if err != nil {
		return nil, nil, err
	}
	etcdClient, _ := freeport.Get()
	etcdPeer, _ := freeport.Get()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	log, err := os.Create(filepath.Join(dir, "k1s.log"))
	if err != nil {
		return nil, nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "server", "--data-dir", data, "--write-kubeconfig", kubeconfig,
		"--https-listen-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--node-name", nodeName,
		"--etcd-client-port", strconv.Itoa(etcdClient), "--etcd-peer-port", strconv.Itoa(etcdPeer))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()

	ctx := context.Background()
	c, err := waitServer(ctx, port, kubeconfig, log.Name())
	if err != nil {
		return nil, nil, err
	}
	w, err := watchRunning(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	defer w.stop()
	// A first pod of each kind warms the image and the code paths; it is
	// not counted.
	for i := -1; i < n; i++ {
		d, err := timePod(ctx, c, w, fmt.Sprintf("e%d", i+1), false)
		if err != nil {
			return nil, nil, err
		}
		p, err := timePod(ctx, c, w, fmt.Sprintf("p%d", i+1), true)
		if err != nil {
			return nil, nil, err
		}
		if i >= 0 {
			empty, pvc = append(empty, d), append(pvc, p)
		}
	}
	return empty, pvc, nil
}

func waitServer(ctx context.Context, port int, kubeconfig, log string) (kubernetes.Interface, error) {
	start := time.Now()
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for {
		if time.Since(start) > 2*time.Minute {
			return nil, fmt.Errorf("server not ready (see %s)", log)
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
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for {
		if time.Since(start) > 2*time.Minute {
			return nil, fmt.Errorf("node, service account or StorageClass not there (see %s)", log)
		}
		n, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		_, saErr := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		_, scErr := c.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{})
		if err == nil && ready(n) && saErr == nil && scErr == nil {
			return c, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// timePod creates a pod (with, for withClaim, its claim first) and returns
// the time from the first create to the pod Running, as the watch saw it.
func timePod(ctx context.Context, c kubernetes.Interface, w *runningWatch, name string, withClaim bool) (time.Duration, error) {
	vol := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	running := w.expect(name)
	start := time.Now()
	if withClaim {
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To("local-path"),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
			},
		}
		if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("create claim %s: %w", name, err)
		}
		vol.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Volumes:                       []corev1.Volume{vol},
			Containers: []corev1.Container{{
				Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
		},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("create pod %s: %w", name, err)
	}
	select {
	case at := <-running:
		return at.Sub(start), nil
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("pod %s not Running within 2m", name)
	}
}

// runningWatch reports when each expected pod is first seen Running.
type runningWatch struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
	w       watch.Interface
}

func watchRunning(ctx context.Context, c kubernetes.Interface) (*runningWatch, error) {
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rw := &runningWatch{waiting: map[string]chan time.Time{}, w: w}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || !podRunning(p) {
				continue
			}
			now := time.Now()
			rw.mu.Lock()
			if ch, ok := rw.waiting[p.Name]; ok {
				ch <- now
				delete(rw.waiting, p.Name)
			}
			rw.mu.Unlock()
		}
	}()
	return rw, nil
}

func (rw *runningWatch) expect(name string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	rw.mu.Lock()
	rw.waiting[name] = ch
	rw.mu.Unlock()
	return ch
}

func (rw *runningWatch) stop() { rw.w.Stop() }

func podRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}
