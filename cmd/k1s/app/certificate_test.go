package app

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/internal/pki"
)

// runCertificate runs `k1s certificate args...` and returns what it printed.
func runCertificate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{Name: "k1s", Commands: []*cli.Command{certificateCommand()}, Writer: &out, ErrWriter: &out,
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"k1s", "certificate"}, args...))
	return out.String(), err
}

// serverDataDir is a server's data directory: the cluster PKI and its
// node's certificates.
func serverDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "server", "tls"), Hostname: "h1", IPs: []net.IP{net.ParseIP("192.0.2.1")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.IssueNodeCerts(filepath.Join(dir, "agent", "tls"), "h1", "h1", nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeCert writes a self-signed certificate and its key valid until na.
func writeCert(t *testing.T, certFile, keyFile, cn string, na time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: na, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if keyFile != "" {
		kder, _ := x509.MarshalECPrivateKey(key)
		if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// agentDataDir is a joined agent's data directory.
func agentDataDir(t *testing.T, clientExpiry time.Time) string {
	t.Helper()
	dir := t.TempDir()
	tls := filepath.Join(dir, "agent", "tls")
	writeCert(t, filepath.Join(tls, "server-ca.crt"), "", "k1s-server-ca", time.Now().Add(3650*24*time.Hour))
	writeCert(t, filepath.Join(tls, "client-ca.crt"), "", "k1s-client-ca", time.Now().Add(3650*24*time.Hour))
	writeCert(t, filepath.Join(tls, "client-agent.crt"), filepath.Join(tls, "client-agent.key"), "system:node:a1", clientExpiry)
	writeCert(t, filepath.Join(tls, "serving-agent.crt"), filepath.Join(tls, "serving-agent.key"), "system:node:a1", time.Now().Add(-time.Minute))
	return dir
}

func TestCertificateCheck(t *testing.T) {
	clearEnv(t)
	server := serverDataDir(t)
	agent := agentDataDir(t, time.Now().Add(10*24*time.Hour))
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // lines containing these, in order
		wantErr string
	}{
		{name: "server: every certificate", args: []string{"check", "--data-dir", server}, want: []string{
			"server/tls/server-ca.crt: certificate CN=k1s-server-ca@", "(CertSign) is ok, expires at",
			"server/tls/client-ca.crt: ", "server/tls/request-header-ca.crt: ", "server/tls/etcd/server-ca.crt: ",
			"server/tls/serving-kube-apiserver.crt: certificate CN=kube-apiserver (ServerAuth) is ok, expires at",
			"server/tls/client-kube-apiserver.crt: certificate CN=system:k1s-apiserver,O=system:k1s-apiservers (ClientAuth) is ok",
			"server/tls/client-admin.crt: certificate CN=system:admin,O=system:masters (ClientAuth) is ok",
			"server/tls/client-controller.crt: ", "server/tls/client-scheduler.crt: ", "server/tls/client-auth-proxy.crt: ",
			"server/tls/etcd/server-client.crt: certificate CN=etcd-server (ServerAuth,ClientAuth) is ok",
			"server/tls/etcd/client.crt: ", "server/tls/etcd/peer-server-client.crt: ",
			"agent/tls/client-agent.crt: certificate CN=system:node:h1,O=system:nodes (ClientAuth) is ok",
			"agent/tls/serving-agent.crt: ", "agent/tls/client-kube-proxy.crt: ",
		}},
		{name: "server: one service", args: []string{"check", "-d", server, "--service", "etcd"}, want: []string{
			"server/tls/etcd/server-client.crt: ", "server/tls/etcd/client.crt: ", "server/tls/etcd/peer-server-client.crt: ",
		}},
		{name: "server: a table", args: []string{"check", "-d", server, "-s", "admin,kube-proxy", "-o", "table"}, want: []string{
			"FILENAME", "server/tls/client-admin.crt", "agent/tls/client-kube-proxy.crt",
		}},
		{name: "agent: the node's certificates and the server's CAs", args: []string{"check", "--data-dir", agent}, want: []string{
			"agent/tls/server-ca.crt: certificate CN=k1s-server-ca (ClientAuth) is ok",
			"agent/tls/client-ca.crt: ",
			"agent/tls/client-agent.crt: certificate CN=system:node:a1 (ClientAuth) will expire within 90 days at",
			"agent/tls/serving-agent.crt: certificate CN=system:node:a1 (ClientAuth) expired at",
		}},
		{name: "agent: a table", args: []string{"check", "--data-dir", agent, "-o", "table", "-s", "kubelet"}, want: []string{
			"FILENAME", "SERVICE", "SUBJECT", "RESIDUAL TIME", "STATUS", "agent/tls/client-agent.crt    kubelet   CN=system:node:a1   ClientAuth", "9d", "WARNING",
			"agent/tls/serving-agent.crt   kubelet", "EXPIRED",
		}},
		{name: "empty data dir", args: []string{"check", "--data-dir", t.TempDir()}, wantErr: "no certificates under"},
		{name: "unknown service", args: []string{"check", "--data-dir", server, "-s", "kube-apiserver"}, wantErr: `--service: "kube-apiserver" is not one of api-server, admin`},
		{name: "unknown output", args: []string{"check", "--data-dir", server, "-o", "json"}, wantErr: "--output"},
		{name: "data-dir from the config file", args: []string{"check", "--config", writeFile(t, "data-dir: "+agent+"\ntoken: x\n"), "-s", "kubelet"}, want: []string{
			"agent/tls/client-agent.crt: ", "agent/tls/serving-agent.crt: ",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCertificate(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			if !strings.Contains(tc.name, "table") {
				files := 0
				for _, w := range tc.want {
					if strings.HasSuffix(w, ": ") || strings.Contains(w, ".crt: certificate") {
						files++
					}
				}
				if lines := strings.Count(out, "\n"); lines != files {
					t.Errorf("%d lines, want %d:\n%s", lines, files, out)
				}
			}
		})
	}
}

func TestCertificateRotateServer(t *testing.T) {
	clearEnv(t)
	dir := serverDataDir(t)
	tlsDir := filepath.Join(dir, "server", "tls")
	caBefore := mustReadFile(t, filepath.Join(tlsDir, "server-ca.crt"))
	adminBefore := mustReadFile(t, filepath.Join(tlsDir, "client-admin.crt"))

	out, err := runCertificate(t, "rotate", "--data-dir", dir, "--service", "admin", "--service", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Rotating certificates of admin, kubelet") || !strings.Contains(out, "restart k1s server") {
		t.Errorf("output:\n%s", out)
	}
	for _, gone := range []string{"server/tls/client-admin.crt", "server/tls/client-admin.key", "agent/tls/client-agent.crt", "agent/tls/serving-agent.key"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s not removed: %v", gone, err)
		}
	}
	for _, kept := range []string{"server/tls/client-controller.crt", "agent/tls/client-kube-proxy.crt", "server/tls/server-ca.key"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "server", "tls-*"))
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if b := mustReadFile(t, filepath.Join(backups[0], "server", "tls", "client-admin.crt")); !bytes.Equal(b, adminBefore) {
		t.Errorf("the backup differs from the certificate")
	}
	if _, err := os.Stat(filepath.Join(backups[0], "agent", "tls", "serving-agent.key")); err != nil {
		t.Errorf("node key not backed up: %v", err)
	}

	// The next start issues new ones from the same CAs.
	c, err := pki.Ensure(pki.Config{Dir: tlsDir, Hostname: "h1", IPs: []net.IP{net.ParseIP("192.0.2.1")}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(mustReadFile(t, c.Admin.CertFile), adminBefore) || !bytes.Equal(mustReadFile(t, c.ServerCA.CertFile), caBefore) {
		t.Errorf("after the restart: admin certificate kept or CA changed")
	}

	// Not while the server runs: its etcd holds its database locked.
	db := filepath.Join(dir, "server", "db", "etcd", "member", "snap", "db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(db)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := runCertificate(t, "rotate", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Errorf("rotate with the server running: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if _, err := runCertificate(t, "rotate", "--data-dir", dir); err != nil {
		t.Errorf("rotate with the server stopped: %v", err)
	}
}

func TestCertificateRotateAgent(t *testing.T) {
	clearEnv(t)
	dir := agentDataDir(t, time.Now().Add(300*24*time.Hour))
	client := filepath.Join(dir, "agent", "tls", "client-agent.crt")
	before := mustReadFile(t, client)
	out, err := runCertificate(t, "rotate", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Rotating certificates of kubelet") || !strings.Contains(out, "restart k1s agent") {
		t.Errorf("output:\n%s", out)
	}
	// The node keeps its credentials and renews them as itself at start.
	if !bytes.Equal(mustReadFile(t, client), before) {
		t.Errorf("the client certificate changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "agent", "tls", join.RenewFile)); err != nil {
		t.Errorf("renewal not asked: %v", err)
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "agent", "tls-*", "agent", "tls", "client-agent.key"))
	if len(backups) != 1 {
		t.Errorf("key backups %v", backups)
	}
	if _, err := runCertificate(t, "rotate", "--data-dir", dir, "-s", "etcd"); err == nil || !strings.Contains(err.Error(), "no leaf certificates to rotate") {
		t.Errorf("rotate etcd on an agent: %v", err)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
