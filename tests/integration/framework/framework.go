// Package framework starts a k1s control plane (embedded etcd and the
// apiserver) inside the test process, on free loopback ports and a
// temporary data directory, and hands out clients for it.
package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/serviceaccount"
	"github.com/k1s/k1s/internal/freeport"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server"
)

// Server is a running control plane.
type Server struct {
	DataDir    string
	Kubeconfig string
	Port       int
	Config     server.Config

	cancel context.CancelFunc
	done   chan error
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Start runs a server on a new data directory and waits until it is ready.
// The server is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Config(t))
}

// StartAPI runs a server whose controller manager runs only what a
// namespace needs (its default service account, its root CA config map,
// its deletion): tests of the API itself, which read an object and then
// update it, are not raced by controllers writing to the same objects.
func StartAPI(t testing.TB) *Server {
	t.Helper()
	cfg := Config(t)
	cfg.ControllerManager = Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller")
	return StartWith(t, cfg)
}

// Config is the configuration Start uses: a new data directory, free
// loopback ports, every controller, no agent.
func Config(t testing.TB) server.Config {
	t.Helper()
	dir := t.TempDir()
	return server.Config{
		DataDir:          filepath.Join(dir, "data"),
		BindAddress:      "127.0.0.1",
		HTTPSPort:        FreePort(t),
		NodeIP:           "127.0.0.1",
		WriteKubeconfig:  filepath.Join(dir, "kubeconfig.yaml"),
		EtcdClientPort:   FreePort(t),
		EtcdPeerPort:     FreePort(t),
		AdvertiseAddress: "127.0.0.1",
		// The control plane only: the node agent and containerd are e2e's.
		DisableAgent: true,
	}
}

// StartWith runs a server with cfg (e.g. an existing data directory).
func StartWith(t testing.TB, cfg server.Config) *Server {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server config: %v", err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	out := &Server{DataDir: cfg.DataDir, Kubeconfig: cfg.WriteKubeconfig, Port: cfg.HTTPSPort, Config: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { out.done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-out.done:
		cancel()
		t.Fatalf("server stopped before ready: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		t.Fatalf("server not ready after 90s")
	}
	t.Cleanup(func() { out.Stop(t) })
	out.waitDefaultServiceAccount(t)
	return out
}

// waitDefaultServiceAccount waits, when the service-account controller
// runs, for default/default: until it exists the ServiceAccount admission
// plugin refuses pods there, as upstream's does.
func (s *Server) waitDefaultServiceAccount(t testing.TB) {
	t.Helper()
	cm := manager.DefaultConfig()
	if s.Config.ControllerManager != nil && len(s.Config.ControllerManager.Controllers) > 0 {
		cm.Controllers = s.Config.ControllerManager.Controllers
	}
	if !cm.Enabled(serviceaccount.Descriptor()) {
		return
	}
	c := s.Client(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(context.Background(), "default", metav1.GetOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("service account default/default not created within 60s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server and waits for it; safe to call twice.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("server stopped with error: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("server did not stop within 60s")
	}
}

// RESTConfig is an admin (system:masters) client configuration.
func (s *Server) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// Client is an admin clientset.
func (s *Server) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(s.RESTConfig(t))
}

// Dynamic is an admin dynamic client.
func (s *Server) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	return dynamic.NewForConfigOrDie(s.RESTConfig(t))
}

// UserConfig returns a client configuration that authenticates as user in
// groups, with a client certificate signed by the cluster's client CA.
func (s *Server) UserConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	tlsDir := filepath.Join(s.DataDir, "server", "tls")
	ca, err := pki.LoadCA(filepath.Join(tlsDir, "client-ca.crt"), filepath.Join(tlsDir, "client-ca.key"))
	if err != nil {
		t.Fatalf("client CA: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.Sign(key.Public(), pki.LeafSpec{CommonName: user, Organization: groups, Client: true})
	if err != nil {
		t.Fatalf("sign client certificate: %v", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	base := s.RESTConfig(t)
	cfg := rest.AnonymousClientConfig(base)
	cfg.TLSClientConfig.CertData = certPEM
	cfg.TLSClientConfig.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	return cfg
}

// Anonymous returns a client configuration with no credentials.
func (s *Server) Anonymous(t testing.TB) *rest.Config {
	t.Helper()
	return rest.AnonymousClientConfig(s.RESTConfig(t))
}

// URL is the apiserver's base URL.
func (s *Server) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", s.Port) }

// Controllers is the controller manager's default configuration (leader
// election, service-account credentials) running only names, in
// --controllers syntax.
func Controllers(names ...string) *manager.Config {
	cm := manager.DefaultConfig()
	cm.Controllers = names
	return &cm
}
