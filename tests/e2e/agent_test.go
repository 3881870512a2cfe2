package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// twoNodes is a server on a bridge the test makes and an agent in a
// network namespace of its own on that bridge: its own address, data dir,
// run dir and containerd; only the test's addresses are used.
type twoNodes struct {
	server              *framework.Server
	bridge, netns       string
	serverIP, agentIP   string
	agentData, agentRun string
	agent               *exec.Cmd
	agentLog            string
}

const agentNodeName = "e2e-node2"

func setUpTwoNodes(t *testing.T) *twoNodes {
	t.Helper()
	id := fmt.Sprintf("%d", os.Getpid()%10000)
	n := &twoNodes{
		bridge: "k1se2e" + id, netns: "k1se2e-" + id,
		serverIP: "10.99.0.1", agentIP: "10.99.0.2",
		agentRun: "/run/k1s-e2e" + id,
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "add", n.bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", n.bridge).Run() })
	run("ip", "addr", "add", n.serverIP+"/24", "dev", n.bridge)
	run("ip", "link", "set", n.bridge, "up")
	run("ip", "netns", "add", n.netns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.netns).Run() })
	run("ip", "link", "add", "v"+n.netns, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
	run("ip", "link", "set", "v"+n.netns, "master", n.bridge, "up")
	run("ip", "-n", n.netns, "addr", "add", n.agentIP+"/24", "dev", "eth0")
	run("ip", "-n", n.netns, "link", "set", "eth0", "up")
	run("ip", "-n", n.netns, "link", "set", "lo", "up")
	// No default route: node 2 reaches the server's subnet and, through
	// the server's host, Service IPs, nothing else.
	run("ip", "-n", n.netns, "route", "add", "10.43.0.0/16", "via", n.serverIP)

	n.server = framework.NewNodeServer(t)
	n.server.Args = append(replaceFlag(n.server.Args, "--bind-address", "0.0.0.0"), "--node-ip", n.serverIP)
	n.server.Start(t)
	n.server.WaitNodeReady(t, 60*time.Second)

	n.agentData = filepath.Join(t.TempDir(), "agent-data")
	images := filepath.Join(n.agentData, "agent", "images")
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
	n.agentLog = filepath.Join(t.TempDir(), "agent.log")
	// Runs after the agent's stop (cleanups run last-registered first).
	t.Cleanup(func() { framework.RemoveCgroupTree(t, framework.CgroupRoot(agentNodeName)) })
	t.Cleanup(func() { n.stopAgent(t, true) })
	return n
}

// agentCmd runs k1s in the agent's network namespace. nsenter, not `ip
// netns exec`: that remounts /sys and hides the cgroup mounts runc needs.
func (n *twoNodes) agentCmd(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + n.netns, n.server.Bin}, args...)...)
}

func (n *twoNodes) agentArgs(token string) []string {
	return []string{"agent", "--server", fmt.Sprintf("https://%s:%d", n.serverIP, n.server.Port),
		"--token", token, "--data-dir", n.agentData, "--run-dir", n.agentRun,
		"--node-name", agentNodeName, "--node-ip", n.agentIP, "--node-label", "e2e/second=true",
		"--cgroup-root", framework.CgroupRoot(agentNodeName)}
}

func (n *twoNodes) startAgent(t *testing.T, token string) {
	t.Helper()
	log, err := os.OpenFile(n.agentLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	n.agent = n.agentCmd(n.agentArgs(token)...)
	n.agent.Stdout, n.agent.Stderr = log, log
	n.agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.agent.Wait(); log.Close() }()
}

