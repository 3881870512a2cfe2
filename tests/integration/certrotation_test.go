package integration

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/internal/pki"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// TestNodeCertificateRotation: a joined node's certificates, signed for
// ten minutes (--cluster-signing-duration), are renewed while it runs —
// here a second after each is issued, by the test's RenewAt, so several
// times in a few seconds — each by a CSR the node makes as itself, with
// a new key. The node's clients, made once before the first renewal, go
// on working throughout: requests never fail, and a watch of its own
// Node still delivers after the renewals. A renewal asked for by
// `k1s certificate rotate` happens at the next join, without a token.
func TestNodeCertificateRotation(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller",
		"certificatesigningrequest-approving-controller", "certificatesigningrequest-signing-controller")
	settings := server.DefaultControllerSettings()
	settings.ClusterSigningDuration = 10 * time.Minute
	cfg.Controllers = &settings
	s := framework.StartWith(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := s.Client(t)

	var token string
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(filepath.Join(s.DataDir, "server", "token"))
		token = strings.TrimSpace(string(b))
		return err == nil && token != "", nil
	}); err != nil {
		t.Fatal("no join token")
	}
	joinCfg := join.Config{Server: s.URL(), Token: token, NodeName: "rotor", NodeIPs: []net.IP{net.ParseIP("192.0.2.9")},
		Dir: t.TempDir(), Timeout: 30 * time.Second,
		RenewAt: func(_, notAfter time.Time) time.Time { return notAfter.Add(-10*time.Minute + time.Second) }}
	creds, err := join.Join(ctx, joinCfg)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	first := readCert(t, creds.Client.CertFile)
	if life := time.Until(first.NotAfter); life > 10*time.Minute || life < 9*time.Minute {
		t.Fatalf("client certificate valid for %s more, want the signing duration, 10m", life)
	}

	clientCert, err := join.NewClientCert(creds, nil, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	restCfg := clientCert.RESTConfig(s.URL())
	restCfg.QPS, restCfg.Burst = 1000, 1000
	node, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	// Registered with its address: the serving certificate's renewals are
	// approved for the node's own addresses.
	n, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rotor"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the node registering itself: %v", err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.9"}, {Type: corev1.NodeHostName, Address: "rotor"}}
	if _, err := node.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the node's status: %v", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(node, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "rotor").String()
	}))
	nodes := factory.Core().V1().Nodes()
	nodes.Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	rotator, err := join.NewRotator(joinCfg, creds, clientCert, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopRotator := context.WithCancel(ctx)
	rotated := make(chan struct{})
	go func() {
		defer close(rotated)
		_ = rotator.Run(rctx)
	}()
	defer func() { stopRotator(); <-rotated }()

	// The node works on, reading and writing, from two goroutines, while
	// its certificates are renewed under it.
	var mu sync.Mutex
	var failures []error
	requests := 0
	stopWork := make(chan struct{})
	var workers sync.WaitGroup
	for w := range 2 {
		workers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stopWork:
					return
				default:
				}
				_, err := node.CoreV1().Nodes().Get(ctx, "rotor", metav1.GetOptions{})
				if err == nil {
					patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"k1s.test/worker-%d":"%d"}}}`, w, i)
					_, err = node.CoreV1().Nodes().Patch(ctx, "rotor", types.MergePatchType, patch, metav1.PatchOptions{})
				}
				mu.Lock()
				requests += 2
				if err != nil {
					failures = append(failures, err)
				}
				mu.Unlock()
			}
		})
	}
	clientSerials, servingSerials := map[string]bool{}, map[string]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for len(clientSerials) < 6 || len(servingSerials) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("after 90s: %d client and %d serving certificates seen, want 6 and 4", len(clientSerials), len(servingSerials))
		}
		clientSerials[clientCert.Current().Leaf.SerialNumber.String()] = true
		if pair, err := tls.LoadX509KeyPair(creds.Serving.CertFile, creds.Serving.KeyFile); err == nil {
			servingSerials[pair.Leaf.SerialNumber.String()] = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stopWork)
	workers.Wait()
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed across the renewals, first: %v", len(failures), requests, failures[0])
	}
	t.Logf("%d requests across %d client and %d serving certificates", requests, len(clientSerials), len(servingSerials))

	// Stopped, the rotator leaves on disk what the clients present, with
	// a key of its own.
	stopRotator()
	<-rotated
	onDisk, err := tls.LoadX509KeyPair(creds.Client.CertFile, creds.Client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cur := clientCert.Current().Leaf; !onDisk.Leaf.Equal(cur) {
		t.Errorf("the clients present serial %s, the file holds %s", cur.SerialNumber, onDisk.Leaf.SerialNumber)
	}
	if onDisk.Leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(first.PublicKey) {
		t.Errorf("the client certificate was renewed with the first key")
	}
	// `k1s certificate rotate` on an agent: the next start renews both,
	// as the node, without a token.
	if err := os.WriteFile(filepath.Join(joinCfg.Dir, join.RenewFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	servingBefore := readCert(t, creds.Serving.CertFile)
	noToken := joinCfg
	noToken.Token = ""
	if _, err := join.Join(ctx, noToken); err != nil {
		t.Fatalf("join asked to renew: %v", err)
	}
	if readCert(t, creds.Client.CertFile).Equal(onDisk.Leaf) || readCert(t, creds.Serving.CertFile).Equal(servingBefore) {
		t.Errorf("join asked to renew kept a certificate")
	}
	if _, err := os.Stat(filepath.Join(joinCfg.Dir, join.RenewFile)); !os.IsNotExist(err) {
		t.Errorf("the renewal request is still there: %v", err)
	}
	serving := readCert(t, creds.Serving.CertFile)
	if err := serving.VerifyHostname("192.0.2.9"); err != nil {
		t.Errorf("renewed serving certificate: %v", err)
	}

	// Each renewal was the node's own request, approved as one.
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewals := 0
	for _, csr := range csrs.Items {
		if csr.Spec.Username != "system:node:rotor" || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
			continue
		}
		renewals++
		approved := false
		for _, c := range csr.Status.Conditions {
			approved = approved || c.Type == certificatesv1.CertificateApproved && strings.Contains(c.Message, "self")
		}
		if !approved {
			t.Errorf("renewal %s: conditions %+v", csr.Name, csr.Status.Conditions)
		}
	}
	if renewals < 3 {
		t.Errorf("%d client renewals by the node, want at least 3", renewals)
	}

	// The watch made before the renewals still delivers.
	if _, err := admin.CoreV1().Nodes().Patch(ctx, "rotor", types.MergePatchType, []byte(`{"metadata":{"labels":{"k1s.test/after":"renewals"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		n, err := nodes.Lister().Get("rotor")
		return err == nil && n.Labels["k1s.test/after"] == "renewals", nil
	}); err != nil {
		t.Errorf("the node's watch did not deliver after the renewals")
	}
}

