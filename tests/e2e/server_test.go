package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// TestServerSurvivesStops writes objects, stops the server cleanly, then
// kills it with SIGKILL, and checks every object each time.
func TestServerSurvivesStops(t *testing.T) {
	s := framework.NewServer(t)
	s.Start(t)
	ctx := context.Background()

	for i, stop := range []func(){func() { s.Stop(t) }, s.Kill} {
		c := s.Client(t)
		name := []string{"after-clean-stop", "after-kill"}[i]
		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stop()
		s.Start(t)
		got, err := s.Client(t).CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.Data["n"] != name {
			t.Fatalf("configmap %s lost across restart: %v", name, err)
		}
	}
	if out, err := s.Kubectl(ctx, "get", "configmaps"); err != nil || !strings.Contains(out, "after-clean-stop") || !strings.Contains(out, "after-kill") {
		t.Fatalf("kubectl get configmaps after restarts: %v\n%s", err, out)
	}
}

// TestServerErrors checks that bad start-up conditions give a clear error
// naming the flag, and a non-zero exit.
func TestServerErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, s *framework.Server)
		want  string
	}{
		{"port in use", func(t *testing.T, s *framework.Server) {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", "0"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			s.Args = replaceFlag(s.Args, "--https-listen-port", strings.Split(l.Addr().String(), ":")[1])
		}, "--https-listen-port"},
		{"data dir not writable", func(t *testing.T, s *framework.Server) {
			f := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			s.Args = replaceFlag(s.Args, "--data-dir", filepath.Join(f, "data"))
		}, "--data-dir"},
		{"bad service CIDR", func(t *testing.T, s *framework.Server) {
			s.Args = append(s.Args, "--service-cidr", "10.43.0.0/33")
		}, "--service-cidr"},
		{"bad kubeconfig mode", func(t *testing.T, s *framework.Server) {
			s.Args = append(s.Args, "--write-kubeconfig-mode", "999")
		}, "--write-kubeconfig-mode"},
		{"unknown flag", func(t *testing.T, s *framework.Server) {
			s.Args = append(s.Args, "--no-such-flag")
		}, "no-such-flag"},
		{"foreign etcd data dir", func(t *testing.T, s *framework.Server) {
			dir := filepath.Join(s.DataDir, "server", "db", "etcd")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "foreign"},
		{"corrupt etcd data dir", func(t *testing.T, s *framework.Server) {
			dir := filepath.Join(s.DataDir, "server", "db", "etcd", "member", "wal")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "0000000000000000-0000000000000000.wal"), []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "etcd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := framework.NewServer(t)
			tc.setup(t, s)
			if err := s.StartProcess(); err != nil {
				t.Fatal(err)
			}
			err, exited := s.Wait(60 * time.Second)
			if !exited {
				t.Fatalf("k1s server kept running; want an exit naming %s", tc.want)
			}
			if err == nil {
				t.Fatalf("k1s server exited 0; want a non-zero exit")
			}
			last := framework.LastLine(s.Log())
			if !strings.Contains(last, tc.want) || !strings.HasPrefix(last, "k1s: ") {
				t.Fatalf("last log line %q does not name %s", last, tc.want)
			}
		})
	}
}

func replaceFlag(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		if out[i] == flag && i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}
