package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/k1s/k1s/internal/bootstraptoken"
	"github.com/k1s/k1s/internal/jointoken"
)

// runToken runs `k1s token args...` with the real flags and actions.
func runToken(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := &cli.App{
		Name:           "k1s",
		Commands:       []*cli.Command{tokenCommand()},
		Writer:         &out,
		ErrWriter:      &errOut,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	err = app.Run(append([]string{"k1s", "token"}, args...))
	return out.String(), errOut.String(), err
}

// noCluster leaves the token commands no kubeconfig and no config file.
func noCluster(t *testing.T) {
	t.Helper()
	clearEnv(t)
	t.Setenv("K1S_CONFIG_FILE", filepath.Join(t.TempDir(), "none.yaml"))
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
}

func TestTokenFlagErrors(t *testing.T) {
	noCluster(t)
	dataDir := t.TempDir() // holds no kubeconfig: flags are checked first
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad token", []string{"create", "ABCDEF.0123456789abcdef"}, "TOKEN: not a bootstrap token"},
		{"two tokens", []string{"create", "abcdef.0123456789abcdef", "bcdefg.0123456789abcdef"}, "at most one TOKEN"},
		{"negative ttl", []string{"create", "--ttl", "-1h"}, "--ttl: -1h0m0s is negative"},
		{"bad ttl", []string{"create", "--ttl", "soon"}, "ttl"},
		{"unknown usage", []string{"create", "--usages", "authentication,admin"}, "--usages: invalid bootstrap token usage string: admin"},
		{"no usage", []string{"create", "--usages", ""}, "--usages: at least one usage"},
		{"bad group", []string{"create", "--groups", "system:masters"}, `--groups: bootstrap group "system:masters" is invalid`},
		{"groups without authentication", []string{"create", "--usages", "signing", "--groups", "system:bootstrappers:x"}, `--groups: extra groups need the "authentication" usage`},
		{"no kubeconfig", []string{"create", "--data-dir", dataDir}, "--kubeconfig: no admin kubeconfig found"},
		{"missing kubeconfig", []string{"list", "--kubeconfig", filepath.Join(dataDir, "nope")}, "--kubeconfig:"},
		{"delete nothing", []string{"delete"}, "name at least one"},
		{"delete garbage", []string{"delete", "abcdef", "x.y"}, "ID|TOKEN: an argument is neither a token id"},
		{"list arguments", []string{"list", "x"}, "takes no arguments"},
		{"flag after the token", []string{"create", "abcdef.0123456789abcdef", "--ttl=1h"}, "--ttl: flags go before the arguments"},
		{"flag after an id", []string{"delete", "abcdef", "--kubeconfig", "x"}, "--kubeconfig: flags go before the arguments"},
		{"rotate bad new token", []string{"rotate", "--new-token", "nope"}, "--new-token: not a bootstrap token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runToken(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("error %q repeats a secret", err)
			}
		})
	}
}

func TestTokenGenerate(t *testing.T) {
	out, _, err := runToken(t, "generate")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bootstraptoken.Split(strings.TrimSpace(out)); err != nil || !strings.HasSuffix(out, "\n") {
		t.Fatalf("generate printed %q: %v", out, err)
	}
}

