package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// TestCgroups: pods run in upstream's cgroupfs QoS tree with their
// summed limits, a container over its memory limit is OOM-killed,
// restarted and reported, a cpu limit caps usage, and allocatable
// reflects --kube-reserved and --eviction-hard. cgroup v1 (this machine's).
func TestCgroups(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("the assertions read cgroup v1 files; this host runs cgroup v2")
	}
	s := framework.NewNodeServer(t)
	s.Args = append(s.Args, "--kube-reserved", "cpu=100m,memory=256Mi", "--eviction-hard", "memory.available<100Mi,nodefs.available<1%", "--pod-max-pids", "1000")
	s.Start(t)
	s.WaitNodeReady(t, 90*time.Second)
	c := s.Client(t)
	ctx := context.Background()

	t.Run("allocatable", func(t *testing.T) {
		n, err := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		capMem, allocMem := n.Status.Capacity.Memory().Value(), n.Status.Allocatable.Memory().Value()
		if want := capMem - (256+100)<<20; allocMem != want {
			t.Errorf("allocatable memory %d, want capacity %d − 256Mi kube-reserved − 100Mi eviction = %d", allocMem, capMem, want)
		}
		capCPU, allocCPU := n.Status.Capacity.Cpu().MilliValue(), n.Status.Allocatable.Cpu().MilliValue()
		if allocCPU != capCPU-100 {
			t.Errorf("allocatable cpu %dm, want %dm − 100m", allocCPU, capCPU)
		}
		capDisk, allocDisk := n.Status.Capacity.StorageEphemeral().Value(), n.Status.Allocatable.StorageEphemeral().Value()
		if want := capDisk - int64(float64(capDisk)*float64(float32(0.01))); allocDisk != want {
			t.Errorf("allocatable ephemeral-storage %d, want %d (capacity %d − 1%%)", allocDisk, want, capDisk)
		}
		// kubepods is limited to capacity less the reservations (not the
		// eviction threshold), page-rounded by the kernel.
		if lim := cgReadInt(t, "memory", "/kubepods", "memory.limit_in_bytes"); lim > capMem-256<<20 || lim < capMem-256<<20-4096 {
			t.Errorf("kubepods memory limit %d, want %d", lim, capMem-256<<20)
		}
		if sh := cgReadInt(t, "cpu", "/kubepods", "cpu.shares"); sh != (capCPU-100)*1024/1000 {
			t.Errorf("kubepods cpu.shares %d, want %d", sh, (capCPU-100)*1024/1000)
		}
		if sh := cgReadInt(t, "cpu", "/kubepods/besteffort", "cpu.shares"); sh != 2 {
			t.Errorf("besteffort cpu.shares %d, want 2", sh)
		}
	})

	sleeper := func(name string, req, lim corev1.ResourceList) *corev1.Pod {
		p := newPod(name, container("main", busybox, "sleep", "3600"))
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: lim}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		return p
	}
	pods := []*corev1.Pod{
		sleeper("guaranteed", cgRL("200m", "64Mi"), cgRL("200m", "64Mi")),
		sleeper("burstable", cgRL("100m", "32Mi"), cgRL("", "128Mi")),
		sleeper("besteffort", nil, nil),
	}
	for _, p := range pods {
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running := map[string]*corev1.Pod{}
	for _, p := range pods {
		running[p.Name] = framework.WaitPod(t, c, "default", p.Name, 90*time.Second, "Running", framework.Running)
	}

	t.Run("tree matches QoS classes", func(t *testing.T) {
		want := map[string]struct {
			qos    corev1.PodQOSClass
			dir    string
			shares int64
			quota  int64
			memory int64 // 0: unlimited
		}{
			"guaranteed": {corev1.PodQOSGuaranteed, "/kubepods", 204, 20000, 64 << 20},
			"burstable":  {corev1.PodQOSBurstable, "/kubepods/burstable", 102, -1, 128 << 20},
			"besteffort": {corev1.PodQOSBestEffort, "/kubepods/besteffort", 2, -1, 0},
		}
		for name, w := range want {
			p := running[name]
			if p.Status.QOSClass != w.qos {
				t.Errorf("%s: qosClass %s, want %s", name, p.Status.QOSClass, w.qos)
			}
			cg := w.dir + "/pod" + string(p.UID)
			if got := cgReadInt(t, "cpu", cg, "cpu.shares"); got != w.shares {
				t.Errorf("%s: %s cpu.shares %d, want %d", name, cg, got, w.shares)
			}
			if got := cgReadInt(t, "cpu", cg, "cpu.cfs_quota_us"); got != w.quota {
				t.Errorf("%s: %s cpu.cfs_quota_us %d, want %d", name, cg, got, w.quota)
			}
			mem := cgReadInt(t, "memory", cg, "memory.limit_in_bytes")
			if (w.memory == 0 && mem < 1<<60) || (w.memory != 0 && mem != w.memory) {
				t.Errorf("%s: %s memory.limit_in_bytes %d, want %d (0: unlimited)", name, cg, mem, w.memory)
			}
			if got := cgReadInt(t, "pids", cg, "pids.max"); got != 1000 {
				t.Errorf("%s: %s pids.max %d, want 1000 (--pod-max-pids)", name, cg, got)
			}
			// The sandbox and the container run inside the pod cgroup.
			if n := len(cgSubdirs(t, "memory", cg)); n < 2 {
				t.Errorf("%s: %d cgroups under %s, want the sandbox's and the container's", name, n, cg)
			}
		}
		// The Burstable class's shares are its pods' cpu requests.
		if got, want := cgReadInt(t, "cpu", "/kubepods/burstable", "cpu.shares"), cgBurstableShares(t, c); got != want {
			t.Errorf("burstable cpu.shares %d, want %d", got, want)
		}
	})

	t.Run("cpu limit caps usage", func(t *testing.T) {
		p := newPod("burner", container("main", busybox, "sh", "-c", "while :; do :; done"))
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cgRL("200m", "16Mi"), Limits: cgRL("200m", "16Mi")}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p = framework.WaitPod(t, c, "default", "burner", 90*time.Second, "Running", framework.Running)
		cg := "/kubepods/pod" + string(p.UID)
		time.Sleep(time.Second) // past the start
		u0, t0 := cgReadInt(t, "cpuacct", cg, "cpuacct.usage"), time.Now()
		time.Sleep(3 * time.Second)
		u1, t1 := cgReadInt(t, "cpuacct", cg, "cpuacct.usage"), time.Now()
		cores := float64(u1-u0) / float64(t1.Sub(t0).Nanoseconds())
		t.Logf("burner used %.3f cores over %s", cores, t1.Sub(t0))
		if cores > 0.2*1.1 {
			t.Errorf("burner used %.3f cores, limit 0.2 (+10%%)", cores)
		}
		if cores < 0.1 {
			t.Errorf("burner used %.3f cores: not burning, the check proves nothing", cores)
		}
	})

	t.Run("OOM kill", func(t *testing.T) {
		p := newPod("oom", container("main", testapp))
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "ALLOC_MIB", Value: "256"}}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cgRL("", "32Mi"), Limits: cgRL("", "64Mi")}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p = framework.WaitPod(t, c, "default", "oom", 120*time.Second, "restarted after OOMKilled", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount >= 1 && cs[0].LastTerminationState.Terminated != nil &&
				cs[0].LastTerminationState.Terminated.Reason == "OOMKilled"
		})
		if code := p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode; code != 137 {
			t.Errorf("OOM-killed container exit code %d, want 137", code)
		}
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=oom"})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if e.Reason == "OOMKilling" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "container main") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("no OOMKilling event naming container main on pod oom")
		}
	})

	t.Run("removed pod's cgroup goes", func(t *testing.T) {
		p := running["besteffort"]
		if err := c.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join("/sys/fs/cgroup/memory/kubepods/besteffort", "pod"+string(p.UID))
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			_, err := os.Stat(dir)
			return os.IsNotExist(err), nil
		})
		if err != nil {
			t.Errorf("%s still there after the pod was deleted", dir)
		}
	})
}

