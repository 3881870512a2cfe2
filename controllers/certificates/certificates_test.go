package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/internal/pki"
)

func request(t *testing.T, cn string, org []string, dns []string, ips []net.IP) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: org}, DNSNames: dns, IPAddresses: ips,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func csr(name, signer, user string, groups []string, req []byte, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: req, SignerName: signer, Username: user, Groups: groups, Usages: usages},
	}
}

func approve(c *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue})
	return c
}

var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

func testCAs(t *testing.T) SignerConfig {
	t.Helper()
	cluster, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "tls"), Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return SignerConfig{
		ClientCA: pki.CertKey{CertFile: cluster.ClientCA.CertFile, KeyFile: cluster.ClientCA.KeyFile},
		ServerCA: pki.CertKey{CertFile: cluster.ServerCA.CertFile, KeyFile: cluster.ServerCA.KeyFile},
		Duration: time.Hour,
	}
}

func TestSigner(t *testing.T) {
	cfg := testCAs(t)
	good := approve(csr("node-client", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:abcdef", nil,
		request(t, "system:node:n1", []string{"system:nodes"}, nil, nil), clientUsages...))
	good.Spec.ExpirationSeconds = ptrInt32(900)
	pending := csr("pending", certificatesv1.KubeAPIServerClientKubeletSignerName, "u", nil,
		request(t, "system:node:n1", []string{"system:nodes"}, nil, nil), clientUsages...)
	wrongOrg := approve(csr("wrong-org", certificatesv1.KubeAPIServerClientKubeletSignerName, "u", nil,
		request(t, "system:node:n1", []string{"system:masters"}, nil, nil), clientUsages...))
	serving := approve(csr("serving", certificatesv1.KubeletServingSignerName, "system:node:n1", nil,
		request(t, "system:node:n1", []string{"system:nodes"}, []string{"n1"}, []net.IP{net.ParseIP("192.0.2.5")}),
		certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth))
	other := approve(csr("other-signer", "example.com/signer", "u", nil, request(t, "x", nil, nil, nil), clientUsages...))

	client := fake.NewClientset(good, pending, wrongOrg, serving, other)
	f := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(time.Now())
	s, err := NewSigner(cfg, client, f.Certificates().V1().CertificateSigningRequests(), clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), s.synced)
	for _, name := range []string{"node-client", "pending", "wrong-org", "serving", "other-signer"} {
		if err := s.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	get := func(name string) *certificatesv1.CertificateSigningRequest {
		c, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cert := parseCert(t, get("node-client").Status.Certificate)
	clientCA, _ := pki.LoadCA(cfg.ClientCA.CertFile, cfg.ClientCA.KeyFile)
	if err := cert.CheckSignatureFrom(clientCA.Cert); err != nil {
		t.Errorf("client certificate not signed by the client CA: %v", err)
	}
	if cert.Subject.CommonName != "system:node:n1" || len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("client certificate %+v", cert.Subject)
	}
	if life := cert.NotAfter.Sub(clk.Now()); life > 16*time.Minute || life < 14*time.Minute {
		t.Errorf("life %s, want the requested 15 minutes", life)
	}
	if len(get("pending").Status.Certificate) != 0 {
		t.Error("an unapproved request was signed")
	}
	wo := get("wrong-org")
	if len(wo.Status.Certificate) != 0 || !hasCondition(wo, certificatesv1.CertificateFailed) {
		t.Errorf("a request in the wrong group: %+v", wo.Status)
	}
	sc := parseCert(t, get("serving").Status.Certificate)
	serverCA, _ := pki.LoadCA(cfg.ServerCA.CertFile, cfg.ServerCA.KeyFile)
	if err := sc.CheckSignatureFrom(serverCA.Cert); err != nil || len(sc.IPAddresses) != 1 || sc.DNSNames[0] != "n1" {
		t.Errorf("serving certificate: %v %+v", err, sc)
	}
	if len(get("other-signer").Status.Certificate) != 0 {
		t.Error("another signer's request was signed")
	}
}

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatalf("no certificate in %q", p)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptrInt32(v int32) *int32 { return &v }