func TestCreateAndListTokens(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	ca := []byte("the CA bundle")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tok := range []bootstraptoken.Token{
		{ID: "abcdef", Secret: "0123456789abcdef", Description: "node 2", Expires: now.Add(90 * time.Minute),
			Usages: bootstraptoken.DefaultUsages(), Groups: []string{bootstraptoken.DefaultGroup}},
		{ID: "zzzzzz", Secret: "0123456789abcdef", Usages: []string{"signing"}},
		{ID: "oldone", Secret: "0123456789abcdef", Expires: now.Add(-time.Minute), Usages: []string{"authentication"}},
	} {
		join, err := createToken(ctx, client, tok, func(context.Context) []byte { return ca })
		if err != nil {
			t.Fatal(err)
		}
		if join.String() != "K10"+jointoken.Hash(ca)+"::"+tok.Bearer() {
			t.Errorf("join token %q", join)
		}
	}
	_, err := createToken(ctx, client, bootstraptoken.Token{ID: "abcdef", Secret: "ffffffffffffffff", Usages: []string{"signing"}},
		func(context.Context) []byte { return ca })
	if err == nil || !strings.Contains(err.Error(), `TOKEN: a bootstrap token with id "abcdef" exists already`) {
		t.Errorf("second create: %v", err)
	}
	bare, err := createToken(ctx, client, bootstraptoken.Token{ID: "nocaaa", Secret: "0123456789abcdef", Usages: []string{"signing"}},
		func(context.Context) []byte { return nil })
	if err != nil || bare.String() != "nocaaa.0123456789abcdef" {
		t.Errorf("create without a CA: %q %v", bare, err)
	}
	// A malformed token Secret is reported and skipped.
	bad, _ := bootstraptoken.ToSecret(bootstraptoken.Token{ID: "badbad", Secret: "0123456789abcdef", Usages: []string{"signing"}})
	bad.Data["token-id"] = []byte("other1")
	if _, err := client.CoreV1().Secrets("kube-system").Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if err := listTokens(ctx, client, &out, &errOut, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA", "GROUPS"},
		{"abcdef.0123456789abcdef", "1h", "2026-03-01T13:30:00Z", "authentication,signing", "node", "2", bootstraptoken.DefaultGroup},
		{"nocaaa.0123456789abcdef", "<forever>", "<never>", "signing", "<none>", "<none>"},
		{"oldone.0123456789abcdef", "<expired>", "2026-03-01T11:59:00Z", "authentication", "<none>", "<none>"},
		{"zzzzzz.0123456789abcdef", "<forever>", "<never>", "signing", "<none>", "<none>"},
	}
	if len(lines) != len(want) {
		t.Fatalf("list printed:\n%s", out.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d = %q, want %q", i, got, w)
		}
	}
	if !strings.Contains(errOut.String(), "kube-system/bootstrap-token-badbad") {
		t.Errorf("malformed token not reported: %q", errOut.String())
	}
}

// writeKubeconfig writes a kubeconfig for server at path.
func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "x"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

func TestTokenKubeconfig(t *testing.T) {
	noCluster(t)
	dataDir := t.TempDir()
	writeKubeconfig(t, filepath.Join(dataDir, "server", "cred", "admin.kubeconfig"), "https://data-dir:6443")
	explicit := filepath.Join(t.TempDir(), "explicit.yaml")
	writeKubeconfig(t, explicit, "https://explicit:6443")
	env := filepath.Join(t.TempDir(), "env.yaml")
	writeKubeconfig(t, env, "https://env:6443")
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, []byte("data-dir: "+dataDir+"\nhttps-listen-port: 7443\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		o          tokenOptions
		kubeconfig string // $KUBECONFIG
		want       string
	}{
		{name: "--data-dir", o: tokenOptions{dataDir: dataDir, dataDirSet: true}, want: "https://data-dir:6443"},
		{name: "--kubeconfig wins", o: tokenOptions{kubeconfig: explicit, dataDir: dataDir, dataDirSet: true}, want: "https://explicit:6443"},
		{name: "$KUBECONFIG over the data dir", o: tokenOptions{dataDir: dataDir, dataDirSet: true}, kubeconfig: env, want: "https://env:6443"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			cfg, err := tc.o.restConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.want {
				t.Errorf("host %q, want %q", cfg.Host, tc.want)
			}
		})
	}

	if got := configuredDataDir(configFile); got != dataDir {
		t.Errorf("configuredDataDir = %q, want %q", got, dataDir)
	}
	if got := configuredDataDir(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("configuredDataDir of a missing file = %q", got)
	}
}
