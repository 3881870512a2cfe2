// Command scheduler benchmarks the scheduler's throughput, the figure
// recorded in docs/BENCHMARKS.md: it starts the k1s control plane in
// process (etcd and the apiserver, no agent), creates simulated nodes and
// pending pods, then starts the scheduler as the controller manager runs
// it (its Descriptor, service account credentials, default RBAC) and
// measures how fast the pods get bound.
//
//	go run -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo ./tests/bench/scheduler
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/scheduler"
	"github.com/k1s/k1s/internal/freeport"
	"github.com/k1s/k1s/server"
)

func main() {
	nodes := flag.Int("nodes", 1000, "simulated nodes")
	pods := flag.Int("pods", 10000, "pending pods")
	workers := flag.Int("workers", 64, "parallel creates")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the scheduling phase (whole process) here")
	memProfile := flag.String("memprofile", "", "write heap profiles (allocations) taken at the start and the end of the scheduling phase to FILE.start and FILE.end (compare with pprof -base)")
	ownWatch := flag.Bool("own-watch", false, "count bindings through a second pod watch over TLS instead of the scheduler's shared informer")
	bindOnly := flag.Bool("bind-only", false, "no scheduler: bind the pods round-robin to the nodes from -workers goroutines, in process with the scheduler's identity, to measure what the apiserver and etcd alone allow")
	flag.Parse()
	if err := run(*nodes, *pods, *workers, *cpuProfile, *memProfile, *ownWatch, *bindOnly); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func freePort() (int, error) { return freeport.Get() }

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns
// the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", len(name)%3)}}}
}

func nodeStatus() corev1.NodeStatus {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return corev1.NodeStatus{Capacity: rl, Allocatable: rl, Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
		},
	}
}