func cgRL(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// readInt reads a cgroup v1 file of controller's hierarchy ("max" is -1).
func cgReadInt(t *testing.T, controller, cgroup, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, cgroup, file))
	if err != nil {
		t.Fatalf("read cgroup file: %v", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s/%s: %v", cgroup, file, err)
	}
	return v
}

func cgSubdirs(t *testing.T, controller, cgroup string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/sys/fs/cgroup", controller, cgroup))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// burstableShares is what the Burstable class's cpu.shares should be: the
// cpu requests of the node's running Burstable pods, as shares.
func cgBurstableShares(t *testing.T, c kubernetes.Interface) int64 {
	t.Helper()
	pods, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + framework.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	var milli int64
	for _, p := range pods.Items {
		if p.Status.QOSClass != corev1.PodQOSBurstable || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ct := range p.Spec.Containers {
			milli += ct.Resources.Requests.Cpu().MilliValue()
		}
	}
	shares := milli * 1024 / 1000
	if shares < 2 {
		shares = 2
	}
	return shares
}

// TestCgroupsUpgrade: a pod that runs in the runtime's flat cgroups (as
// every pod did before k1s had pod cgroups; --cgroups-per-qos=false makes
// that layout) keeps running in place, not restarted, when the node
// starts with pod cgroups; a new pod goes under kubepods.
func TestCgroupsUpgrade(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("the assertions read cgroup v1 files; this host runs cgroup v2")
	}
	s := framework.NewNodeServer(t)
	base := s.Args
	s.Args = append(append([]string{}, base...), "--cgroups-per-qos=false", "--enforce-node-allocatable=none")
	s.Start(t)
	s.WaitNodeReady(t, 90*time.Second)
	c := s.Client(t)
	ctx := context.Background()
	old := newPod("before", container("main", busybox, "sleep", "3600"))
	old.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	if _, err := c.CoreV1().Pods("default").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	old = framework.WaitPod(t, c, "default", "before", 90*time.Second, "Running", framework.Running)
	id := strings.TrimPrefix(old.Status.ContainerStatuses[0].ContainerID, "containerd://")
	flat := filepath.Join("/sys/fs/cgroup/memory/k8s.io", id)
	if _, err := os.Stat(flat); err != nil {
		t.Fatalf("container not in the flat layout: %v", err)
	}

	s.Stop(t)
	s.Args = base
	s.Start(t)
	s.WaitNodeReady(t, 90*time.Second)
	fresh := newPod("after", container("main", busybox, "sleep", "3600"))
	fresh.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	if _, err := c.CoreV1().Pods("default").Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh = framework.WaitPod(t, c, "default", "after", 90*time.Second, "Running", framework.Running)
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory/kubepods/besteffort", "pod"+string(fresh.UID))); err != nil {
		t.Errorf("new pod not under kubepods: %v", err)
	}
	// Give the agent a few syncs and housekeeping passes with the old pod.
	time.Sleep(5 * time.Second)
	p, err := c.CoreV1().Pods("default").Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].RestartCount != 0 || cs[0].State.Running == nil || strings.TrimPrefix(cs[0].ContainerID, "containerd://") != id {
		t.Fatalf("old pod's container restarted or stopped: %s", fmtStatuses(cs))
	}
	procs, err := os.ReadFile(filepath.Join(flat, "cgroup.procs"))
	if err != nil || len(strings.TrimSpace(string(procs))) == 0 {
		t.Errorf("old container's processes no longer in %s (%v)", flat, err)
	}
}

func fmtStatuses(cs []corev1.ContainerStatus) string {
	var b strings.Builder
	for _, s := range cs {
		b.WriteString(s.Name + " " + s.ContainerID + " restarts=" + strconv.Itoa(int(s.RestartCount)) + "; ")
	}
	return b.String()
}