// TestServerCertificateRenewal: the server renews its own leaf
// certificates while it runs — here a few seconds after each is issued
// (CertificateRenewBefore just short of a leaf's year) — from its CAs:
// new connections get the new serving certificate, the kubeconfigs carry
// the new client certificates, clients holding the old ones go on, and
// the controllers, in process, keep working.
func TestServerCertificateRenewal(t *testing.T) {
	cfg := framework.Config(t)
	cfg.CertificateRenewBefore = pki.LeafValidity - 3*time.Second
	s := framework.StartWith(t, cfg)
	ctx := context.Background()
	before := s.Client(t) // the admin certificate of the start, in memory
	tlsDir := filepath.Join(s.DataDir, "server", "tls")
	leaves := []string{"serving-kube-apiserver", "client-kube-apiserver", "client-admin", "client-controller", "client-scheduler", "client-auth-proxy", "etcd/server-client", "etcd/client"}
	cas := map[string]*x509.Certificate{}
	for _, ca := range pki.CANames {
		cas[ca] = readCert(t, filepath.Join(tlsDir, ca+".crt"))
	}
	seen := map[string]map[string]bool{}
	for _, l := range leaves {
		seen[l] = map[string]bool{readCert(t, filepath.Join(tlsDir, l+".crt")).SerialNumber.String(): true}
	}
	firstServing := readCert(t, filepath.Join(tlsDir, "serving-kube-apiserver.crt"))
	firstAdmin := readCert(t, filepath.Join(tlsDir, "client-admin.crt"))

	deadline := time.Now().Add(60 * time.Second)
	for renewed := false; !renewed; {
		if time.Now().After(deadline) {
			t.Fatalf("after 60s, certificates seen: %v", seen)
		}
		time.Sleep(200 * time.Millisecond)
		renewed = true
		for _, l := range leaves {
			c, err := os.ReadFile(filepath.Join(tlsDir, l+".crt"))
			if err != nil {
				t.Fatal(err)
			}
			if block, _ := pem.Decode(c); block != nil {
				if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
					seen[l][cert.SerialNumber.String()] = true
				}
			}
			renewed = renewed && len(seen[l]) >= 3
		}
	}
	for ca, c := range cas {
		if !readCert(t, filepath.Join(tlsDir, ca+".crt")).Equal(c) {
			t.Errorf("CA %s changed", ca)
		}
	}

	// A new connection gets a renewed serving certificate.
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the certificate is only read
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if served.Equal(firstServing) {
		t.Errorf("the apiserver still serves its first certificate")
	}

	// Clients of the old admin certificate and of the kubeconfig as it is
	// now both work; the controllers, in process, too: a ReplicaSet gets
	// its pods.
	if _, err := before.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("a client with the first admin certificate: %v", err)
	}
	now := s.Client(t)
	admin, err := clientcmd.LoadFromFile(filepath.Join(s.DataDir, "server", "cred", "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range admin.AuthInfos {
		block, _ := pem.Decode(ai.ClientCertificateData)
		if block == nil {
			t.Fatal("admin kubeconfig without a certificate")
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if c.Equal(firstAdmin) || c.CheckSignatureFrom(cas["client-ca"]) != nil {
			t.Errorf("the admin kubeconfig does not carry a renewed certificate: serial %s", c.SerialNumber)
		}
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "after-renewal", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "after-renewal"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "after-renewal"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if _, err := now.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pods, err := now.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=after-renewal"})
		return err == nil && len(pods.Items) == 2, nil
	}); err != nil {
		t.Errorf("the ReplicaSet controller made no pods after the renewals")
	}
}
