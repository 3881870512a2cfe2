package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/tests/e2e/framework"
)

// TestK3sNodeFlags runs a server with k3s's node and join flags:
// --node-external-ip (the node's ExternalIP, servicelb's ingress),
// --kubelet-arg=max-pods (capacity and allocatable), --agent-token (its
// file and bootstrap Secret), --egress-selector-mode=disabled (logs
// through a direct connection to the agent) and --private-registry (the
// embedded containerd's hosts directory and config).
func TestK3sNodeFlags(t *testing.T) {
	s := framework.NewNodeServer(t)
	reg := filepath.Join(filepath.Dir(s.DataDir), "registries.yaml")
	if err := os.WriteFile(reg, []byte("mirrors:\n  docker.io:\n    endpoint: [\"https://registry.example.com:5000\"]\nconfigs:\n  registry.example.com:5000:\n    auth: {username: u, password: p}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Args = append(s.Args, "--node-external-ip=203.0.113.10", "--kubelet-arg=max-pods=7",
		"--agent-token=abcdef.0123456789abcdef", "--egress-selector-mode=disabled", "--private-registry", reg,
		"--system-default-registry=registry.example.com:5000")
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()

	t.Run("node addresses and pods capacity", func(t *testing.T) {
		n, err := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.10"}) {
			t.Errorf("addresses %v lack the ExternalIP", n.Status.Addresses)
		}
		cp, al := n.Status.Capacity[corev1.ResourcePods], n.Status.Allocatable[corev1.ResourcePods]
		if cp.Value() != 7 || al.Value() != 7 {
			t.Errorf("pods capacity %s allocatable %s, want 7", cp.String(), al.String())
		}
	})

	t.Run("servicelb advertises the external address", func(t *testing.T) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext-lb"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "none"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 18081}}}}
		if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var ing []corev1.LoadBalancerIngress
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := c.CoreV1().Services("default").Get(ctx, "ext-lb", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ing = got.Status.LoadBalancer.Ingress
			return len(ing) > 0, nil
		})
		if err != nil || len(ing) != 1 || ing[0].IP != "203.0.113.10" {
			t.Fatalf("load-balancer ingress %+v, want the node's ExternalIP 203.0.113.10 only", ing)
		}
	})

	t.Run("agent token", func(t *testing.T) {
		var tok jointoken.Token
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			data, err := os.ReadFile(filepath.Join(s.DataDir, "server", "agent-token"))
			if err != nil {
				return false, nil
			}
			tok, err = jointoken.Parse(string(data))
			return err == nil, nil
		})
		if err != nil || tok.ID != "abcdef" || tok.CAHash == "" {
			t.Fatalf("agent-token %v (%v), want id abcdef with the CA hash", tok, err)
		}
		if _, err := c.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{}); err != nil {
			t.Errorf("the agent token's bootstrap Secret: %v", err)
		}
		server, err := os.ReadFile(filepath.Join(s.DataDir, "server", "token"))
		if err != nil || strings.Contains(string(server), "abcdef.") {
			t.Errorf("server token %q (%v): want a token of its own", server, err)
		}
	})

	t.Run("logs with the tunnel disabled", func(t *testing.T) {
		create(t, c, newPod("echo", container("c", busybox, "sh", "-c", "echo hello-direct; sleep 3600")))
		framework.WaitPod(t, c, "default", "echo", 60*time.Second, "running", framework.Running)
		var out string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ = s.Kubectl(ctx, "logs", "echo")
			return strings.Contains(out, "hello-direct"), nil
		})
		if err != nil {
			t.Fatalf("kubectl logs: %q", out)
		}
	})

	t.Run("containerd's registry configuration", func(t *testing.T) {
		etc := filepath.Join(s.DataDir, "agent", "etc", "containerd")
		hosts, err := os.ReadFile(filepath.Join(etc, "certs.d", "docker.io", "hosts.toml"))
		if err != nil || !strings.Contains(string(hosts), `[host."https://registry.example.com:5000/v2"]`) {
			t.Errorf("docker.io hosts.toml %q (%v)", hosts, err)
		}
		cfg, err := os.ReadFile(filepath.Join(etc, "config.toml"))
		if err != nil || !strings.Contains(string(cfg), "config_path = \""+filepath.Join(etc, "certs.d")+"\"") ||
			!strings.Contains(string(cfg), `registry.configs."registry.example.com:5000".auth`) {
			t.Errorf("containerd config lacks the registry: %v\n%s", err, cfg)
		}
	})
}
