// Command agent benchmarks `k1s agent`: the time from starting it to its
// Node being Ready, for a first join (join token, CA check, client and
// serving certificates by CSR, registration) and for a restart of a node
// whose Node was deleted (certificates kept, registration again), and the
// idle memory of the agent with its embedded containerd. Needs root and
// ip(8); prints figures for docs/BENCHMARKS.md.
//
//	make build && go run -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo ./tests/bench/agent -bin bin/k1s
//
// It starts `k1s server --disable-agent` (control plane only, loopback, a
// temporary data dir, free ports) and one network namespace of its own
// (`ip netns add k1s-bench-agent-<pid>`, deleted afterwards with all it
// holds): a veth pair with both ends inside it, 10.252.0.2/24 on eth0 as
// the node's address, and the apiserver's 127.0.0.1:<port> relayed into
// it (benchenv.ForwardAPI). The agent runs there through `nsenter
// --net` with a data dir and run dir of the benchmark's own; its proxy
// rules, DNS link and VXLAN device live in the namespace. Nothing is sent
// outside it but the relayed apiserver connections.
//
// -runs times: a new node name (bench-agent-<n>) with no certificates
// (the data dir, and so containerd's image store, is kept from run to
// run: a warm machine), start → Node Ready; then -settle of idle and the
// RSS of the agent and of containerd; then the Node is deleted and the
// agent restarted: start → Node Ready again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/k1s/k1s/tests/bench/benchenv"
)

type options struct {
	bin    string
	runs   int
	settle time.Duration
	keep   bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/k1s", "k1s binary")
	flag.IntVar(&o.runs, "runs", 3, "runs, each a first join and a restart")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "idle time after Ready before reading memory")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, data dirs)")
	flag.Parse()
	err := run(benchenv.SignalContext(), o)
	benchenv.Cleanup.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type figures struct {
	join, restart         time.Duration
	agentMB, containerdMB float64
}

