package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// etcdMembers lists the etcd members through a server's endpoint, with
// the server token.
func etcdMembers(t *testing.T, s *framework.Server, token jointoken.Token) []etcd.Member {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL()+server.EtcdMembersPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("server", token.Bearer())
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", server.EtcdMembersPath, resp.Status)
	}
	var ms []etcd.Member
	if err := json.NewDecoder(resp.Body).Decode(&ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestServerJoinsACluster: a server started with --cluster-init takes a
// second one with its token: one etcd of two voting members, the same
// objects and CAs through both apiservers, and the second keeps serving
// what the first wrote after a restart of its own.
func TestServerJoinsACluster(t *testing.T) {
	cfg1 := framework.Config(t)
	cfg1.ClusterInit = true
	cfg1.NodeName = "server-1"
	s1 := framework.StartWith(t, cfg1)
	ctx := context.Background()

	var token jointoken.Token
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(filepath.Join(s1.DataDir, "server", "token"))
		if err != nil {
			return false, nil
		}
		token, err = jointoken.Parse(string(b))
		return err == nil, err
	}); err != nil {
		t.Fatalf("server 1's token: %v", err)
	}

	cfg2 := framework.Config(t)
	cfg2.JoinServer = s1.URL()
	cfg2.Token = token.String()
	cfg2.NodeName = "server-2"
	s2 := framework.StartWith(t, cfg2)

	ms := etcdMembers(t, s2, token)
	if len(ms) != 2 {
		t.Fatalf("etcd members %+v, want 2", ms)
	}
	for _, m := range ms {
		if m.IsLearner || !strings.HasPrefix(m.Name, "server-") || !strings.HasPrefix(m.PeerURLs[0], "https://127.0.0.1:") {
			t.Errorf("member %+v: want a voting member named after its server, its peers on TLS", m)
		}
	}
	for _, name := range []string{"server-ca.crt", "client-ca.crt", "etcd/server-ca.crt", "service.key"} {
		a, _ := os.ReadFile(filepath.Join(s1.DataDir, "server", "tls", name))
		b, _ := os.ReadFile(filepath.Join(s2.DataDir, "server", "tls", name))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between the servers", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(s2.DataDir, "server", "token")); strings.TrimSpace(string(b)) != token.String() {
		t.Errorf("server 2's token %q, want the cluster's", b)
	}

	c1, c2 := s1.Client(t), s2.Client(t)
	if _, err := c1.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c2.CoreV1().ConfigMaps("default").Get(ctx, "from-1", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("server 2 does not see server 1's config map")
	}
	// A service-account token issued by one server is accepted by the other.
	tr, err := c1.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	} else {
		cfg := s2.Anonymous(t)
		cfg.BearerToken = tr.Status.Token
		if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil && !apierrors.IsForbidden(err) {
			t.Errorf("server 2 refuses server 1's service-account token: %v", err)
		}
	}

	t.Run("the joined server restarts on its own data", func(t *testing.T) {
		s2.Stop(t)
		cfg2.EtcdClientPort = framework.FreePort(t)
		cfg2.HTTPSPort = framework.FreePort(t)
		s2 = framework.StartWith(t, cfg2)
		if _, err := s2.Client(t).CoreV1().ConfigMaps("default").Get(ctx, "from-1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if ms := etcdMembers(t, s1, token); len(ms) != 2 {
			t.Errorf("etcd members after the restart: %+v", ms)
		}
	})

	t.Run("a bootstrap token does not let a server join", func(t *testing.T) {
		cfg3 := framework.Config(t)
		cfg3.JoinServer = s1.URL()
		cfg3.Token = fmt.Sprintf("K10%s::zyxwvu.0123456789abcdef", token.CAHash)
		s, err := server.New(cfg3)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = s.Run(rctx)
		if err == nil || !strings.Contains(err.Error(), "server token") {
			t.Errorf("Run = %v, want a refusal naming the server token", err)
		}
	})
}