func run(nNodes, nPods, workers int, cpuProfile, memProfile string, ownWatch, bindOnly bool) error {
	klog.SetOutput(os.Stderr)
	dir, err := os.MkdirTemp("", "k1s-sched-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	// Only the service account controller: no scheduler of the server's
	// own (this benchmark starts one when the pods are waiting), and no
	// node lifecycle controller to mark the silent simulated nodes down.
	cm := manager.DefaultConfig()
	cm.Controllers = []string{"serviceaccount-controller"}
	cm.LeaderElect = false
	cfg := server.Config{
		DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1", HTTPSPort: ports[0], NodeIP: "127.0.0.1",
		WriteKubeconfig: filepath.Join(dir, "kubeconfig.yaml"), EtcdClientPort: ports[1], EtcdPeerPort: ports[2],
		AdvertiseAddress: "127.0.0.1", DisableAgent: true, ControllerManager: &cm,
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	defer cancel()
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(ctx) }()
	defer func() {
		cancel()
		<-srvDone
	}()
	select {
	case <-srv.Ready():
	case err := <-srvDone:
		return fmt.Errorf("server stopped: %w", err)
	case <-time.After(2 * time.Minute):
		return errors.New("server not ready after 2m")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.WriteKubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = -1, 0
	// The scheduler's manager below lists and watches with this config
	// too; protobuf as kube-controller-manager and kube-scheduler use.
	rc.ContentType = k8sruntime.ContentTypeProtobuf
	rc.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	// No gzip over loopback, as k1s server configures its in-process
	// controllers.
	rc.DisableCompression = true
	c := kubernetes.NewForConfigOrDie(rc)

	start := time.Now()
	if err := parallel(nNodes, workers, func(i int) error {
		n, err := c.CoreV1().Nodes().Create(ctx, node(fmt.Sprintf("node-%04d", i)), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		n.Status = nodeStatus()
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create nodes: %w", err)
	}
	fmt.Printf("%d nodes created in %v\n", nNodes, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := parallel(nPods, workers, func(i int) error {
		_, err := c.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("pod-%05d", i)), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create pods: %w", err)
	}
	fmt.Printf("%d pending pods created in %v\n", nPods, time.Since(start).Round(time.Millisecond))

	// Count bindings as the pods' watch shows them: by default through
	// the scheduler's own shared pod informer, as upstream's
	// scheduler_perf counts them (one watch of the pods, which the
	// scheduler needs anyway); -own-watch counts through a second watch
	// over TLS, as this benchmark did up to session 6.
	var bound atomic.Int64
	var mu sync.Mutex
	var stamps []time.Time
	allBound := make(chan struct{})
	counter := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if o.Spec.NodeName == "" && n.Spec.NodeName != "" {
				mu.Lock()
				stamps = append(stamps, time.Now())
				mu.Unlock()
				if bound.Add(1) == int64(nPods) {
					close(allBound)
				}
			}
		},
	}
	controllers := []manager.Controller{scheduler.Descriptor(scheduler.Config{})}
	if bindOnly {
		controllers = []manager.Controller{binder(nNodes, nPods, workers)}
	}
	if ownWatch {
		factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace("default"))
		inf := factory.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(counter); err != nil {
			return err
		}
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return errors.New("pod informer did not sync")
		}
	} else {
		controllers = append(controllers, manager.Controller{
			Name: "bench-binding-counter", ServiceAccount: scheduler.ServiceAccount,
			Start: func(_ context.Context, cc manager.ControllerContext) error {
				_, err := cc.InformerFactory.Core().V1().Pods().Informer().AddEventHandler(counter)
				return err
			},
		})
	}

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if memProfile != "" {
		if err := writeHeapProfile(memProfile + ".start"); err != nil {
			return err
		}
	}
	var cpuBefore, cpuAfter syscallRusage
	cpuBefore.read()
	schedStart := time.Now()
	scm := manager.DefaultConfig()
	scm.LeaderElect = false
	// As k1s server runs its scheduler: calling the apiserver in process.
	scm.InProcess = srv.InProcessClientConfig
	m, err := manager.New(scm, rc, controllers...)
	if err != nil {
		return err
	}
	mctx, mcancel := context.WithCancel(ctx)
	mDone := make(chan error, 1)
	go func() { mDone <- m.Run(mctx) }()
	defer func() {
		mcancel()
		<-mDone
	}()
	select {
	case <-allBound:
	case err := <-mDone:
		return fmt.Errorf("scheduler stopped: %w", err)
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("only %d of %d pods bound after 10m", bound.Load(), nPods)
	}
	end := time.Now()
	cpuAfter.read()
	if memProfile != "" {
		if err := writeHeapProfile(memProfile + ".end"); err != nil {
			return err
		}
	}

	mu.Lock()
	sort.Slice(stamps, func(i, j int) bool { return stamps[i].Before(stamps[j]) })
	first, last := stamps[0], stamps[len(stamps)-1]
	mu.Unlock()
	fmt.Printf("scheduler start → first binding:   %v (informer sync of %d pods, %d nodes)\n", first.Sub(schedStart).Round(time.Millisecond), nPods, nNodes)
	fmt.Printf("first → last binding:              %v\n", last.Sub(first).Round(time.Millisecond))
	fmt.Printf("throughput (first → last binding): %.0f pods/s\n", float64(nPods-1)/last.Sub(first).Seconds())
	fmt.Printf("throughput (scheduler start → all): %.0f pods/s\n", float64(nPods)/end.Sub(schedStart).Seconds())
	// Per-second samples, as upstream's scheduler_perf reports them.
	var samples []float64
	for t := first; t.Before(last); t = t.Add(time.Second) {
		i := sort.Search(len(stamps), func(i int) bool { return !stamps[i].Before(t) })
		j := sort.Search(len(stamps), func(i int) bool { return !stamps[i].Before(t.Add(time.Second)) })
		if t.Add(time.Second).After(last) {
			break
		}
		samples = append(samples, float64(j-i))
	}
	if len(samples) > 0 {
		sort.Float64s(samples)
		fmt.Printf("per-second samples:                min %.0f  p50 %.0f  max %.0f pods/s\n", samples[0], samples[len(samples)/2], samples[len(samples)-1])
	}
	fmt.Printf("process CPU while scheduling:      %.1f s user+sys over %.1f s wall (%d CPUs)\n",
		cpuAfter.seconds()-cpuBefore.seconds(), end.Sub(schedStart).Seconds(), runtime.NumCPU())
	if evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
		// client-go's event recorder drops what overflows its queue.
		fmt.Printf("events in default at the end:      %d\n", len(evs.Items))
	}
	return nil
}

// writeHeapProfile writes the heap profile, with every allocation since
// the start of the process, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// binder stands in for the scheduler with -bind-only: once the pods are
// listed, it sends the same pods/binding requests the scheduler would,
// with the scheduler's client settings and credentials, choosing nodes
// round-robin.
func binder(nNodes, nPods, workers int) manager.Controller {
	return manager.Controller{
		Name: "bench-binder", ServiceAccount: scheduler.ServiceAccount,
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			rc, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			rc.QPS, rc.Burst = -1, 0
			rc.ContentType = k8sruntime.ContentTypeProtobuf
			rc.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			pods := cc.InformerFactory.Core().V1().Pods()
			pods.Informer()
			cc.Go(func(ctx context.Context) error {
				if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
					return ctx.Err()
				}
				return parallel(nPods, workers, func(i int) error {
					name := fmt.Sprintf("pod-%05d", i)
					p, err := pods.Lister().Pods("default").Get(name)
					if err != nil {
						return err
					}
					return client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{
						ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: p.UID},
						Target:     corev1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("node-%04d", i%nNodes)},
					}, metav1.CreateOptions{})
				})
			})
			return nil
		},
	}
}