func run(ctx context.Context, o options) error {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "k1s-bench-agent")
	if err != nil {
		return err
	}
	if !o.keep {
		benchenv.Cleanup.Add(func() { os.RemoveAll(dir) })
	} else {
		fmt.Fprintln(os.Stderr, "bench: keeping", dir)
	}
	cp, err := benchenv.StartControlPlane(ctx, bin, dir)
	if err != nil {
		return err
	}
	benchenv.Cleanup.Add(cp.Proc.Stop)
	restCfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	tokenFile := filepath.Join(dir, "data", "server", "token")
	for start := time.Now(); ; {
		if b, err := os.ReadFile(tokenFile); err == nil && len(b) > 0 {
			break
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("no join token at %s", tokenFile)
		}
		if err := benchenv.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}

	ns, err := benchenv.NewNetns(fmt.Sprintf("k1s-bench-agent-%d", os.Getpid()))
	if err != nil {
		return err
	}
	for _, args := range [][]string{
		{"link", "add", "eth0", "type", "veth", "peer", "name", "eth1"},
		{"addr", "add", "10.252.0.2/24", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"link", "set", "eth1", "up"},
	} {
		if err := ns.IP(args...); err != nil {
			return err
		}
	}
	if _, err := benchenv.ForwardAPI(ns, cp.Port); err != nil {
		return err
	}
	dataDir := filepath.Join(dir, "agent-data")
	runDir := fmt.Sprintf("/run/k1sba%d", os.Getpid()%100000)
	killall := func() {
		out, err := exec.Command("nsenter", "--net=/run/netns/"+ns.Name, bin, "killall", "--data-dir", dataDir, "--run-dir", runDir).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: k1s killall: %v\n%s", err, out)
		}
		os.Remove(runDir)
	}
	benchenv.Cleanup.Add(killall)

	agentArgs := func(name string) []string {
		return []string{"nsenter", "--net=/run/netns/" + ns.Name, bin, "agent",
			"--server", fmt.Sprintf("https://127.0.0.1:%d", cp.Port), "--token-file", tokenFile,
			"--data-dir", dataDir, "--run-dir", runDir, "--node-name", name, "--node-ip", "10.252.0.2"}
	}
	var all []figures
	for r := 1; r <= o.runs; r++ {
		name := fmt.Sprintf("bench-agent-%d", r)
		if err := os.RemoveAll(filepath.Join(dataDir, "agent", "tls")); err != nil {
			return err
		}
		var f figures
		log := filepath.Join(dir, fmt.Sprintf("agent-%d.log", r))
		start := time.Now()
		agent, err := benchenv.StartChild("k1s agent", log, agentArgs(name)...)
		if err != nil {
			return err
		}
		if f.join, err = waitReady(ctx, client, name, start, agent); err != nil {
			agent.Stop()
			return err
		}
		if err := benchenv.Sleep(ctx, o.settle); err != nil {
			agent.Stop()
			return err
		}
		f.agentMB = benchenv.ProcStatusMB(agent.Pid(), "VmRSS")
		for _, pid := range children(agent.Pid()) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(comm), "containerd") {
				f.containerdMB += benchenv.ProcStatusMB(pid, "VmRSS")
			}
		}
		agent.Stop()
		if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete node %s: %w", name, err)
		}
		start = time.Now()
		agent, err = benchenv.StartChild("k1s agent", log, agentArgs(name)...)
		if err != nil {
			return err
		}
		f.restart, err = waitReady(ctx, client, name, start, agent)
		agent.Stop()
		if err != nil {
			return err
		}
		// The next run's node takes this one's address: a serving
		// certificate is approved only for addresses no other node has.
		if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete node %s: %w", name, err)
		}
		fmt.Printf("run %d  join → Ready %6.0f ms | restart (Node deleted) → Ready %6.0f ms | idle RSS agent %.1f MB + containerd %.1f MB = %.1f MB\n",
			r, benchenv.MS(f.join), benchenv.MS(f.restart), f.agentMB, f.containerdMB, f.agentMB+f.containerdMB)
		all = append(all, f)
	}
	pick := func(fn func(figures) float64) []float64 {
		var vs []float64
		for _, f := range all {
			vs = append(vs, fn(f))
		}
		return vs
	}
	fmt.Printf("\n== %d runs; min / median / max\n", len(all))
	fmt.Printf("start → Node Ready, first join (ms)     %s\n", benchenv.Spread(pick(func(f figures) float64 { return benchenv.MS(f.join) }), "%.0f"))
	fmt.Printf("start → Node Ready, restart (ms)        %s\n", benchenv.Spread(pick(func(f figures) float64 { return benchenv.MS(f.restart) }), "%.0f"))
	fmt.Printf("idle RSS, k1s agent (MB)                %s\n", benchenv.Spread(pick(func(f figures) float64 { return f.agentMB }), "%.1f"))
	fmt.Printf("idle RSS, containerd (MB)               %s\n", benchenv.Spread(pick(func(f figures) float64 { return f.containerdMB }), "%.1f"))
	total := pick(func(f figures) float64 { return f.agentMB + f.containerdMB })
	fmt.Printf("idle RSS, agent + containerd (MB)       %s\n", benchenv.Spread(total, "%.1f"))
	joins := pick(func(f figures) float64 { return benchenv.MS(f.join) })
	fmt.Printf("goal start → Ready ≤ 1000 ms (median first join): %.0f ms: %s\n", benchenv.Median(joins), verdict(benchenv.Median(joins) <= 1000))
	fmt.Printf("goal idle memory ≤ 60 MB (median): %.1f MB: %s\n", benchenv.Median(total), verdict(benchenv.Median(total) <= 60))
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// waitReady polls the Node every 5 ms until it is Ready and returns the
// time since start.
func waitReady(ctx context.Context, client kubernetes.Interface, name string, start time.Time, agent *benchenv.Child) (time.Duration, error) {
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return time.Since(start), nil
				}
			}
		}
		if agent.Exited() {
			return 0, fmt.Errorf("k1s agent exited: %s", agent.Tail())
		}
		if time.Since(start) > 2*time.Minute {
			return 0, fmt.Errorf("node %s not Ready within 2m: %s", name, agent.Tail())
		}
		if err := benchenv.Sleep(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// children are pid's child processes.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			var c int
			if _, err := fmt.Sscan(f, &c); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
