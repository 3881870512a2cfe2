package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/k1s/k1s/internal/bootstraptoken"
	"github.com/k1s/k1s/internal/jointoken"
)

func readAgentToken(t *testing.T, dataDir string) jointoken.Token {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "server", agentTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jointoken.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestAgentToken: without --agent-token, agent-token is the server token;
// with it, agent-token holds it with the CA's hash and its bootstrap
// Secret lets agents authenticate (node group), while the server join
// endpoints refuse it; a changed agent token retires the old one's Secret.
func TestAgentToken(t *testing.T) {
	ctx := context.Background()
	dataDir, ca := joinDataDir(t)
	client := fake.NewClientset()
	server := startJoinInfo(t, client, dataDir)
	if got := readAgentToken(t, dataDir); got != server {
		t.Fatalf("agent-token %v, want the server token %v", got, server)
	}

	run := func(bearer string) error {
		j := &joinInfo{client: client, dir: filepath.Join(dataDir, "server"), caFile: filepath.Join(dataDir, "server", "tls", "server-ca.crt"), retry: time.Millisecond, agentBearer: bearer}
		return j.ensure(ctx)
	}
	if err := run("abcdef.0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	agent := readAgentToken(t, dataDir)
	if agent.ID != "abcdef" || agent.CAHash != jointoken.Hash(ca) {
		t.Fatalf("agent-token %v, want id abcdef with the CA's hash", agent)
	}
	bt, ok := tokenSecret(t, client, "abcdef")
	if !ok || bt.Secret != "0123456789abcdef" || len(bt.Groups) != 1 || bt.Groups[0] != bootstraptoken.DefaultGroup {
		t.Fatalf("agent token secret %+v (found %v), want the node group", bt, ok)
	}
	if got := readJoinToken(t, dataDir); got != server {
		t.Errorf("the server token changed to %v", got)
	}

	// The server join endpoints take the server token only.
	c := &clusterEndpoints{serverDir: filepath.Join(dataDir, "server")}
	for _, tc := range []struct {
		bearer string
		want   bool
	}{{server.Bearer(), true}, {agent.Bearer(), false}} {
		req := httptest.NewRequest(http.MethodGet, "/v1-k1s/cluster/bootstrap", nil)
		req.SetBasicAuth(serverTokenUser, tc.bearer)
		rec := httptest.NewRecorder()
		if got := c.authorized(rec, req); got != tc.want {
			t.Errorf("server join with %s authorized=%v, want %v (%d %s)", tc.bearer[:6], got, tc.want, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
	}

	if err := run("ghijkl.0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokenSecret(t, client, "abcdef"); ok {
		t.Error("the replaced agent token's secret is still there")
	}
	if _, ok := tokenSecret(t, client, server.ID); !ok {
		t.Error("the server token's secret was deleted")
	}
	if err := run(server.Bearer()); err == nil || !strings.Contains(err.Error(), "--agent-token: the agent token has the server token's id") {
		t.Errorf("an agent token equal to the server token: %v", err)
	}
}

func TestNodeOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "registries.yaml")
	if err := os.WriteFile(bad, []byte("mirrors:\n  docker.io:\n    endpoints: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    NodeOptions
		want string
	}{
		{"ok", NodeOptions{NodeExternalIPs: []string{"203.0.113.1,2001:db8::1"}, EgressSelectorMode: "disabled", MaxPods: 250,
			PrivateRegistry: filepath.Join(dir, "missing.yaml"), SystemDefaultRegistry: "registry.example.com:5000", AgentToken: "abcdef.0123456789abcdef"}, ""},
		{"registries file", NodeOptions{PrivateRegistry: bad}, "--private-registry " + bad + ": "},
		{"external ip", NodeOptions{NodeExternalIPs: []string{"host.example.com"}}, `--node-external-ip: "host.example.com" is not an IP address`},
		{"egress pod", NodeOptions{EgressSelectorMode: "pod"}, `--egress-selector-mode: "pod" is not supported by k1s`},
		{"egress other", NodeOptions{EgressSelectorMode: "tunnel"}, `--egress-selector-mode: "tunnel": want agent or disabled`},
		{"agent token", NodeOptions{AgentToken: "not-a-token"}, "--agent-token: "},
		{"both agent tokens", NodeOptions{AgentToken: "abcdef.0123456789abcdef", AgentTokenFile: "/t"}, "--agent-token-file: give --agent-token or --agent-token-file"},
		{"max pods", NodeOptions{MaxPods: -1}, "--kubelet-arg=max-pods: -1"},
		{"system registry url", NodeOptions{SystemDefaultRegistry: "https://r.example.com"}, "--system-default-registry:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.o.validate(true)
			var msg string
			for _, e := range errs {
				msg += e.Error() + "\n"
			}
			if tc.want == "" && len(errs) > 0 || tc.want != "" && !strings.Contains(msg, tc.want) {
				t.Fatalf("errors %q, want %q", msg, tc.want)
			}
		})
	}
}
