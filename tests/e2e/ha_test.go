package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// haCluster is three servers, each in a network namespace of its own on
// a bridge the test makes (10.99.1.11–13, bound to those addresses), and
// an agent in a fourth (10.99.1.14) joined to server 1. The host holds
// 10.99.1.1 on the bridge to reach them; no namespace has a default
// route, so nothing leaves the machine.
type haCluster struct {
	bridge  string
	netns   []string // servers', then the agent's
	ips     []string
	servers []*framework.Server
	token   string

	agent                         *exec.Cmd
	agentDone                     chan struct{} // closed when the agent process exits
	agentData, agentRun, agentLog string
}

const (
	haHostIP    = "10.99.1.1"
	haAgentNode = "e2e-ha-agent"
	haPort      = 6443
)

func setUpHA(t *testing.T) *haCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	id := fmt.Sprintf("%d", os.Getpid()%10000)
	h := &haCluster{bridge: "k1sha" + id, agentRun: "/run/k1s-ha" + id}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "add", h.bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", h.bridge).Run() })
	run("ip", "addr", "add", haHostIP+"/24", "dev", h.bridge)
	run("ip", "link", "set", h.bridge, "up")
	for i := 1; i <= 4; i++ {
		ns, ip := fmt.Sprintf("k1sha%s-%d", id, i), fmt.Sprintf("10.99.1.1%d", i)
		run("ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		run("ip", "link", "add", "v"+ns, "type", "veth", "peer", "name", "eth0", "netns", ns)
		run("ip", "link", "set", "v"+ns, "master", h.bridge, "up")
		run("ip", "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
		run("ip", "-n", ns, "link", "set", "eth0", "up")
		run("ip", "-n", ns, "link", "set", "lo", "up")
		h.netns, h.ips = append(h.netns, ns), append(h.ips, ip)
	}
	return h
}

// startServer starts server i (0-based): the first with --cluster-init,
// the others joining the first.
func (h *haCluster) startServer(t *testing.T, i int) *framework.Server {
	t.Helper()
	s := framework.NewServer(t)
	s.Netns, s.Host, s.Port = h.netns[i], h.ips[i], haPort
	s.Args = replaceFlag(replaceFlag(s.Args, "--bind-address", h.ips[i]), "--https-listen-port", fmt.Sprint(haPort))
	s.Args = append(s.Args, "--node-ip", h.ips[i], "--node-name", fmt.Sprintf("e2e-ha-server-%d", i+1))
	if i == 0 {
		s.Args = append(s.Args, "--cluster-init")
	} else {
		s.Args = append(s.Args, "--server", h.url(0), "--token", h.token)
	}
	s.Start(t)
	h.servers = append(h.servers, s)
	if i == 0 {
		if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			b, err := os.ReadFile(filepath.Join(s.DataDir, "server", "token"))
			h.token = strings.TrimSpace(string(b))
			return err == nil && h.token != "", nil
		}); err != nil {
			t.Fatal("server 1 wrote no token")
		}
	}
	return s
}

func (h *haCluster) url(i int) string { return fmt.Sprintf("https://%s:%d", h.ips[i], haPort) }

// client is an admin client of server i (its kubeconfig names its
// address).
func (h *haCluster) client(t *testing.T, i int) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", h.servers[i].Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 15 * time.Second
	return kubernetes.NewForConfigOrDie(cfg)
}

type haMember struct {
	Name      string   `json:"name"`
	PeerURLs  []string `json:"peerURLs"`
	IsLearner bool     `json:"isLearner"`
}

// members lists the etcd members through server i, with the server token.
func (h *haCluster) members(t *testing.T, i int) []haMember {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url(i)+"/v1-k1s/etcd-members", nil)
	_, bearer, _ := strings.Cut(h.token, "::")
	req.SetBasicAuth("server", bearer)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ms []haMember
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ms) != nil {
		t.Fatalf("etcd members through server %d: %s", i+1, resp.Status)
	}
	return ms
}

// waitAPIServers waits until the kubernetes endpoints list exactly ips.
func waitAPIServers(t *testing.T, c kubernetes.Interface, ips ...string) {
	t.Helper()
	var got []string
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		eps, err := c.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = nil
		for _, ss := range eps.Subsets {
			for _, a := range ss.Addresses {
				got = append(got, a.IP)
			}
		}
		slices.Sort(got)
		return slices.Equal(got, ips), nil
	}); err != nil {
		t.Fatalf("kubernetes endpoints %v, want %v", got, ips)
	}
}

