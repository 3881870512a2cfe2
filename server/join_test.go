package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/k1s/k1s/internal/bootstraptoken"
	"github.com/k1s/k1s/internal/jointoken"
)

// joinDataDir is a data dir with a server CA, as pki.Ensure leaves it.
func joinDataDir(t *testing.T) (dataDir string, ca []byte) {
	t.Helper()
	dataDir = t.TempDir()
	ca = []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	tls := filepath.Join(dataDir, "server", "tls")
	if err := os.MkdirAll(tls, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tls, "server-ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	return dataDir, ca
}

func startJoinInfo(t *testing.T, client *fake.Clientset, dataDir string) jointoken.Token {
	t.Helper()
	j := &joinInfo{client: client, dir: filepath.Join(dataDir, "server"), caFile: filepath.Join(dataDir, "server", "tls", "server-ca.crt"), retry: time.Millisecond}
	if err := j.ensure(context.Background()); err != nil {
		t.Fatalf("ensure: %v", err)
	}
	return readJoinToken(t, dataDir)
}

func readJoinToken(t *testing.T, dataDir string) jointoken.Token {
	t.Helper()
	var toks []jointoken.Token
	for _, name := range []string{"token", "node-token"} {
		b, err := os.ReadFile(filepath.Join(dataDir, "server", name))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jointoken.Parse(string(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		toks = append(toks, tok)
	}
	if toks[0] != toks[1] {
		t.Fatalf("token and node-token differ: %v, %v", toks[0], toks[1])
	}
	return toks[0]
}

func tokenSecret(t *testing.T, client *fake.Clientset, id string) (bootstraptoken.Token, bool) {
	t.Helper()
	s, err := client.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil {
		return bootstraptoken.Token{}, false
	}
	tok, err := bootstraptoken.FromSecret(s)
	if err != nil {
		t.Fatalf("the server's token secret: %v", err)
	}
	return tok, true
}

// TestRotateJoinToken: the server makes its join token and Secret; a
// rotation replaces both and removes the old Secret; a restart keeps the
// rotated token and does not bring the old one back.
func TestRotateJoinToken(t *testing.T) {
	ctx := context.Background()
	dataDir, ca := joinDataDir(t)
	client := fake.NewClientset()
	first := startJoinInfo(t, client, dataDir)
	if first.CAHash != jointoken.Hash(ca) {
		t.Fatalf("join token hash %q, want the CA's", first.CAHash)
	}
	s, ok := tokenSecret(t, client, first.ID)
	if !ok || s.Secret != first.Secret || !s.Expires.IsZero() || len(s.Usages) != 1 || s.Usages[0] != "authentication" ||
		len(s.Groups) != 1 || s.Groups[0] != bootstraptoken.DefaultGroup {
		t.Fatalf("the server's token secret = %+v (found %v)", s, ok)
	}

	rotated, err := RotateJoinToken(ctx, client, dataDir, "")
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if rotated.ID == first.ID || rotated.CAHash != first.CAHash {
		t.Fatalf("rotated %v from %v", rotated, first)
	}
	if got := readJoinToken(t, dataDir); got != rotated {
		t.Fatalf("token file holds %v, want %v", got, rotated)
	}
	if s, ok := tokenSecret(t, client, rotated.ID); !ok || s.Secret != rotated.Secret {
		t.Fatalf("the new token's secret = %+v (found %v)", s, ok)
	}
	if _, ok := tokenSecret(t, client, first.ID); ok {
		t.Fatal("the old token's secret is still there")
	}

	// A restart: the rotated token stays, the old one is not recreated.
	if again := startJoinInfo(t, client, dataDir); again != rotated {
		t.Fatalf("after a restart the join token is %v, want %v", again, rotated)
	}
	if _, ok := tokenSecret(t, client, first.ID); ok {
		t.Fatal("a restart recreated the old token's secret")
	}

	// A chosen token.
	chosen, err := RotateJoinToken(ctx, client, dataDir, "abcdef.0123456789abcdef")
	if err != nil || chosen.Bearer() != "abcdef.0123456789abcdef" {
		t.Fatalf("rotate to a chosen token: %v %v", chosen, err)
	}
}

func TestRotateJoinTokenErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("no server data dir", func(t *testing.T) {
		_, err := RotateJoinToken(ctx, fake.NewClientset(), t.TempDir(), "")
		if err == nil || !strings.Contains(err.Error(), "--data-dir: no join token at") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("bad new token", func(t *testing.T) {
		dataDir, _ := joinDataDir(t)
		client := fake.NewClientset()
		startJoinInfo(t, client, dataDir)
		_, err := RotateJoinToken(ctx, client, dataDir, "nope")
		if err == nil || !strings.Contains(err.Error(), "--new-token:") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("same id", func(t *testing.T) {
		dataDir, _ := joinDataDir(t)
		client := fake.NewClientset()
		cur := startJoinInfo(t, client, dataDir)
		_, err := RotateJoinToken(ctx, client, dataDir, cur.ID+".0123456789abcdef")
		if err == nil || !strings.Contains(err.Error(), "current token's id") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("id taken", func(t *testing.T) {
		dataDir, _ := joinDataDir(t)
		other, _ := bootstraptoken.ToSecret(bootstraptoken.Token{ID: "abcdef", Secret: "0123456789abcdef", Usages: []string{"signing"}})
		client := fake.NewClientset(other)
		cur := startJoinInfo(t, client, dataDir)
		_, err := RotateJoinToken(ctx, client, dataDir, "abcdef.ffffffffffffffff")
		if err == nil || !strings.Contains(err.Error(), `id "abcdef" exists already`) {
			t.Fatalf("error %v", err)
		}
		if got := readJoinToken(t, dataDir); got != cur {
			t.Errorf("token file changed to %v", got)
		}
	})
	t.Run("token files cannot be written: the new secret is removed", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes read-only directories")
		}
		dataDir, _ := joinDataDir(t)
		client := fake.NewClientset()
		cur := startJoinInfo(t, client, dataDir)
		dir := filepath.Join(dataDir, "server")
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		if _, err := RotateJoinToken(ctx, client, dataDir, "abcdef.0123456789abcdef"); err == nil {
			t.Fatal("rotated without writing the token file")
		}
		if _, ok := tokenSecret(t, client, "abcdef"); ok {
			t.Error("the new token's secret was left behind")
		}
		if _, ok := tokenSecret(t, client, cur.ID); !ok {
			t.Error("the old token's secret was deleted")
		}
	})
	t.Run("old secret cannot be deleted", func(t *testing.T) {
		dataDir, _ := joinDataDir(t)
		client := fake.NewClientset()
		startJoinInfo(t, client, dataDir)
		client.PrependReactor("delete", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("etcd down")
		})
		tok, err := RotateJoinToken(ctx, client, dataDir, "")
		if err == nil || !strings.Contains(err.Error(), "the join token is rotated, but the old token's secret") {
			t.Fatalf("error %v", err)
		}
		if got := readJoinToken(t, dataDir); got != tok {
			t.Errorf("token file holds %v, want the rotated %v", got, tok)
		}
	})
}