func TestApprover(t *testing.T) {
	node := func(name string, addrs ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, a := range addrs {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		return n
	}
	servingReq := func(node string, ips ...string) []byte {
		var parsed []net.IP
		for _, ip := range ips {
			parsed = append(parsed, net.ParseIP(ip))
		}
		return request(t, "system:node:"+node, []string{"system:nodes"}, []string{node}, parsed)
	}
	servingUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	for _, tc := range []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		allowed bool // what the SubjectAccessReview answers
		want    bool
		denied  bool
	}{
		{"bootstrap client request allowed", csr("c", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:abc", []string{"system:bootstrappers"},
			request(t, "system:node:new", []string{"system:nodes"}, nil, nil), clientUsages...), true, true, false},
		{"bootstrap client request for a registered node's name", csr("c", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:abc", []string{"system:bootstrappers"},
			request(t, "system:node:n1", []string{"system:nodes"}, nil, nil), clientUsages...), true, false, true},
		{"registered node renewing its client certificate", csr("c", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", []string{"system:nodes"},
			request(t, "system:node:n1", []string{"system:nodes"}, nil, nil), clientUsages...), true, true, false},
		{"bootstrap client request not allowed", csr("c", certificatesv1.KubeAPIServerClientKubeletSignerName, "someone", nil,
			request(t, "system:node:new", []string{"system:nodes"}, nil, nil), clientUsages...), false, false, false},
		{"not a kubelet client request", csr("c", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:abc", nil,
			request(t, "admin", []string{"system:masters"}, nil, nil), clientUsages...), true, false, false},
		{"node's own serving request", csr("c", certificatesv1.KubeletServingSignerName, "system:node:n1", []string{"system:nodes"},
			servingReq("n1", "192.0.2.1"), servingUsages...), false, true, false},
		{"serving request for another node", csr("c", certificatesv1.KubeletServingSignerName, "system:node:n2", []string{"system:nodes"},
			servingReq("n1", "192.0.2.1"), servingUsages...), false, false, false},
		{"serving request claiming another node's address", csr("c", certificatesv1.KubeletServingSignerName, "system:node:n3", []string{"system:nodes"},
			servingReq("n3", "192.0.2.2"), servingUsages...), false, false, false},
		{"first serving request of a node not registered yet", csr("c", certificatesv1.KubeletServingSignerName, "system:node:n3", []string{"system:nodes"},
			servingReq("n3", "192.0.2.3"), servingUsages...), false, true, false},
		{"serving request with a new address no other node has (the node's address changed)", csr("c", certificatesv1.KubeletServingSignerName, "system:node:n1", []string{"system:nodes"},
			servingReq("n1", "192.0.2.9"), servingUsages...), false, true, false},
		{"serving request with a DNS name not the node's", csr("c", certificatesv1.KubeletServingSignerName, "system:node:n1", []string{"system:nodes"},
			request(t, "system:node:n1", []string{"system:nodes"}, []string{"n1", "kubernetes.default"}, []net.IP{net.ParseIP("192.0.2.1")}), servingUsages...), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.csr, node("n1", "192.0.2.1"), node("n2", "192.0.2.2"))
			client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: tc.allowed}}, nil
			})
			f := informers.NewSharedInformerFactory(client, 0)
			a, err := NewApprover(client, f.Certificates().V1().CertificateSigningRequests(), f.Core().V1().Nodes(), clocktesting.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.Start(ctx.Done())
			cache.WaitForCacheSync(ctx.Done(), a.synced...)
			if err := a.sync(ctx, "c"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "c", metav1.GetOptions{})
			if approved(got) != tc.want || hasCondition(got, certificatesv1.CertificateDenied) != tc.denied {
				t.Errorf("approved = %v, denied = %v, want %v, %v (%+v)", approved(got), hasCondition(got, certificatesv1.CertificateDenied), tc.want, tc.denied, got.Status)
			}
		})
	}
}

func TestCleanerExpiry(t *testing.T) {
	now := time.Unix(1000, 0).Add(2 * time.Hour)
	issued := csr("a", "s", "u", nil, nil)
	issued.Status.Certificate = []byte("x")
	pending := csr("b", "s", "u", nil, nil)
	if !expired(issued, now) {
		t.Error("an issued request two hours old is kept")
	}
	if expired(pending, now) {
		t.Error("a pending request two hours old is deleted")
	}
	if !expired(pending, now.Add(23*time.Hour)) {
		t.Error("a pending request over a day old is kept")
	}
}
