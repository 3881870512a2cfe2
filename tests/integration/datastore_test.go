package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// TestExternalDatastore runs etcd on its own and points the server at it
// with --datastore-endpoint: the server starts no etcd of its own, and
// objects land in the external one (a second server on the same etcd sees
// them).
func TestExternalDatastore(t *testing.T) {
	dir := t.TempDir()
	certs, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "etcd-pki"), Hostname: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	clientPort := framework.FreePort(t)
	e, err := etcd.New(etcd.Config{
		DataDir:       filepath.Join(dir, "etcd"),
		ClientPort:    clientPort,
		PeerPort:      framework.FreePort(t),
		CertFile:      certs.EtcdServer.CertFile,
		KeyFile:       certs.EtcdServer.KeyFile,
		TrustedCAFile: certs.EtcdCA.CertFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-e.Ready():
	case err := <-done:
		t.Fatalf("external etcd: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("external etcd not ready")
	}

	cfgFor := func(name string) server.Config {
		sub := filepath.Join(dir, name)
		return server.Config{
			DataDir:           filepath.Join(sub, "data"),
			BindAddress:       "127.0.0.1",
			HTTPSPort:         framework.FreePort(t),
			NodeIP:            "127.0.0.1",
			WriteKubeconfig:   filepath.Join(sub, "kubeconfig.yaml"),
			DatastoreEndpoint: fmt.Sprintf("https://127.0.0.1:%d", clientPort),
			DatastoreCAFile:   certs.EtcdCA.CertFile,
			DatastoreCertFile: certs.EtcdClient.CertFile,
			DatastoreKeyFile:  certs.EtcdClient.KeyFile,
			// Unused with an external datastore: any value that would clash
			// if an embedded etcd started anyway.
			EtcdClientPort: clientPort,
			EtcdPeerPort:   clientPort,
			DisableAgent:   true,
		}
	}
	a := framework.StartWith(t, cfgFor("a"))
	if _, err := a.Client(t).CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"from": "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := framework.StartWith(t, cfgFor("b"))
	got, err := b.Client(t).CoreV1().ConfigMaps("default").Get(context.Background(), "shared", metav1.GetOptions{})
	if err != nil || got.Data["from"] != "a" {
		t.Fatalf("second server on the same datastore does not see the object: %v", err)
	}
}
