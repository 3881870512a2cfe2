package integration

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/cmd/k1s/app"
	"github.com/k1s/k1s/internal/bootstraptoken"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// createToken stores tok with the library code, as `k1s token create` does.
func createToken(t *testing.T, admin kubernetes.Interface, tok bootstraptoken.Token) {
	t.Helper()
	secret, err := bootstraptoken.ToSecret(tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("kube-system").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAccepted waits until bearer authenticates and returns who it is.
func waitAccepted(t *testing.T, s *framework.Server, bearer string) authenticationv1.UserInfo {
	t.Helper()
	c := tokenClient(t, s, bearer)
	var u authenticationv1.UserInfo
	var lastErr error
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		u, lastErr = whoami(ctx, c)
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("token not accepted: %v", lastErr)
	}
	return u
}

func secretExists(t *testing.T, admin kubernetes.Interface, id string) bool {
	t.Helper()
	_, err := admin.CoreV1().Secrets("kube-system").Get(context.Background(), bootstraptoken.SecretName(id), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func waitSecretGone(t *testing.T, admin kubernetes.Interface, id string, within time.Duration) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, within, true, func(context.Context) (bool, error) {
		return !secretExists(t, admin, id), nil
	}); err != nil {
		t.Fatalf("secret of token %s not deleted within %v", id, within)
	}
}

// TestTokenLifecycle: a bootstrap token made by the library code
// authenticates in the bootstrappers' groups and joins a node; an expired
// token is refused by the authenticator while its Secret is still there,
// and the token-cleaner controller, once it runs, deletes that Secret and,
// at its expiry, the Secret of a token expiring later. The server's join
// token, rotated, stays rotated across a restart.
func TestTokenLifecycle(t *testing.T) {
	base := []string{"serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller",
		"certificatesigningrequest-approving-controller", "certificatesigningrequest-signing-controller"}
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers(base...) // no token-cleaner yet
	s := framework.StartWith(t, cfg)
	ctx := context.Background()
	admin := s.Client(t)

	valid := bootstraptoken.Token{ID: "valid1", Secret: "0123456789abcdef", Description: "integration",
		Expires: time.Now().Add(time.Hour), Usages: bootstraptoken.DefaultUsages(), Groups: []string{bootstraptoken.DefaultGroup}}
	createToken(t, admin, valid)
	u := waitAccepted(t, s, valid.Bearer())
	if u.Username != "system:bootstrap:valid1" || !slices.Contains(u.Groups, "system:bootstrappers") || !slices.Contains(u.Groups, bootstraptoken.DefaultGroup) {
		t.Fatalf("token authenticated as %+v", u)
	}

	ca := mustRead(t, filepath.Join(s.DataDir, "server", "tls", "server-ca.crt"))
	joinToken := func(bearer string) string {
		tok, err := jointoken.New(ca, bearer)
		if err != nil {
			t.Fatal(err)
		}
		return tok.String()
	}
	joinCfg := func(token string) join.Config {
		return join.Config{Server: s.URL(), Token: token, NodeName: "token-node", NodeIPs: []net.IP{net.ParseIP("192.0.2.8")},
			Dir: t.TempDir(), Timeout: 30 * time.Second}
	}
	creds, err := join.Join(ctx, joinCfg(joinToken(valid.Bearer())))
	if err != nil {
		t.Fatalf("join with a created token: %v", err)
	}
	if c := readCert(t, creds.Client.CertFile); c.Subject.CommonName != "system:node:token-node" {
		t.Errorf("client certificate for %v", c.Subject)
	}

	// Expired: refused, although its Secret is there (no cleaner runs).
	expired := bootstraptoken.Token{ID: "expird", Secret: "0123456789abcdef", Expires: time.Now().Add(-time.Minute),
		Usages: bootstraptoken.DefaultUsages(), Groups: []string{bootstraptoken.DefaultGroup}}
	createToken(t, admin, expired)
	// A token created after it authenticates once the apiserver's cache
	// holds both.
	witness := bootstraptoken.Token{ID: "witnes", Secret: "0123456789abcdef", Usages: []string{bootstraptoken.UsageAuthentication}}
	createToken(t, admin, witness)
	waitAccepted(t, s, witness.Bearer())
	if _, err := whoami(ctx, tokenClient(t, s, expired.Bearer())); !apierrors.IsUnauthorized(err) {
		t.Fatalf("expired token: want 401, got %v", err)
	}
	if _, err := join.Join(ctx, joinCfg(joinToken(expired.Bearer()))); err == nil || !strings.Contains(err.Error(), "refused the join token") {
		t.Fatalf("join with an expired token: %v", err)
	}
	if !secretExists(t, admin, expired.ID) {
		t.Fatal("the expired token's secret is gone before any cleaner ran")
	}

	// The server's join token, rotated.
	oldJoin := readTokenFile(t, s.DataDir)
	rotated, err := server.RotateJoinToken(ctx, admin, s.DataDir, "")
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if got := readTokenFile(t, s.DataDir); got != rotated {
		t.Fatalf("token file %v, want %v", got, rotated)
	}
	if secretExists(t, admin, oldJoin.ID) || !secretExists(t, admin, rotated.ID) {
		t.Fatal("rotation did not swap the join token's secrets")
	}
	waitAccepted(t, s, rotated.Bearer())

	// Restarted with the token-cleaner.
	s.Stop(t)
	cfg = s.Config
	cfg.ControllerManager = framework.Controllers(append(base, "token-cleaner-controller")...)
	s = framework.StartWith(t, cfg)
	admin = s.Client(t)
	waitSecretGone(t, admin, expired.ID, 30*time.Second)
	if !secretExists(t, admin, valid.ID) || !secretExists(t, admin, witness.ID) {
		t.Fatal("the cleaner deleted a token that has not expired")
	}
	if got := readTokenFile(t, s.DataDir); got != rotated {
		t.Fatalf("after a restart the join token is %v, want the rotated %v", got, rotated)
	}
	if secretExists(t, admin, oldJoin.ID) || !secretExists(t, admin, rotated.ID) {
		t.Fatal("after a restart the old join token's secret is back or the new one gone")
	}

	// A token expiring in two seconds goes at its expiry.
	soon := bootstraptoken.Token{ID: "soon01", Secret: "0123456789abcdef", Expires: time.Now().Add(2 * time.Second).Truncate(time.Second),
		Usages: []string{bootstraptoken.UsageSigning}}
	createToken(t, admin, soon)
	waitSecretGone(t, admin, soon.ID, 20*time.Second)
	if now := time.Now(); now.Before(soon.Expires) {
		t.Fatalf("token deleted at %v, before its expiry %v", now, soon.Expires)
	}
}

func readTokenFile(t *testing.T, dataDir string) jointoken.Token {
	t.Helper()
	tok, err := jointoken.Parse(string(mustRead(t, filepath.Join(dataDir, "server", "token"))))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// k1sToken runs `k1s token args...` in process, against s.
func k1sToken(t *testing.T, s *framework.Server, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := app.New()
	a.Writer, a.ErrWriter = &out, &errOut
	a.ExitErrHandler = func(*cli.Context, error) {}
	// Flags go before the arguments (urfave/cli).
	full := append([]string{"k1s", "token"}, args[0])
	if args[0] != "generate" {
		full = append(full, "--kubeconfig", s.Kubeconfig, "--data-dir", s.DataDir)
	}
	full = append(full, args[1:]...)
	err := a.Run(full)
	if errOut.Len() > 0 {
		t.Logf("k1s token %s: stderr: %s", strings.Join(args, " "), errOut.String())
	}
	return out.String(), err
}

// TestTokenCommands runs `k1s token create/list/delete/generate/rotate`
// against a server.
func TestTokenCommands(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	ca := mustRead(t, filepath.Join(s.DataDir, "server", "tls", "server-ca.crt"))
	// The server's join token is in place.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(filepath.Join(s.DataDir, "server", "token"))
		return err == nil, nil
	}); err != nil {
		t.Fatal("no join token")
	}
	serverJoin := readTokenFile(t, s.DataDir)

	out, err := k1sToken(t, s, "generate")
	if err != nil {
		t.Fatal(err)
	}
	generated := strings.TrimSpace(out)
	if _, _, err := bootstraptoken.Split(generated); err != nil {
		t.Fatalf("generate printed %q", out)
	}

	out, err = k1sToken(t, s, "create", "--ttl", "2h", "--description", "edge box", "--usages", "authentication", generated)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	created, err := jointoken.Parse(out)
	if err != nil {
		t.Fatalf("create printed %q: %v", out, err)
	}
	if created.Bearer() != generated || created.Verify(ca) != nil {
		t.Fatalf("create printed %v for %s", created, generated)
	}
	u := waitAccepted(t, s, generated)
	if u.Username != "system:bootstrap:"+created.ID || !slices.Contains(u.Groups, bootstraptoken.DefaultGroup) {
		t.Fatalf("created token authenticated as %+v", u)
	}

	out, err = k1sToken(t, s, "create", "--ttl", "0")
	if err != nil {
		t.Fatalf("create a random token: %v", err)
	}
	random, err := jointoken.Parse(out)
	if err != nil || random.Verify(ca) != nil {
		t.Fatalf("create printed %q: %v", out, err)
	}
	if _, err := k1sToken(t, s, "create", generated); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("create of an existing token: %v", err)
	}

	out, err = k1sToken(t, s, "list")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TOKEN") {
		t.Fatalf("list printed:\n%s", out)
	}
	row := func(bearer string) []string {
		for _, l := range lines[1:] {
			if f := strings.Fields(l); f[0] == bearer {
				return f
			}
		}
		t.Fatalf("list does not show %s:\n%s", bearer, out)
		return nil
	}
	if f := row(generated); (f[1] != "1h" && f[1] != "2h") || f[3] != "authentication" || f[4] != "edge" || f[6] != bootstraptoken.DefaultGroup {
		t.Errorf("created token listed as %q", f)
	}
	if f := row(random.Bearer()); f[1] != "<forever>" || f[2] != "<never>" || f[3] != "authentication,signing" {
		t.Errorf("random token listed as %q", f)
	}
	row(serverJoin.Bearer())

	if _, err := k1sToken(t, s, "delete", serverJoin.ID); err == nil || !strings.Contains(err.Error(), "k1s token rotate") {
		t.Fatalf("delete of the server's token: %v", err)
	}
	out, err = k1sToken(t, s, "delete", created.ID, random.String())
	if err != nil || strings.Count(out, "deleted") != 2 {
		t.Fatalf("delete: %q %v", out, err)
	}
	if _, err := k1sToken(t, s, "delete", created.ID); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("second delete: %v", err)
	}
	admin := s.Client(t)
	if secretExists(t, admin, created.ID) || secretExists(t, admin, random.ID) {
		t.Fatal("deleted tokens' secrets remain")
	}

	out, err = k1sToken(t, s, "rotate")
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	rotated, err := jointoken.Parse(out)
	if err != nil || rotated.Verify(ca) != nil || rotated.ID == serverJoin.ID {
		t.Fatalf("rotate printed %q: %v", out, err)
	}
	if got := readTokenFile(t, s.DataDir); got != rotated {
		t.Fatalf("token file %v, want %v", got, rotated)
	}
	if secretExists(t, admin, serverJoin.ID) {
		t.Fatal("the old join token's secret remains")
	}
	waitAccepted(t, s, rotated.Bearer())
}