// stopAgent kills the agent (and, with killall, everything it started).
func (n *twoNodes) stopAgent(t *testing.T, killall bool) {
	if n.agent != nil && n.agent.Process != nil {
		_ = syscall.Kill(-n.agent.Process.Pid, syscall.SIGKILL)
		time.Sleep(200 * time.Millisecond)
		n.agent = nil
	}
	if killall {
		if out, err := n.agentCmd("killall", "--data-dir", n.agentData, "--run-dir", n.agentRun).CombinedOutput(); err != nil {
			t.Errorf("k1s killall of the agent: %v\n%s", err, out)
		}
		if t.Failed() {
			if b, err := os.ReadFile(n.agentLog); err == nil {
				t.Logf("agent log (last 4 KiB):\n%s", tail(b, 4096))
			}
		}
	}
}

// waitNodeReady waits for the node to be Ready and returns it.
func waitNodeReady(t *testing.T, c kubernetes.Interface, name string, within time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		nd, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = nd
		for _, cond := range nd.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("node %s not Ready within %s: %+v", name, within, node)
	}
	return node
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// diagnose logs both nodes' view of the pod network.
func (n *twoNodes) diagnose(t *testing.T, c kubernetes.Interface) {
	nodes, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err == nil {
		for _, nd := range nodes.Items {
			t.Logf("node %s: podCIDR %s addresses %v annotations %v", nd.Name, nd.Spec.PodCIDR, nd.Status.Addresses, nd.Annotations)
		}
	}
	for _, args := range [][]string{{"route"}, {"-d", "link", "show", "k1s.1"}, {"neigh", "show", "dev", "k1s.1"}, {"addr"}} {
		host, _ := exec.Command("ip", args...).CombinedOutput()
		node2, _ := exec.Command("ip", append([]string{"-n", n.netns}, args...)...).CombinedOutput()
		t.Logf("ip %s\nnode 1:\n%s\nnode 2:\n%s", strings.Join(args, " "), host, node2)
	}
	fdb, _ := exec.Command("bridge", "fdb", "show", "dev", "k1s.1").CombinedOutput()
	fdb2, _ := exec.Command("ip", "netns", "exec", n.netns, "bridge", "fdb", "show", "dev", "k1s.1").CombinedOutput()
	t.Logf("bridge fdb\nnode 1:\n%s\nnode 2:\n%s", fdb, fdb2)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// TestAgentJoins: a second node joins with the server's token, becomes
// Ready and runs pods; pods on the two nodes reach each other by pod IP,
// Service IP and DNS name; logs and exec reach node 2; bad tokens are
// refused with clear messages; node 2 restarts and keeps its pods.
func TestAgentJoins(t *testing.T) {
	n := setUpTwoNodes(t)
	ctx := context.Background()
	c := n.server.Client(t)
	tokenBytes, err := os.ReadFile(filepath.Join(n.server.DataDir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenBytes))

	t.Run("bad tokens are refused", func(t *testing.T) {
		hash, creds, _ := strings.Cut(strings.TrimPrefix(token, "K10"), "::")
		wrongHash := "K10" + strings.Repeat("0", len(hash)) + "::" + creds
		forged := "K10" + hash + "::abcdef.0123456789abcdef"
		// A bootstrap token whose Secret is still there (the cleaner may
		// not have run yet) but whose expiration has passed.
		expiredSecret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-expird", Namespace: metav1.NamespaceSystem},
			Type:       corev1.SecretTypeBootstrapToken,
			StringData: map[string]string{
				"token-id": "expird", "token-secret": "0123456789abcdef",
				"expiration":                     time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
				"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
				"auth-extra-groups": "system:bootstrappers:k1s:default-node-token",
			},
		}
		if _, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, expiredSecret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expired := "K10" + hash + "::expird.0123456789abcdef"
		for _, tc := range []struct{ token, want string }{
			{wrongHash, "does not match the join token's CA hash"},
			{forged, "refused the join token"},
			{expired, "refused the join token"},
			{creds, "--ca-file"},
		} {
			cmd := n.agentCmd(append(n.agentArgs(tc.token), "--data-dir", t.TempDir())...)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("token %q: err %v, want a message with %q:\n%s", tc.token, err, tc.want, tail(out, 2000))
			}
		}
	})

	n.startAgent(t, token)
	node2 := waitNodeReady(t, c, agentNodeName, 90*time.Second)
	if node2.Labels["e2e/second"] != "true" || node2.Spec.PodCIDR == "" {
		t.Fatalf("node 2: labels %v, pod CIDR %q", node2.Labels, node2.Spec.PodCIDR)
	}

	t.Run("another machine claiming node 2's name is refused", func(t *testing.T) {
		args := replaceFlag(n.agentArgs(token), "--data-dir", t.TempDir())
		out, err := n.agentCmd(args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "another machine holds the name") {
			t.Errorf("second %s: err %v, want a refusal naming the reason:\n%s", agentNodeName, err, tail(out, 2000))
		}
	})

	waitServiceAccount(t, c, "default")
	pinned := func(name, node string, cmd ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{corev1.LabelHostname: node},
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers:                    []corev1.Container{{Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: cmd}},
			},
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pinned("server1", framework.NodeName, "sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www")
	pinned("client2", agentNodeName, "sleep", "3600")
	s1 := framework.WaitPod(t, c, "default", "server1", 90*time.Second, "running", framework.Running)
	c2 := framework.WaitPod(t, c, "default", "client2", 90*time.Second, "running", framework.Running)
	if c2.Spec.NodeName != agentNodeName {
		t.Fatalf("client2 ran on %s", c2.Spec.NodeName)
	}
	if _, err := n.server.Kubectl(ctx, "expose", "pod", "server1", "--port=80", "--target-port=8080", "--name=server1"); err != nil {
		t.Fatal(err)
	}

	t.Run("a pod on node 2 reaches a pod on node 1 by IP, Service IP and name", func(t *testing.T) {
		svc, err := c.CoreV1().Services("default").Get(ctx, "server1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, url := range []string{"http://" + s1.Status.PodIP + ":8080/", "http://" + svc.Spec.ClusterIP + "/", "http://server1/", "http://server1.default.svc.cluster.local/"} {
			var out string
			err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				o, err := n.server.Kubectl(ctx, "exec", "client2", "--", "wget", "-q", "-O", "-", url)
				out = strings.TrimSpace(o)
				return err == nil && out == "server1", nil
			})
			if err != nil {
				t.Errorf("GET %s from node 2: %q", url, out)
			}
		}
		if t.Failed() {
			n.diagnose(t, c)
		}
	})

	t.Run("logs and exec reach node 2", func(t *testing.T) {
		out, err := n.server.Kubectl(ctx, "exec", "client2", "--", "sh", "-c", "echo from-node-2")
		if err != nil || !strings.Contains(out, "from-node-2") {
			t.Errorf("exec: %v %q", err, out)
		}
		if _, err := n.server.Kubectl(ctx, "logs", "client2"); err != nil {
			t.Errorf("logs: %v", err)
		}
	})

	t.Run("node 2 restarts and keeps its pods", func(t *testing.T) {
		before := framework.WaitPod(t, c, "default", "client2", 10*time.Second, "running", framework.Running).Status.ContainerStatuses[0].ContainerID
		n.stopAgent(t, false)
		n.startAgent(t, "") // the node holds its certificates now: no token needed
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, false, func(ctx context.Context) (bool, error) {
			out, err := n.server.Kubectl(ctx, "exec", "client2", "--", "echo", "back")
			return err == nil && strings.Contains(out, "back"), nil
		}); err != nil {
			b, _ := os.ReadFile(n.agentLog)
			t.Fatalf("node 2 not back after its restart:\n%s", tail(b, 4000))
		}
		after := framework.WaitPod(t, c, "default", "client2", 10*time.Second, "running", framework.Running).Status.ContainerStatuses[0].ContainerID
		if before != after {
			t.Errorf("container restarted with the agent: %s then %s", before, after)
		}
	})

	// execOnNode2 polls until exec into client2 (through the agent's API)
	// works again.
	execOnNode2 := func(t *testing.T, within time.Duration) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, within, false, func(ctx context.Context) (bool, error) {
			out, err := n.server.Kubectl(ctx, "exec", "client2", "--", "echo", "back")
			return err == nil && strings.Contains(out, "back"), nil
		}); err != nil {
			b, _ := os.ReadFile(n.agentLog)
			t.Fatalf("exec on node 2 not back within %s:\n%s", within, tail(b, 4000))
		}
	}

	t.Run("the server restarts and node 2 reconnects on its own", func(t *testing.T) {
		start := time.Now()
		n.server.Stop(t)
		stopped := time.Now()
		if stopped.Sub(start) > 5*time.Second {
			b, _ := os.ReadFile(n.server.LogFile)
			t.Logf("server log:\n%s", tail(b, 12000))
		}
		n.server.Start(t)
		ready := time.Now()
		c = n.server.Client(t)
		execOnNode2(t, 60*time.Second)
		waitNodeReady(t, c, agentNodeName, 60*time.Second)
		t.Logf("server stopped in %s, ready in %s, node 2 reached in %s", stopped.Sub(start), ready.Sub(stopped), time.Since(ready))
	})

	t.Run("node 2 deleted from the API rejoins under its name when restarted", func(t *testing.T) {
		if err := c.CoreV1().Nodes().Delete(ctx, agentNodeName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		n.stopAgent(t, false)
		n.startAgent(t, "")
		waitNodeReady(t, c, agentNodeName, 60*time.Second)
		// Its pods went with the Node (pod GC); a new pod runs there.
		pinned("client2b", agentNodeName, "sleep", "3600")
		framework.WaitPod(t, c, "default", "client2b", 90*time.Second, "running", framework.Running)
	})

	t.Run("node 2's address changes and its pods stay reachable after the agent restarts", func(t *testing.T) {
		n.stopAgent(t, false)
		const newIP = "10.99.0.3"
		for _, args := range [][]string{
			{"addr", "del", n.agentIP + "/24", "dev", "eth0"},
			{"addr", "add", newIP + "/24", "dev", "eth0"},
			{"route", "replace", "10.43.0.0/16", "via", n.serverIP},
		} {
			if out, err := exec.Command("ip", append([]string{"-n", n.netns}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
		}
		n.agentIP = newIP
		n.startAgent(t, "")
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			nd, err := c.CoreV1().Nodes().Get(ctx, agentNodeName, metav1.GetOptions{})
			return err == nil && internalIP(nd) == newIP, nil
		}); err != nil {
			b, _ := os.ReadFile(n.agentLog)
			t.Fatalf("node 2 does not report %s:\n%s", newIP, tail(b, 4000))
		}
		var out string
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			o, err := n.server.Kubectl(ctx, "exec", "client2b", "--", "wget", "-q", "-O", "-", "http://"+s1.Status.PodIP+":8080/")
			out = strings.TrimSpace(o)
			return err == nil && out == "server1", nil
		}); err != nil {
			n.diagnose(t, c)
			t.Fatalf("node 2's pod to node 1's pod after the address change: %q", out)
		}
	})

	t.Run("the server reaches node 2 through its tunnel when it cannot dial it", func(t *testing.T) {
		// As behind NAT: node 2 takes no new connection to its agent API
		// from outside (its own namespace's firewall, which goes with it).
		nft := exec.Command("ip", "netns", "exec", n.netns, "nft", "-f", "-")
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
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(n.agentIP, "10250"), time.Second); err == nil {
			c.Close()
			t.Fatal("node 2's agent API still answers a direct connection")
		}
		out, err := n.server.Kubectl(ctx, "exec", "client2b", "--", "echo", "through-the-tunnel")
		if err != nil || !strings.Contains(out, "through-the-tunnel") {
			b, _ := os.ReadFile(n.agentLog)
			t.Fatalf("exec on node 2 behind its firewall: %v %q\n%s", err, out, tail(b, 3000))
		}
		if _, err := n.server.Kubectl(ctx, "logs", "client2b"); err != nil {
			t.Errorf("logs on node 2 behind its firewall: %v", err)
		}
	})
}