func (h *haCluster) startAgent(t *testing.T) {
	t.Helper()
	if h.agentData == "" {
		h.agentData = filepath.Join(t.TempDir(), "agent-data")
		images := filepath.Join(h.agentData, "agent", "images")
		if err := os.MkdirAll(images, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(framework.ImagesDir(t))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tar") {
				if err := os.Link(filepath.Join(framework.ImagesDir(t), e.Name()), filepath.Join(images, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		h.agentLog = filepath.Join(t.TempDir(), "agent.log")
		t.Cleanup(func() { framework.RemoveCgroupTree(t, framework.CgroupRoot(haAgentNode)) })
		t.Cleanup(func() { h.stopAgent(t) })
	}
	log, err := os.OpenFile(h.agentLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	h.agent = exec.Command("nsenter", "--net=/run/netns/"+h.netns[3], h.servers[0].Bin, "agent",
		"--server", h.url(0), "--token", h.token, "--data-dir", h.agentData, "--run-dir", h.agentRun,
		"--node-name", haAgentNode, "--node-ip", h.ips[3], "--cgroup-root", framework.CgroupRoot(haAgentNode))
	h.agent.Stdout, h.agent.Stderr = log, log
	h.agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.agent.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, done := h.agent, make(chan struct{})
	h.agentDone = done
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
}

// killAgent kills the agent's process group (by pid) and waits for it;
// its containers go on in their shims.
func (h *haCluster) killAgent() {
	if h.agent != nil && h.agent.Process != nil {
		_ = syscall.Kill(-h.agent.Process.Pid, syscall.SIGKILL)
		select {
		case <-h.agentDone:
		case <-time.After(10 * time.Second):
		}
		h.agent = nil
	}
}

func (h *haCluster) stopAgent(t *testing.T) {
	h.killAgent()
	out, err := exec.Command("nsenter", "--net=/run/netns/"+h.netns[3], h.servers[0].Bin, "killall", "--data-dir", h.agentData, "--run-dir", h.agentRun).CombinedOutput()
	if err != nil {
		t.Errorf("k1s killall of the agent: %v\n%s", err, out)
	}
	if t.Failed() {
		if b, err := os.ReadFile(h.agentLog); err == nil {
			t.Logf("agent log (last 6 KiB):\n%s", tail(b, 6144))
		}
	}
}

// runPod creates a pod on the agent's node and waits for it to run.
func runPod(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}},
		},
	}
	var err error
	for range 30 { // an apiserver may be between etcd leaders for a moment
		if _, err = c.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	got := framework.WaitPod(t, c, "default", name, 90*time.Second, "running", framework.Running)
	if got.Spec.NodeName != haAgentNode {
		t.Fatalf("pod %s ran on %s", name, got.Spec.NodeName)
	}
}

// TestHAServers: three servers form one etcd cluster (server 1 with
// --cluster-init, the others joining with its token); every apiserver is
// listed in the kubernetes endpoints; an agent joins and runs pods; with
// one server stopped, writes and scheduling go on.
func TestHAServers(t *testing.T) {
	framework.ImagesDir(t)
	h := setUpHA(t)
	ctx := context.Background()
	for i := range 3 {
		h.startServer(t, i)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range h.servers {
				t.Logf("server %d log (last 4 KiB):\n%s", i+1, tail([]byte(s.Log()), 4096))
			}
		}
	})

	ms := h.members(t, 2)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
		if m.IsLearner || len(m.PeerURLs) != 1 || !strings.HasPrefix(m.PeerURLs[0], "https://10.99.1.1") {
			t.Errorf("etcd member %+v: want a voting member with a TLS peer URL on its server's address", m)
		}
	}
	slices.Sort(names)
	if len(names) != 3 || !strings.HasPrefix(names[0], "e2e-ha-server-1-") || !strings.HasPrefix(names[2], "e2e-ha-server-3-") {
		t.Fatalf("etcd members %v, want one per server", names)
	}
	c1 := h.client(t, 0)
	waitAPIServers(t, c1, h.ips[0], h.ips[1], h.ips[2])

	h.startAgent(t)
	waitNodeReady(t, c1, haAgentNode, 90*time.Second)
	waitServiceAccount(t, c1, "default")
	runPod(t, c1, "before")

	t.Run("with one server of three stopped, writes and scheduling go on", func(t *testing.T) {
		h.servers[2].Stop(t)
		c2 := h.client(t, 1)
		if _, err := c2.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("write with server 3 stopped: %v", err)
		}
		runPod(t, c2, "one-down")
		waitAPIServers(t, c1, h.ips[0], h.ips[1])
		// Server 3 comes back on its data: a member again.
		h.servers[2].Start(t)
		waitAPIServers(t, c1, h.ips[0], h.ips[1], h.ips[2])
		if ms := h.members(t, 2); len(ms) != 3 {
			t.Errorf("etcd members after server 3's restart: %+v", ms)
		}
	})

	t.Run("the agent fails over when the server it joined through stops", func(t *testing.T) {
		// The agent learnt every server and keeps the list.
		h.waitKeptServers(t, h.ips[0], h.ips[1], h.ips[2])
		c2 := h.client(t, 1)
		stopped := time.Now()
		h.servers[0].Stop(t)
		waitAPIServers(t, c2, h.ips[1], h.ips[2])
		// Its node stays Ready: the agent renews its lease through
		// another server.
		h.waitLeaseRenewed(t, c2, stopped)
		waitNodeReady(t, c2, haAgentNode, 5*time.Second)
		h.waitKeptServers(t, h.ips[1], h.ips[2])
		// New pods come to it (its pod watch moved too) and run.
		runPod(t, c2, "after-failover")
		// Server 2 reaches the node's API, here through the tunnel the
		// agent keeps to every server: the node takes no new connection
		// to its API from outside, as behind NAT (its own namespace's
		// firewall, which goes with it).
		nft := exec.Command("ip", "netns", "exec", h.netns[3], "nft", "-f", "-")
		nft.Stdin = strings.NewReader(`table inet e2e-nat {
	chain in {
		type filter hook input priority 0;
		iifname "eth0" tcp dport 10250 ct state new drop
	}
}
`)
		if out, err := nft.CombinedOutput(); err != nil {
			t.Fatalf("nft: %v: %s", err, out)
		}
		h.waitExec(t, 1, "after-failover", 30*time.Second)
		if !strings.Contains(h.agentLogText(), "Switched API server") {
			t.Error("the agent's log does not say it switched servers")
		}
	})

	t.Run("the agent restarts while the server it joined through is down", func(t *testing.T) {
		c2 := h.client(t, 1)
		h.killAgent()
		restarted := time.Now()
		h.startAgent(t) // still --server <server 1>: the kept list finds the others
		h.waitLeaseRenewed(t, c2, restarted)
		waitNodeReady(t, c2, haAgentNode, 30*time.Second)
		h.waitExec(t, 1, "after-failover", 60*time.Second)
		runPod(t, c2, "after-restart")
	})
}

