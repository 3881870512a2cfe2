package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/tests/integration/framework"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestJoin: a node joins with the server's join token: the CA is fetched
// and checked against the token, the node's client and serving
// certificates are requested, approved and signed by the server's
// certificate controllers, and the node's identity is limited to itself.
// A wrong CA hash, a forged secret and a bare token are refused; a node
// holding valid certificates rejoins without its token and asks for none.
func TestJoin(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller",
		"certificatesigningrequest-approving-controller", "certificatesigningrequest-signing-controller")
	s := framework.StartWith(t, cfg)
	ctx := context.Background()
	admin := s.Client(t)

	tokenFile := filepath.Join(s.DataDir, "server", "token")
	var token string
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(tokenFile)
		token = strings.TrimSpace(string(b))
		return err == nil && token != "", nil
	}); err != nil {
		t.Fatalf("no join token at %s", tokenFile)
	}
	if _, err := jointoken.Parse(token); err != nil {
		t.Fatalf("the server's token %q: %v", token, err)
	}

	joinCfg := func(token, dir string) join.Config {
		return join.Config{Server: s.URL(), Token: token, NodeName: "joiner", NodeIPs: []net.IP{net.ParseIP("192.0.2.7")},
			Dir: dir, Timeout: 30 * time.Second}
	}

	t.Run("refused", func(t *testing.T) {
		hash, creds, _ := strings.Cut(strings.TrimPrefix(token, "K10"), "::")
		id, _, _ := strings.Cut(creds, ".")
		for _, tc := range []struct{ name, token, want string }{
			{"wrong CA hash", "K10" + strings.Repeat("0", len(hash)) + "::" + creds, "does not match the join token's CA hash"},
			{"forged secret", "K10" + hash + "::" + id + ".0123456789abcdef", "refused the join token"},
			{"unknown token", "K10" + hash + "::zzzzzz.0123456789abcdef", "refused the join token"},
			{"bare token", creds, "--ca-file"},
			{"garbage", "K10nonsense", "--token"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := join.Join(ctx, joinCfg(tc.token, t.TempDir()))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("join: %v, want an error with %q", err, tc.want)
				}
			})
		}
	})

	dir := t.TempDir()
	creds, err := join.Join(ctx, joinCfg(token, dir))
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	client := readCert(t, creds.Client.CertFile)
	if client.Subject.CommonName != "system:node:joiner" || len(client.Subject.Organization) != 1 || client.Subject.Organization[0] != "system:nodes" {
		t.Errorf("client certificate subject %v", client.Subject)
	}
	serving := readCert(t, creds.Serving.CertFile)
	if err := serving.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if err := serving.VerifyHostname("joiner"); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if len(serving.ExtKeyUsage) != 1 || serving.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("serving certificate usages %v", serving.ExtKeyUsage)
	}

	// The node's identity: its own Node, not another's.
	node := kubernetes.NewForConfigOrDie(&rest.Config{Host: s.URL(), TLSClientConfig: rest.TLSClientConfig{
		CAFile: creds.ServerCAFile, CertFile: creds.Client.CertFile, KeyFile: creds.Client.KeyFile}})
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joiner"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("the node registering itself: %v", err)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}, metav1.CreateOptions{}); err == nil {
		t.Errorf("the node registered another node")
	}
	info, err := join.ClusterInfo(ctx, node, jointoken.ClusterInfoName)
	if err != nil {
		t.Fatal(err)
	}
	if info[jointoken.ClusterInfoClusterCIDR] == "" || info[jointoken.ClusterInfoServiceCIDR] == "" || info[jointoken.ClusterInfoClusterDNS] == "" {
		t.Errorf("cluster info %v", info)
	}

	t.Run("rejoins without its token", func(t *testing.T) {
		before, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := join.Join(ctx, joinCfg("", dir))
		if err != nil {
			t.Fatalf("rejoin: %v", err)
		}
		if !readCert(t, again.Client.CertFile).Equal(client) {
			t.Errorf("the client certificate changed on rejoin")
		}
		after, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Items) != len(before.Items) {
			t.Errorf("rejoin made %d certificate requests", len(after.Items)-len(before.Items))
		}
		// With the server away, too: the node runs on what it holds.
		away := joinCfg(token, dir)
		away.Server = "https://127.0.0.1:1"
		if _, err := join.Join(ctx, away); err != nil {
			t.Errorf("rejoin with the server away: %v", err)
		}
	})

	t.Run("a new node without a token is told to give one", func(t *testing.T) {
		other := t.TempDir()
		if err := os.WriteFile(filepath.Join(other, "server-ca.crt"), mustRead(t, creds.ServerCAFile), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := join.Join(ctx, joinCfg("", other))
		if err == nil || !strings.Contains(err.Error(), "--token") {
			t.Fatalf("join without token: %v", err)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
