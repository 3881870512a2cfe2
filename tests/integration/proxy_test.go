package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/tests/integration/framework"
)

// fakeAgent is an HTTPS server standing in for a node agent: it serves with
// a certificate from the cluster's server CA and requires the apiserver's
// client certificate.
func fakeAgent(t *testing.T, s *framework.Server, handler http.HandlerFunc) int {
	t.Helper()
	tlsDir := filepath.Join(s.DataDir, "server", "tls")
	serverCA, err := pki.LoadCA(filepath.Join(tlsDir, "server-ca.crt"), filepath.Join(tlsDir, "server-ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := serverCA.Sign(key.Public(), pki.LeafSpec{CommonName: "fake-agent", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(key)
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := os.ReadFile(filepath.Join(tlsDir, "client-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(clientCA)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func TestAgentProxy(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	port := fakeAgent(t, s, func(w http.ResponseWriter, r *http.Request) {
		user := ""
		if len(r.TLS.PeerCertificates) > 0 {
			user = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fmt.Fprintf(w, "agent saw %s %s?%s from %s\n", r.Method, r.URL.Path, r.URL.RawQuery, user)
	})

	if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	mkPod := func(name, node string, containers ...string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false)}}
		for _, cn := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: cn, Image: "busybox:1.36"})
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("unscheduled", "", "c")
	mkPod("on-ghost", "ghost", "c")
	mkPod("two", "node-1", "a", "b")
	mkPod("one", "node-1", "only")

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	node, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("default").GetLogs("one", &corev1.PodLogOptions{}).Stream(ctx); !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "no agent address") {
		t.Fatalf("logs from a node without an address: want 503 naming the missing address, got %v", err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := c.CoreV1().Pods("default").GetLogs("unscheduled", &corev1.PodLogOptions{}).Stream(ctx); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "does not have a host assigned") {
		t.Fatalf("logs of an unscheduled pod: %v", err)
	}
	if _, err := c.CoreV1().Pods("default").GetLogs("on-ghost", &corev1.PodLogOptions{}).Stream(ctx); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("logs of a pod on a missing node: %v", err)
	}
	if _, err := c.CoreV1().Pods("default").GetLogs("two", &corev1.PodLogOptions{}).Stream(ctx); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "a container name must be specified") {
		t.Fatalf("logs of a two-container pod without a container: %v", err)
	}

	out, err := c.CoreV1().Pods("default").GetLogs("one", &corev1.PodLogOptions{TailLines: ptr.To[int64](5), Timestamps: true}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs through the proxy: %v", err)
	}
	if want := "agent saw GET /containerLogs/default/one/only?tailLines=5&timestamps=true from system:k1s-apiserver"; strings.TrimSpace(string(out)) != want {
		t.Fatalf("agent request:\n got %q\nwant %q", strings.TrimSpace(string(out)), want)
	}

	out, err = c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1/proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		t.Fatalf("nodes/proxy: %v", err)
	}
	if !strings.Contains(string(out), "GET /stats/summary") {
		t.Fatalf("nodes/proxy reached %q", out)
	}
}