// waitKeptServers waits until the agent's kept list of API servers names
// exactly ips (at the servers' port).
func (h *haCluster) waitKeptServers(t *testing.T, ips ...string) {
	t.Helper()
	var want []string
	for _, ip := range ips {
		want = append(want, fmt.Sprintf("%s:%d", ip, haPort))
	}
	var got struct {
		Servers []string `json:"servers"`
	}
	file := filepath.Join(h.agentData, "agent", "apiservers.json")
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(file)
		if err != nil || json.Unmarshal(b, &got) != nil {
			return false, nil
		}
		slices.Sort(got.Servers)
		return slices.Equal(got.Servers, want), nil
	}); err != nil {
		t.Fatalf("the agent keeps the API servers %v in %s, want %v", got.Servers, file, want)
	}
}

// waitLeaseRenewed waits until the agent's node lease, read through c,
// was renewed after since.
func (h *haCluster) waitLeaseRenewed(t *testing.T, c kubernetes.Interface, since time.Time) {
	t.Helper()
	var renewed time.Time
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, haAgentNode, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false, nil
		}
		renewed = l.Spec.RenewTime.Time
		return renewed.After(since), nil
	}); err != nil {
		t.Fatalf("node lease last renewed %s, not after %s:\n%s", renewed, since, tail([]byte(h.agentLogText()), 4096))
	}
}

// waitExec waits until `kubectl exec` into pod through server i works.
func (h *haCluster) waitExec(t *testing.T, i int, pod string, within time.Duration) {
	t.Helper()
	var out string
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		o, err := h.servers[i].Kubectl(ctx, "exec", pod, "--", "echo", "reached")
		out = o
		return err == nil && strings.Contains(o, "reached"), nil
	}); err != nil {
		t.Fatalf("exec into %s through server %d: %q", pod, i+1, out)
	}
}

func (h *haCluster) agentLogText() string {
	b, _ := os.ReadFile(h.agentLog)
	return string(b)
}
